"""Value ranges of integer values (ir/ranges.py) and what simplify does with them."""
from __future__ import annotations

import random

import numpy as np
import pytest

from runtime_skeleton.hlo import parse_module
from runtime_skeleton.ir.ranges import value_ranges
from runtime_skeleton.ir.simplify import simplified
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.npz_io import random_inputs

ADD = "add {\n  a = s32[] parameter(0)\n  b = s32[] parameter(1)\n  ROOT c = s32[] add(a, b)\n}\n"


def _random_kernel(seed: int) -> str:
    """A random DAG of integer operators over s8 and s32 inputs: wrapping and exact
    arithmetic, clamps and maxima against constants, narrowing converts, sums and dots."""
    rng = random.Random(seed)
    lines, vals = [], []

    def new(text: str) -> str:
        name = f"v{len(lines)}"
        lines.append(f"  {name} = {text}")
        return name

    for i in range(3):
        if rng.random() < 0.6:
            p = new(f"s8[4,4]{{1,0}} parameter({i})")
            vals.append(new(f"s32[4,4]{{1,0}} convert({p})"))
        else:
            vals.append(new(f"s32[4,4]{{1,0}} parameter({i})"))
    for _ in range(rng.randint(3, 12)):
        a, b = rng.choice(vals), rng.choice(vals)
        op = rng.choice(["add", "subtract", "negate", "maximum", "minimum", "multiply", "clampc", "maxc", "wrap",
                         "sum", "dot"])
        t = "s32[4,4]{1,0}"
        if op in ("add", "subtract", "maximum", "minimum", "multiply"):
            vals.append(new(f"{t} {op}({a}, {b})"))
        elif op == "negate":
            vals.append(new(f"{t} negate({a})"))
        elif op in ("clampc", "maxc"):
            lo, hi = sorted(rng.sample(range(-10, 11), 2))
            c_lo = new(f"s32[] constant({lo})")
            if op == "clampc":
                c_hi = new(f"s32[] constant({hi})")
                vals.append(new(f"{t} clamp({c_lo}, {a}, {c_hi})"))
            else:
                bl = new(f"{t} broadcast({c_lo}), dimensions={{}}")
                vals.append(new(f"{t} {rng.choice(['maximum', 'minimum'])}({a}, {bl})"))
        elif op == "wrap":  # XLA's truncating convert, then back
            n = new(f"s8[4,4]{{1,0}} convert({a})")
            vals.append(new(f"{t} convert({n})"))
        elif op == "sum":
            z = new("s32[] constant(0)")
            r = new(f"s32[4]{{0}} reduce({a}, {z}), dimensions={{1}}, to_apply=add")
            vals.append(new(f"{t} broadcast({r}), dimensions={{0}}"))
        else:
            vals.append(new(f"{t} dot({a}, {b}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"))
    body = "\n".join(lines[:-1] + ["  ROOT" + lines[-1][1:]])
    return f"HloModule r{seed}\n{ADD}ENTRY e {{\n{body}\n}}\n"


def _extreme_inputs(module, seed: int) -> list:  # noqa: ANN001
    """Random inputs with each type's extremes mixed in."""
    xs = random_inputs([p.type for p in module.entry_computation.parameters], seed)
    rng = np.random.default_rng(seed)
    out = []
    for x in xs:
        info = np.iinfo(x.dtype)
        pick = rng.random(x.shape)
        x = np.where(pick < 0.2, info.min, np.where(pick > 0.8, info.max, x)).astype(x.dtype)
        out.append(x)
    return out


@pytest.mark.parametrize("seed", range(60))
def test_every_value_lies_in_its_range(seed):
    module = parse_module(_random_kernel(seed), "<r>")
    ranges = value_ranges(module)
    comp = module.entry_computation
    for inst in comp.instructions:
        if inst.name not in ranges:
            continue
        lo, hi = ranges[inst.name]
        sub = module.with_entry([i for i in comp.instructions], inst.name)
        for s in range(3):
            got = np.asarray(evaluate(sub, _extreme_inputs(module, s))[0]).astype(np.int64)
            assert lo <= got.min() and got.max() <= hi, (inst.name, (lo, hi), got.min(), got.max())


@pytest.mark.parametrize("seed", range(60))
def test_simplified_kernels_compute_the_same_values(seed):
    module = parse_module(_random_kernel(seed), "<r>")
    out = simplified(module)
    for s in range(4):
        xs = _extreme_inputs(module, s)
        np.testing.assert_array_equal(np.asarray(evaluate(module, xs)[0]), np.asarray(evaluate(out, xs)[0]))


def test_the_analysis_removes_something_in_most_random_kernels():
    """The soundness test above is not vacuous: the pass changes some of its kernels (9 of 60)."""
    changed = sum(simplified(m := parse_module(_random_kernel(s), "<r>")) is not m for s in range(60))
    assert changed >= 5


CLIPS = """HloModule k
ENTRY e {
  p = s8[4,4]{1,0} parameter(0)
  x = s32[4,4]{1,0} convert(p)
  one = s32[] constant(1)
  five = s32[] constant(5)
  m5 = s32[] constant(-5)
  m3 = s32[] constant(-3)
  c1 = s32[4,4]{1,0} clamp(one, x, five)
  c2 = s32[4,4]{1,0} clamp(m5, c1, m3)
  ROOT r = s32[4,4]{1,0} add(c2, x)
}
"""


def test_a_clip_to_one_number_is_that_constant():
    out = simplified(parse_module(CLIPS, "<k>"))
    comp = out.entry_computation
    c2 = comp[comp["r"].operands[0]]
    assert c2.opcode == "broadcast" and comp[c2.operands[0]].attrs["literal"].array.item() == -3
    assert not any(i.opcode == "clamp" for i in comp.instructions)


REQUANT = """HloModule k
ENTRY e {
  p = s8[4,4]{1,0} parameter(0)
  q = s8[4,4]{1,0} parameter(1)
  x = s32[4,4]{1,0} convert(p)
  d = s32[4,4]{1,0} subtract(x, x)
  lo = s32[] constant(-128)
  hi = s32[] constant(127)
  bl = s32[4,4]{1,0} broadcast(lo), dimensions={}
  bh = s32[4,4]{1,0} broadcast(hi), dimensions={}
  m = s32[4,4]{1,0} maximum(bl, x)
  c = s32[4,4]{1,0} minimum(bh, m)
  n = s8[4,4]{1,0} convert(c)
  y = s32[4,4]{1,0} convert(q)
  z = s32[4,4]{1,0} maximum(x, bl)
  u = s32[4,4]{1,0} add(z, d)
  ROOT r = (s8[4,4]{1,0}, s32[4,4]{1,0}) tuple(n, u)
}
"""


def test_a_clip_before_a_narrowing_convert_stays_and_others_go():
    out = simplified(parse_module(REQUANT, "<k>"))
    comp = out.entry_computation
    assert comp["n"].operands == ("c",) and comp["c"].opcode == "minimum" and comp["m"].opcode == "maximum"
    u = comp["u"]
    assert u.operands[0] == "x"  # max(x, -128) of a widened s8 is x
    assert comp[u.operands[1]].opcode == "broadcast"  # x - x is the constant 0
    xs = _extreme_inputs(out, 0)
    for a, b in zip(evaluate(parse_module(REQUANT, "<k>"), xs), evaluate(out, xs)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


ORDER = """HloModule k
ENTRY e {
  p = s8[4,4]{1,0} parameter(0)
  q = s8[4,4]{1,0} parameter(1)
  x = s32[4,4]{1,0} convert(p)
  y = s32[4,4]{1,0} convert(q)
  three = s32[] constant(3)
  seven = s32[] constant(7)
  c = s32[4,4]{1,0} clamp(three, y, seven)
  s = s32[4,4]{1,0} add(x, c)
  ROOT r = s32[4,4]{1,0} minimum(s, x)
}
"""


def test_a_sum_with_a_nonnegative_value_that_does_not_wrap_is_at_least_the_value():
    out = simplified(parse_module(ORDER, "<k>"))
    assert out.entry_computation.root_instruction.operands == ("x",)  # min(x + c, x) = x, kept as a copy
    wraps = ORDER.replace("s8[4,4]{1,0} parameter(0)", "s32[4,4]{1,0} parameter(0)").replace(
        "x = s32[4,4]{1,0} convert(p)", "x = s32[4,4]{1,0} copy(p)")
    assert simplified(parse_module(wraps, "<k>")).entry_computation.root_instruction.opcode == "minimum"


REDUCED_REVERSE = """HloModule k
add {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT c = s32[] add(a, b)
}
ENTRY e {
  p = s8[4,6]{1,0} parameter(0)
  x = s32[4,6]{1,0} convert(p)
  v = s32[4,6]{1,0} reverse(x), dimensions={DIMS}
  z = s32[] constant(0)
  ROOT r = s32[4]{0} reduce(v, z), dimensions={1}, to_apply=add
}
"""


@pytest.mark.parametrize("dims, gone", [("1", True), ("0", False), ("0,1", False)])
def test_an_integer_sum_along_reversed_dimensions_reads_what_is_reversed(dims, gone):
    text = REDUCED_REVERSE.replace("DIMS", dims)
    module = parse_module(text, "<k>")
    out = simplified(module)
    assert (out.entry_computation["r"].operands[0] == "x") == gone
    xs = _extreme_inputs(module, 1)
    np.testing.assert_array_equal(np.asarray(evaluate(module, xs)[0]), np.asarray(evaluate(out, xs)[0]))
    floats = text.replace("s32", "f32").replace("s8[4,6]{1,0} parameter(0)", "f32[4,6]{1,0} parameter(0)")
    assert simplified(parse_module(floats, "<k>")).entry_computation["r"].operands[0] == "v"  # rounding order
