"""Call inlining (ir.inline): the inlined kernel computes what the kernel with calls does."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from runtime_skeleton.compile import load_kernel
from runtime_skeleton.ir.inline import inline_calls
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.npz_io import random_inputs

ROOT = pathlib.Path(__file__).resolve().parent.parent
WITH_CALLS = sorted(p.stem for p in (ROOT / "examples/kernels").glob("*.hlo") if " call(" in p.read_text())

NESTED = """HloModule nested

inner {
  a = f32[4]{0} parameter(0)
  z = f32[] constant(0)
  zz = f32[4]{0} broadcast(z), dimensions={}
  ROOT m = f32[4]{0} maximum(a, zz)
}

outer {
  x = f32[4]{0} parameter(0)
  y = f32[4]{0} parameter(1)
  s = f32[4]{0} subtract(x, y)
  ROOT r = f32[4]{0} call(s), to_apply=inner
}

ENTRY e {
  p = f32[4]{0} parameter(0)
  q = f32[4]{0} parameter(1)
  c1 = f32[4]{0} call(p, q), to_apply=outer
  c2 = f32[4]{0} call(q, p), to_apply=outer
  ROOT t = f32[4]{0} add(c1, c2)
}
"""


def _same(module, seed):
    x = random_inputs(module.parameter_types, seed)
    for got, want in zip(evaluate(inline_calls(module), x), evaluate(module, x)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", WITH_CALLS)
def test_inlined_kernels_compute_the_kernel(name):
    module = load_kernel(ROOT / f"examples/kernels/{name}.hlo")
    inlined = inline_calls(module)
    assert all(i.opcode != "call" for i in inlined.entry_computation.instructions)
    assert inlined.entry_computation.root == module.entry_computation.root
    _same(module, 0)


def test_nested_calls_inline_with_fresh_names():
    module = load_kernel(NESTED)
    body = inline_calls(module).entry_computation.instructions
    names = [i.name for i in body]
    assert len(names) == len(set(names)) and "call" not in {i.opcode for i in body}
    assert {"c1", "c2", "c1.s", "c2.s"} <= set(names)
    _same(module, 1)


def test_a_kernel_without_calls_is_unchanged():
    module = load_kernel(ROOT / "examples/kernels/gemm_i8.hlo")
    assert inline_calls(module) is module
