"""The last resort of the driver: a kernel one operator at a time (superopt.stages.operator_plan,
driver.compile_or_operators), each operator with the views it reads a kernel of its own."""
from __future__ import annotations

import numpy as np

from runtime_skeleton import budget
from runtime_skeleton.compile import CompileError, CompileOptions, compile_module, load_kernel, verify
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.npz_io import random_inputs
from runtime_skeleton.superopt import driver
from runtime_skeleton.superopt.driver import compile_staged
from runtime_skeleton.superopt.sequence import compile_plan
from runtime_skeleton.superopt.stages import operator_numbers, operator_plan

from generated.amx import TARGET as AMX
from tests.test_stages import run_plan

# a reduce read through a broadcast by a later operator: the reduce's part must write it
CHAIN = """HloModule chain
add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  a = f32[16,16]{1,0} parameter(0)
  b = f32[16,16]{1,0} parameter(1)
  c = f32[16]{0} parameter(2)
  n = f32[16,16]{1,0} negate(a)
  s = f32[16,16]{1,0} add(n, b)
  z = f32[] constant(0)
  r = f32[16]{0} reduce(s, z), dimensions={1}, to_apply=add_f32
  rb = f32[16,16]{1,0} broadcast(r), dimensions={0}
  cb = f32[16,16]{1,0} broadcast(c), dimensions={1}
  m = f32[16,16]{1,0} maximum(rb, cb)
  ROOT o = f32[16,16]{1,0} subtract(m, s)
}
"""


def test_each_operator_is_a_part_and_views_are_computed_where_read():
    comp = load_kernel(CHAIN).entry_computation
    assert operator_numbers(comp) == {"n": 1, "s": 2, "r": 3, "m": 4, "o": 5}  # no broadcast has a part
    plan = operator_plan(load_kernel(CHAIN))
    roots = [p.module.entry_computation.root for p in plan.parts]
    assert roots == ["n", "s", "r", "m", "o"]
    # r is read by m only through its broadcast: r's part writes it, m's part broadcasts it
    r_tensor = plan.parts[2].writes[0]
    assert r_tensor in plan.parts[3].reads
    assert any(i.opcode == "broadcast" for i in plan.parts[3].module.entry_computation.instructions)
    # s is read by two later parts: written once, read by both
    s_tensor = plan.parts[1].writes[0]
    assert s_tensor in plan.parts[2].reads and s_tensor in plan.parts[4].reads


def test_operators_in_sequence_are_the_kernel():
    module = load_kernel(CHAIN)
    inputs = random_inputs(module.parameter_types, 3)
    want = evaluate(module, inputs)
    got = run_plan(operator_plan(module), inputs)
    assert all(np.array_equal(w, g) for w, g in zip(want, got))


def test_a_kernel_of_one_operator_has_no_operator_plan():
    assert operator_plan(load_kernel("""HloModule one
ENTRY main {
  a = f32[16,16]{1,0} parameter(0)
  b = f32[16]{0} parameter(1)
  bb = f32[16,16]{1,0} broadcast(b), dimensions={1}
  ROOT s = f32[16,16]{1,0} add(a, bb)
}
""")) is None


def test_operators_compile_and_verify_on_amx():
    module = load_kernel(CHAIN)
    res = compile_plan(AMX, module, operator_plan(module), compile_staged,
                       CompileOptions(deterministic=True, patience=0.0), budget.after(120))
    assert res.part_kind == "operator" and len(res.parts) == 5
    assert verify(AMX, res, seeds=(0, 1)) == []


def test_the_driver_falls_back_to_operators(monkeypatch):
    """When the strategies of compile_staged find nothing for the whole kernel, its operators
    are compiled one at a time in the time kept for them, and the program is checked."""
    real = driver.compile_staged

    def nothing_for_the_whole(target, module, opts, deadline):  # noqa: ANN001, ANN202
        if operator_plan(module) is not None:
            raise CompileError("no program (test)")
        return real(target, module, opts, deadline)

    monkeypatch.setattr(driver, "compile_staged", nothing_for_the_whole)
    res = compile_module(AMX, load_kernel(CHAIN), CompileOptions(deterministic=True, timeout=120))
    assert res.part_kind == "operator"
    assert verify(AMX, res, seeds=(0,)) == []
