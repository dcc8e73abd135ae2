"""Reverses moved toward the inputs (ir.reverses): the kernel computes the same bits, and
every reverse that is left reads a value no operator carries it through."""
from __future__ import annotations

import numpy as np
import pytest

from runtime_skeleton.compile import load_kernel
from runtime_skeleton.fuzz.gen import random_kernel
from runtime_skeleton.ir.reverses import sunk
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.npz_io import random_inputs

KERNEL = """HloModule k
add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  a = f32[4,8]{1,0} parameter(0)
  b = f32[8,6]{1,0} parameter(1)
  v = f32[6]{0} parameter(2)
  d = f32[4,6]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  w = f32[4,6]{1,0} broadcast(v), dimensions={1}
  n = f32[4,6]{1,0} negate(d)
  s = f32[4,6]{1,0} add(n, w)
  lo = f32[] constant(-1)
  hi = f32[] constant(1)
  c = f32[4,6]{1,0} clamp(lo, s, hi)
  t = f32[6,4]{0,1} transpose(c), dimensions={1,0}
  r = f32[6,4]{0,1} reverse(t), dimensions={0,1}
  zero = f32[] constant(0)
  m = f32[6]{0} reduce(r, zero), dimensions={1}, to_apply=add_f32
  ROOT out = f32[6]{0} reverse(m), dimensions={0}
}
"""


def reverses(module):
    comp = module.entry_computation
    return [(comp[i.operands[0]].opcode, tuple(i.attrs["dimensions"])) for i in comp.instructions
            if i.opcode == "reverse"]


def same_bits(a, b, seeds=(0, 1)) -> None:
    for seed in seeds:
        x = random_inputs(a.parameter_types, seed)
        for p, q in zip(evaluate(a, x), evaluate(b, x)):
            assert np.asarray(p).tobytes() == np.asarray(q).tobytes()


def test_reverses_reach_the_inputs_through_dot_broadcast_transpose_and_reduce():
    module = load_kernel(KERNEL)
    moved = sunk(module)
    # out's reverse goes through the reduce (to r's kept dimension 0), cancels r's reverse of
    # dimension 0; r's reverse of dimension 1 (the reduced one, kept: the float sum runs in
    # the same order) goes through the transpose to c's rows, the clamp, add and negate to
    # the dot's rows, which are a's rows; the broadcast's rows are all alike
    assert reverses(moved) == [("parameter", (0,))]
    same_bits(module, moved)


def test_a_reverse_twice_is_its_operand_and_a_kernel_without_one_is_kept():
    twice = KERNEL.replace("reverse(t), dimensions={0,1}", "reverse(t), dimensions={1}")
    module = load_kernel(twice)
    same_bits(module, sunk(module))
    plain = load_kernel(KERNEL.replace("reverse(m), dimensions={0}", "negate(m)")
                        .replace("reverse(t), dimensions={0,1}", "copy(t)"))
    assert sunk(plain) is plain


@pytest.mark.parametrize("target", ["amx", "gemmini"])
def test_random_kernels_compute_the_same_bits_with_reverses_at_their_inputs(target):
    checked = 0
    for seed in range(40):
        module = load_kernel(random_kernel(target, 5000 + seed, max_nodes=60))
        if not reverses(module):
            continue
        moved = sunk(module)
        assert all(op == "parameter" or op == "constant" for op, _ in reverses(moved)) or \
            any(op in ("reshape", "slice", "concatenate", "pad") for op, _ in reverses(moved))
        same_bits(module, moved, seeds=(seed,))
        checked += 1
    assert checked >= 10


# ---------------------------------------------------------------------------
# bits independent of where a value lies


_PLACED = """HloModule placed
add_f32 {{
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}}
ENTRY main {{
  x = f32[{m},{k}] parameter(0)
  y = f32[{k},{n}] parameter(1)
  {body}
}}"""


@pytest.mark.parametrize("m,k,n", [(16, 16, 64), (7, 33, 5), (64, 64, 64)])
def test_a_float_dot_rounds_each_row_alike_wherever_it_lies(m, k, n):
    # BLAS rounds a row by its place in its blocks (AMD's AVX2 sgemm did): the reference folds
    dot = "dot(rx, y), lhs_contracting_dims={1}, rhs_contracting_dims={0}"
    moved = load_kernel(_PLACED.format(m=m, k=k, n=n, body=f"rx = f32[{m},{k}] reverse(x), dimensions={{0}}\n"
                                                          f"  ROOT d = f32[{m},{n}] {dot}"))
    plain = load_kernel(_PLACED.format(m=m, k=k, n=n, body=f"d = f32[{m},{n}] {dot.replace('rx', 'x')}\n"
                                                          f"  ROOT r = f32[{m},{n}] reverse(d), dimensions={{0}}"))
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)]
    assert evaluate(moved, args)[0].tobytes() == evaluate(plain, args)[0].tobytes()
    want = args[0][::-1, 0, None] * args[1][0]
    for i in range(1, k):
        want = want + args[0][::-1, i, None] * args[1][i]
    assert evaluate(moved, args)[0].tobytes() == want.tobytes()


def test_a_float_sum_of_a_reversed_view_is_the_sum_of_the_same_values():
    body = ("rx = f32[16,64] reverse(x), dimensions={1}\n  z = f32[] constant(0)\n"
            "  ROOT s = f32[64] reduce(rx, z), dimensions={0}, to_apply=add_f32")
    module = load_kernel(_PLACED.format(m=16, k=64, n=1, body=body).replace("  y = f32[64,1] parameter(1)\n", ""))
    x = np.random.default_rng(1).standard_normal((16, 64)).astype(np.float32)
    plain = np.add.reduce(np.ascontiguousarray(x[:, ::-1].T), axis=-1)
    assert evaluate(module, [x])[0].tobytes() == plain.tobytes()
