"""No-op views removed before compilation (ir/simplify.py)."""
from __future__ import annotations

import numpy as np

from runtime_skeleton.hlo import parse_module
from runtime_skeleton.ir.simplify import simplified
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.npz_io import random_inputs

# JAX's broadcast_to(sum(x, axis=1, keepdims=True), x.shape)
ROW_SUMS = """HloModule k
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] add(a, b)
}
ENTRY e {
  x = s32[4,6]{1,0} parameter(0)
  z = s32[] constant(0)
  r = s32[4]{0} reduce(x, z), dimensions={1}, to_apply=add
  k = s32[4,1]{1,0} reshape(r)
  n = s32[4,1]{1,0} broadcast(k), dimensions={0,1}
  v = s32[4]{0} reshape(n)
  ROOT b = s32[4,6]{1,0} broadcast(v), dimensions={0}
}
"""


def _same_values(a, b) -> None:  # noqa: ANN001
    inputs = random_inputs([p.type for p in a.entry_computation.parameters], 3)
    for x, y in zip(evaluate(a, inputs), evaluate(b, inputs)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_the_views_jax_writes_around_a_keepdims_sum_are_removed():
    module = parse_module(ROW_SUMS, "<k>")
    out = simplified(module)
    comp = out.entry_computation
    assert comp["b"].operands == ("r",) and {i.name for i in comp.instructions} == {"x", "z", "r", "b"}
    _same_values(module, out)


def test_a_root_that_does_nothing_stays_as_a_copy_and_real_views_stay():
    text = """HloModule k
ENTRY e {
  x = f32[2,3]{1,0} parameter(0)
  y = f32[3,2]{1,0} parameter(1)
  a = f32[6]{0} reshape(x)
  b = f32[3,2]{1,0} reshape(a)
  t = f32[3,2]{1,0} transpose(x), dimensions={1,0}
  s = f32[3,2]{1,0} add(b, t)
  w = f32[3,2]{1,0} add(s, y)
  ROOT r = f32[3,2]{1,0} broadcast(w), dimensions={0,1}
}
"""
    module = parse_module(text, "<k>")
    out = simplified(module)
    comp = out.entry_computation
    assert comp["b"].operands == ("x",) and "a" not in {i.name for i in comp.instructions}
    assert comp["r"].opcode == "copy" and comp["t"].opcode == "transpose"
    _same_values(module, out)
    unchanged = parse_module(text.replace("ROOT r = f32[3,2]{1,0} broadcast(w), dimensions={0,1}",
                                          "ROOT r = f32[3,2]{1,0} negate(w)").replace(
        "  a = f32[6]{0} reshape(x)\n  b = f32[3,2]{1,0} reshape(a)\n", "  b = f32[3,2]{1,0} reshape(x)\n"), "<k>")
    assert simplified(unchanged) is unchanged


def test_row_sums_broadcast_along_the_columns_are_one_matmul_by_ones_on_gemmini():
    """broadcast_to(sum(x, axis=1, keepdims=True)) of a widened s8[16,16], as JAX writes it:
    the views removed, broadcast-sums-dot makes it x . ones, one compute_ws (before: no
    program; the accumulator stores no column contiguously)."""
    import importlib

    from runtime_skeleton.compile import compile_hlo, verify

    text = ROW_SUMS.replace("x = s32[4,6]{1,0} parameter(0)", "p = s8[16,16]{1,0} parameter(0)\n"
                            "  x = s32[16,16]{1,0} convert(p)").replace("[4,6]", "[16,16]").replace(
        "[4]", "[16]").replace("[4,1]", "[16,1]")
    gemmini = importlib.import_module("generated.gemmini").TARGET
    res = compile_hlo(gemmini, text, timeout=20, deterministic=True)
    assert [i.name for i in res.program.instructions].count("compute_ws") == 1
    assert verify(gemmini, res) == []


IDENTITIES = """HloModule k
ENTRY e {
  x = T[256,256]{1,0} parameter(0)
  y = T[256,256]{1,0} parameter(1)
  a = T[256,256]{1,0} maximum(x, x)
  n = T[256,256]{1,0} minimum(a, y)
  b = T[256,256]{1,0} maximum(n, a)
  m = T[256,256]{1,0} maximum(y, b)
  c = T[256,256]{1,0} maximum(m, b)
  d = T[256,256]{1,0} negate(c)
  f = T[256,256]{1,0} negate(d)
  ROOT r = (T[256,256]{1,0}, T[256,256]{1,0}) tuple(f, b)
}
"""


def test_idempotence_absorption_and_double_negation_hold_for_every_pair_of_bytes():
    """Each identity removed is checked on every pair of s8 values (x down the rows, y
    along the columns): the simplified kernel computes the same bits."""
    module = parse_module(IDENTITIES.replace("T[", "s8["), "<k>")
    out = simplified(module)
    comp = out.entry_computation
    assert comp["r"].operands == ("m", "x") and {i.opcode for i in comp.instructions} == {
        "parameter", "maximum", "tuple"}
    grid = np.arange(-128, 128, dtype=np.int8)
    x, y = np.repeat(grid[:, None], 256, 1), np.repeat(grid[None, :], 256, 0)
    for a, b in zip(evaluate(module, [x, y]), evaluate(out, [x, y])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_absorption_is_not_applied_to_floats():
    """max(x, min(x, y)) is not x for floats: a NaN y makes it NaN (XLA's maximum and minimum
    propagate NaN)."""
    module = parse_module(IDENTITIES.replace("T[", "f32["), "<k>")
    comp = simplified(module).entry_computation
    assert comp["r"].operands == ("m", "b") and comp["b"].operands == ("n", "x")


CSE = """HloModule k
ENTRY e {
  p = s8[4,4]{1,0} parameter(0)
  q = s8[4,4]{1,0} parameter(1)
  x = s32[4,4]{1,0} convert(p)
  y = s32[4,4]{1,0} convert(q)
  a = s32[4,4]{1,0} maximum(x, y)
  b = s32[4,4]{1,0} maximum(y, x)
  ROOT r = s32[4,4]{1,0} subtract(a, b)
}
"""


def test_equal_values_are_computed_once_and_their_difference_is_zero():
    """max(x, y) and max(y, x) of integers are one value (XLA's CSE with commutative operands
    in order), so their difference is the constant 0; not for floats (max(-0, +0))."""
    module = parse_module(CSE, "<k>")
    out = simplified(module).entry_computation
    root = out.root_instruction
    assert root.opcode == "broadcast" and out[root.operands[0]].attrs["literal"].array.item() == 0
    _same_values(module, simplified(module))
    floats = CSE.replace("s32", "f32").replace("s8[4,4]{1,0} parameter", "f32[4,4]{1,0} parameter")
    comp = simplified(parse_module(floats, "<k>")).entry_computation
    assert comp.root_instruction.opcode == "subtract" and comp["a"].operands != comp["b"].operands
