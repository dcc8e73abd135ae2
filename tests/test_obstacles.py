"""Operators a target can never compute are refused before the search (isel/obstacles.py)."""
from __future__ import annotations

import importlib
import inspect
import pathlib
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
