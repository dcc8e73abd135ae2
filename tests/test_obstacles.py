"""Operators a target can never compute are refused before the search (isel/obstacles.py)."""
from __future__ import annotations

import importlib
import inspect
import pathlib
import re
import time
import types

import pytest

from runtime_skeleton.compile import CompileError, compile_hlo
from runtime_skeleton.hlo import parse_module
from runtime_skeleton.ir.ops import ALL_OPS
from runtime_skeleton.isel import axioms, bflat, convert, identity, isa_rules, layout_axioms, phase1, rules
from runtime_skeleton.isel.axioms import NAMED_OPS
from runtime_skeleton.isel.obstacles import obstacles, unreachable_ops

ROOT = pathlib.Path(__file__).resolve().parent.parent


def target(name):
    return importlib.import_module(f"generated.{name}").TARGET


def _strings(code: types.CodeType) -> set[str]:
    out: set[str] = set()
    for c in code.co_consts:
        if isinstance(c, str):
            out.add(c)
        elif isinstance(c, types.CodeType):
            out |= _strings(c)
        elif isinstance(c, (tuple, frozenset)):
            out |= {x for x in c if isinstance(x, str)}
    return out


def test_named_ops_lists_every_operator_the_rules_name():
    """The refusal is sound only if no rule matches or builds an operator outside NAMED_OPS
    by name (the rules that treat operators generically rebuild the same operator)."""
    named: set[str] = set()
    for m in (axioms, layout_axioms, phase1, identity, isa_rules, convert, rules, bflat):
        named |= _strings(compile(inspect.getsource(m), m.__file__, "exec")) & ALL_OPS
    plumbing = {"parameter", "tuple", "get-tuple-element", "call"}
    assert named - plumbing <= NAMED_OPS, f"add {sorted(named - plumbing - NAMED_OPS)} to axioms.NAMED_OPS"


def test_unreachable_ops_leave_out_what_instructions_compute():
    amx, gemmini = unreachable_ops(target("amx")), unreachable_ops(target("gemmini"))
    assert "exponential" in amx and "convolution" in amx
    assert "sqrt" not in amx and "sqrt" in gemmini  # AMX has vsqrtps
    assert not (amx | gemmini) & NAMED_OPS


def test_a_kernel_needing_an_operator_no_instruction_computes_is_refused_at_once():
    t0 = time.perf_counter()
    with pytest.raises(CompileError) as err:
        compile_hlo(target("amx"), ROOT / "examples/kernels/softmax_f32.hlo", timeout=60)
    assert time.perf_counter() - t0 < 10
    assert err.value.loc is not None and err.value.loc.line == 27
    assert "amx cannot run this kernel: its result depends on exponential 'exp.1'" in err.value.message


def _kernel(body: str, params: str = "x = f32[4,16] parameter(0)") -> object:
    return parse_module(f"HloModule k\nENTRY e {{\n  {params}\n{body}\n}}\n", "<k>")


def test_a_value_the_result_does_not_need_is_no_obstacle():
    dropped = _kernel("""  y = f32[4,16] parameter(1)
  ex = f32[4,16] exponential(x)
  c = f32[8,16] concatenate(ex, y), dimensions={0}
  ROOT s = f32[4,16] slice(c), slice={[4:8], [0:16]}""", "x = f32[4,16] parameter(0)")
    assert obstacles(target("amx"), dropped) == []


def test_a_constant_is_no_obstacle_but_an_input_dependent_value_is():
    folded = _kernel("""  k = f32[4,16] constant({...})
  ex = f32[4,16] exponential(k)
  ROOT a = f32[4,16] add(x, ex)""".replace("{...}", "{" + ",".join(["{" + ",".join(["1"] * 16) + "}"] * 4) + "}"))
    assert obstacles(target("amx"), folded) == []
    needed = _kernel("""  ex = f32[4,16] exponential(x)
  ROOT a = f32[4,16] add(x, ex)""")
    [o] = obstacles(target("amx"), needed)
    assert (o.opcode, o.name, o.loc.line) == ("exponential", "ex", 4)


def _f32_kernel(body: str) -> str:
    return f"""HloModule f
ENTRY main {{
  x = f32[16,16]{{1,0}} parameter(0)
{body}
}}
"""


def test_float_arithmetic_on_a_target_without_floats_is_refused_at_once():
    """No Gemmini instruction writes f32 values it computes (its scaled mvout computes f32
    inside, on the way to int8): an f32 result is refused before the search, naming the
    node and the type (before: phase 1's node limit after the timeout)."""
    from runtime_skeleton.isel.obstacles import float_obstacles

    hlo = _f32_kernel("  y = f32[16,16]{1,0} multiply(x, x)\n  ROOT z = f32[16,16]{1,0} add(y, x)")
    found = float_obstacles(target("gemmini"), parse_module(hlo, "k.hlo"))
    assert [(o.opcode, o.name) for o in found] == [("multiply", "y")]
    t0 = time.perf_counter()
    with pytest.raises(CompileError, match=r"multiply 'y'.*line 4.*computes new f32 values.*gemmini can only move") as err:
        compile_hlo(target("gemmini"), hlo, timeout=60)
    assert err.value.loc is not None and err.value.loc.line == 4
    assert time.perf_counter() - t0 < 10
    assert float_obstacles(target("amx"), parse_module(hlo, "k.hlo")) == []  # AMX computes f32


def test_written_types_are_what_instructions_compute_and_write():
    from runtime_skeleton.isel.obstacles import written_types

    assert written_types(target("gemmini")) == {"s8", "s32"}  # f32 only inside mvout_scale
    assert {"f32", "bf16", "s32", "u8"} <= written_types(target("amx"))


def test_float_arithmetic_ending_in_integers_is_no_obstacle_where_an_instruction_does_it():
    """An f32 scale rounded to int8 puts out s8 values: Gemmini's scaled mvout computes
    f32 inside, so the f32 multiply is no obstacle there; a bf16 one is (no bf16 anywhere)."""
    from runtime_skeleton.isel.obstacles import float_obstacles

    def kernel(ft):
        return (f"HloModule q\nENTRY main {{\n  x = {ft}[16,16]{{1,0}} parameter(0)\n"
                f"  f = {ft}[16,16]{{1,0}} multiply(x, x)\n  ROOT q = s8[16,16]{{1,0}} convert(f)\n}}\n")

    assert float_obstacles(target("gemmini"), parse_module(kernel("f32"), "k.hlo")) == []
    assert [o.opcode for o in float_obstacles(target("gemmini"), parse_module(kernel("bf16"), "k.hlo"))] == ["multiply"]


@pytest.mark.parametrize("body", ["  n = f32[16,16]{1,0} negate(x)\n  ROOT m = f32[16,16]{1,0} negate(n)",
                                  "  ROOT t = f32[16,16]{0,1} transpose(x), dimensions={1,0}",
                                  "  z = f32[] constant(0)\n  b = f32[16,16]{1,0} broadcast(z), dimensions={}\n"
                                  "  ROOT m = f32[16,16]{1,0} maximum(x, b)"])
def test_float_values_only_moved_are_no_obstacle(body):
    """Arithmetic that cancels out puts out the input's values; a transpose moves them: the
    rules may reach a program of moves, so neither is refused. A ReLU computes new values
    (zeros where x was negative are values of the constant, the rest x's) and is not
    refused either: every output value is an input's or a constant's."""
    from runtime_skeleton.isel.obstacles import float_obstacles

    assert float_obstacles(target("gemmini"), parse_module(_f32_kernel(body), "k.hlo")) == []



def test_a_target_without_a_store_refuses_a_computed_result_at_once(tmp_path):
    from generator.cli import main as actgen

    isa = (ROOT / "examples/tutorial/tmu.isa").read_text()
    cut = isa[:isa.index("instruction st(")]  # the stores are the last instructions
    (tmp_path / "nostore.isa").write_text(cut.replace("target tmu", "target nostore", 1))
    assert actgen([str(tmp_path / "nostore.isa"), "-o", str(tmp_path / "nostore")]) == 0
    spec = importlib.util.spec_from_file_location("nostore_target", tmp_path / "nostore" / "target.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    kernel = (ROOT / "examples/tutorial/matmul_bias_relu.hlo").read_text()
    t0 = time.perf_counter()
    with pytest.raises(CompileError, match="no nostore instruction writes HBM"):
        compile_hlo(mod.TARGET, kernel, timeout=60)
    assert time.perf_counter() - t0 < 2
    copy = "HloModule m\nENTRY e {\n  ROOT a = s8[8,8]{1,0} parameter(0)\n}\n"  # a view of its input: no store needed
    assert compile_hlo(mod.TARGET, copy, timeout=20).program.executed() == 0


def test_only_the_constant_operand_rules_take_a_product_away():
    """product_obstacles rests on this: every rule rooted at a multiply, divide, dot,
    minimum or maximum, or naming one, keeps what PRODUCTS says it may become in its
    result, but those that need a constant operand or an operand equal to the result."""
    from runtime_skeleton.isel.obstacles import CONSTANT_OPERAND_RULES, PRODUCTS

    removing = {r.name for r in axioms.AXIOMS for op, kept in PRODUCTS.items()
                if (op in r.roots or op in _strings(r.apply.__code__)) and not r.produces & kept}
    assert removing == CONSTANT_OPERAND_RULES


def _s32_kernel(body: str) -> object:
    return _kernel(body, "x = s32[16,16] parameter(0)\n  y = s32[16,16] parameter(1)")


def _refuses(tgt, body: str, opcode: str, says: str, allowed: tuple[str, ...] = ()) -> None:
    """``body`` (over s32 x, y) is refused with its node ``m`` named and ``says`` in the
    message; each of ``allowed`` is not refused."""
    from runtime_skeleton.isel.obstacles import kernel_obstacles, refusal

    found = kernel_obstacles(tgt, _s32_kernel(body))
    assert [(o.opcode, o.name) for o in found] == [(opcode, "m")]
    assert says in refusal(tgt, found)
    for ok in allowed:
        assert _but_wide(kernel_obstacles(tgt, _s32_kernel(ok))) == [], ok


def _but_wide(found: list) -> list:  # noqa: ANN001
    """The obstacles but an output too wide for the instructions computing it (the ReLU of
    an s32 input is that on Gemmini, whose ReLU narrows to int8: test_a_relu_of_wide_values...)."""
    return [o for o in found if not o.wide_result]


def _refused_at_once(tgt, dtype: str, op: str, says: str) -> None:
    """``op`` of two dtype[32,16] inputs compiles to a located refusal within a second."""
    t = f"{dtype}[32,16]{{1,0}}"
    hlo = f"HloModule m\nENTRY e {{\n  x = {t} parameter(0)\n  y = {t} parameter(1)\n  ROOT m = {t} {op}(x, y)\n}}\n"
    t0 = time.perf_counter()
    with pytest.raises(CompileError, match=re.escape(f"{op} 'm' ({t}, line 5)") + ".*" + re.escape(says)):
        compile_hlo(tgt, hlo, timeout=20)
    assert time.perf_counter() - t0 < 1


def test_a_product_of_varying_operands_is_refused_where_no_instruction_multiplies():
    """qkv computes dots but no element-wise multiply, and no rule turns a product of
    two varying tensors into anything else: refused at once, with the node."""
    from runtime_skeleton.isel.obstacles import kernel_obstacles, refusal

    qkv = target("qkv")
    found = kernel_obstacles(qkv, _s32_kernel("  ROOT m = s32[16,16] multiply(x, y)"))
    assert [(o.opcode, o.name, o.product) for o in found] == [("multiply", "m", True)]
    assert "whose operands both vary with the inputs; no qkv instruction computes multiply" in refusal(qkv, found)
    # a constant operand, or one computed from the inputs that is constant (x - x), may be
    # taken away by the rules; a product the result does not need is no obstacle either
    for body in ("  two = s32[] constant(2)\n  t = s32[16,16] broadcast(two), dimensions={}\n"
                 "  ROOT m = s32[16,16] multiply(x, t)",
                 "  z = s32[16,16] subtract(x, x)\n  ROOT m = s32[16,16] multiply(z, y)",
                 "  m = s32[16,16] multiply(x, y)\n  ROOT s = s32[16,16] subtract(m, m)"):
        assert kernel_obstacles(qkv, _s32_kernel(body)) == [], body
    # the targets with an instruction that multiplies are left to the search
    assert kernel_obstacles(target("amx"), _s32_kernel("  ROOT m = s32[16,16] multiply(x, y)")) == []


def test_a_maximum_of_varying_operands_is_refused_where_only_a_relu_computes_one():
    """Gemmini's only maximum is its ReLU's, against the constant 0 (mvout_relu): a
    maximum or minimum of two varying tensors is refused at once, named; a ReLU, a
    maximum whose value is one of its operands' and AMX's vmaxps are left alone."""
    from runtime_skeleton.isel.obstacles import binary_ops, kernel_obstacles

    gemmini, amx = target("gemmini"), target("amx")
    assert "maximum" not in binary_ops(phase1.default_rules(gemmini)[1])
    assert {"maximum", "minimum"} <= binary_ops(phase1.default_rules(amx)[1])
    _refuses(gemmini, "  ROOT m = s32[16,16] minimum(x, y)", "minimum",
             "no gemmini instruction computes minimum of two such operands",
             ("  z = s32[] constant(0)\n  b = s32[16,16] broadcast(z), dimensions={}\n  ROOT m = s32[16,16] maximum(x, b)",
              "  n = s32[16,16] minimum(x, y)\n  ROOT m = s32[16,16] maximum(x, n)",
              "  ROOT m = s32[16,16] maximum(x, x)"))
    assert kernel_obstacles(amx, _s32_kernel("  ROOT m = s32[16,16] maximum(x, y)")) == []
    _refused_at_once(gemmini, "s8", "maximum", "computes maximum of two such operands")


def test_only_the_bound_rules_touch_a_maximum_minimum_or_clamp():
    """bound_obstacles rests on this: every rule rooted at a maximum, minimum or clamp, or
    building one, is listed in BOUND_RULES, each read to keep a bound's value or to use a
    type's extremes; a new such rule must be read and added."""
    from runtime_skeleton.isel.obstacles import BOUND_RULES

    ordered = {"maximum", "minimum", "clamp"}
    touching = {r.name for r in axioms.AXIOMS if r.roots & ordered or r.produces & ordered}
    assert touching == BOUND_RULES


def _clip(lo: int, hi: int, x: str = "x") -> str:
    return (f"  lo = s32[] constant({lo})\n  hi = s32[] constant({hi})\n"
            f"  ROOT m = s32[16,16] clamp(lo, {x}, hi)")


def test_a_clip_at_a_bound_no_instruction_clips_at_is_refused():
    """Gemmini clips only at -128, 0 and 127 (its mvouts): jnp.clip(x, -7, 0) of int32
    values is refused at once, named, with the bound; a clip at Gemmini's own bounds, one
    whose bound never binds (the values of a widened u8 are never below -7), and a maximum
    subsumed by a later one are not; nor is any clip on AMX, whose vpmaxsd takes two varying
    operands."""
    from runtime_skeleton.isel.obstacles import instruction_bounds, kernel_obstacles, refusal

    gemmini, amx = target("gemmini"), target("amx")
    lower, upper = instruction_bounds(gemmini)
    assert {-128, 0} <= lower and 127 in upper and -7 not in lower and 4 not in upper
    found = kernel_obstacles(gemmini, _s32_kernel(_clip(-7, 0)))
    assert [(o.opcode, o.name, o.bound) for o in found] == [("clamp", "m", -7)]
    assert "which clips at -7; no gemmini instruction clips at that bound" in refusal(gemmini, found)
    widened = "  w = s32[16,16] convert(u)\n" + _clip(-7, 127, "w")
    assert kernel_obstacles(gemmini, _kernel(widened, "u = u8[16,16] parameter(0)")) == []
    for body in (_clip(-128, 127),
                 "  a = s32[] constant(-7)\n  b = s32[16,16] broadcast(a), dimensions={}\n"
                 "  z = s32[] constant(0)\n  c = s32[16,16] broadcast(z), dimensions={}\n"
                 "  n = s32[16,16] maximum(x, b)\n  ROOT m = s32[16,16] maximum(n, c)"):
        assert _but_wide(kernel_obstacles(gemmini, _s32_kernel(body))) == [], body
    minimum = "  a = s32[] constant(4)\n  b = s32[16,16] broadcast(a), dimensions={}\n  ROOT m = s32[16,16] minimum(b, x)"
    assert [o.bound for o in kernel_obstacles(gemmini, _s32_kernel(minimum))] == [4]
    assert kernel_obstacles(amx, _s32_kernel(_clip(-7, 0))) == []


RELU = """HloModule k
ENTRY e {
  a = s8[16,16]{1,0} parameter(0)
  b = s8[16,16]{1,0} parameter(1)
  d = s32[16,16]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = s32[] constant(0)
  zb = s32[16,16]{1,0} broadcast(z), dimensions={}
  ROOT r = s32[16,16]{1,0} maximum(d, zb)
}
"""


def test_a_relu_of_wide_values_is_refused_where_the_only_relu_narrows():
    """Issue 37's example: Gemmini's ReLU is on its way from the accumulator to int8
    (mvout_relu), so the ReLU of an s32 matmul, the kernel's output, is refused within a
    second, named; the ReLU of widened int8 values (which fit) is not, nor a ReLU that a
    narrowing convert follows (mvout_relu itself), nor any on AMX (vpmaxsd writes s32)."""
    from runtime_skeleton.isel.obstacles import clip_widths, kernel_obstacles

    gemmini, amx = target("gemmini"), target("amx")
    assert clip_widths(phase1.default_rules(gemmini)[1]) == {("s32", "s8")}
    assert ("s32",) in clip_widths(phase1.default_rules(amx)[1])
    t0 = time.perf_counter()
    with pytest.raises(CompileError, match=r"maximum 'r' \(s32\[16,16\]\{1,0\}, line 8\), the kernel's output, "
                                           r"whose values fit no integer type a gemmini instruction computing maximum"):
        compile_hlo(gemmini, RELU, timeout=20)
    assert time.perf_counter() - t0 < 1
    widened = RELU.replace("d = s32[16,16]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                           "d = s32[16,16]{1,0} convert(a)")
    narrowed = RELU.replace("->", "").replace("ROOT r = s32[16,16]{1,0} maximum(d, zb)",
                                              "r = s32[16,16]{1,0} maximum(d, zb)\n"
                                              "  lo = s32[] constant(-128)\n  hi = s32[] constant(127)\n"
                                              "  c = s32[16,16]{1,0} clamp(lo, r, hi)\n"
                                              "  ROOT n = s8[16,16]{1,0} convert(c)")
    for ok in (widened, narrowed):
        assert kernel_obstacles(gemmini, parse_module(ok, "<k>")) == [], ok
    assert kernel_obstacles(amx, parse_module(RELU, "<k>")) == []


def test_only_cancelling_and_constant_rules_take_a_negation_or_product_away():
    """width_obstacles rests on this: a rule at a negate, subtract, multiply or dot keeps an
    operator that reads the same operand (READERS), but negate-negate (the guard skips a
    negation of a negation) and those that need constant operands."""
    from runtime_skeleton.isel.obstacles import CONSTANT_OPERAND_RULES, READERS

    removing = {r.name for r in axioms.AXIOMS for op, kept in READERS.items()
                if (op in r.roots or op in _strings(r.apply.__code__)) and not r.produces & kept}
    assert removing <= CONSTANT_OPERAND_RULES | {"negate-negate"}, removing


def test_a_negation_of_values_no_instruction_reads_is_refused():
    """Gemmini negates and multiplies only in its array, which reads int8: the negation of
    an s32 input is refused at once; that of a widened int8 input is not (its values fit),
    nor is a double negation, nor anything on AMX, whose vpmulld reads s32."""
    from runtime_skeleton.isel.obstacles import kernel_obstacles

    gemmini = target("gemmini")
    _refuses(gemmini, "  ROOT m = s32[16,16] negate(x)", "negate",
             "fit no integer type a gemmini instruction reads for negate",
             ("  n = s32[16,16] negate(x)\n  ROOT m = s32[16,16] negate(n)",))
    fits = _kernel("  w = s32[16,16] convert(x)\n  ROOT n = s32[16,16] negate(w)", "x = s8[16,16] parameter(0)")
    assert kernel_obstacles(gemmini, fits) == []
    assert kernel_obstacles(target("amx"), _s32_kernel("  ROOT n = s32[16,16] negate(x)")) == []
    _refused_at_once(gemmini, "s32", "subtract", "reads for subtract")
