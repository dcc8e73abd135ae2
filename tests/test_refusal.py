"""A compilation that finds no program says why as data too (``CompileError.refusal``), and
fuzz counts refusals by those fields."""
import pathlib

import pytest

from generated.amx import TARGET as AMX
from generated.gemmini import TARGET as GEMMINI
from runtime_skeleton.compile import CompileError, CompileOptions, compile_hlo
from runtime_skeleton.fuzz.run import UNSUPPORTED as FUZZ_UNSUPPORTED, classify
from runtime_skeleton.refusal import ALLOCATION, EMPTY, NO_PII_GRAPH, UNSUPPORTED, Refusal

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _refused(target, text, **options):
    with pytest.raises(CompileError) as err:
        compile_hlo(target, text, CompileOptions(deterministic=True, **options))
    assert err.value.refusal is not None, err.value.message
    return err.value


def test_an_operator_no_instruction_computes_is_named_with_its_node():
    err = _refused(AMX, ROOT / "examples/kernels/softmax_f32.hlo", timeout=60)
    r = err.refusal
    assert r.kind == UNSUPPORTED and "exponential" in r.what and r.node and not r.limited
    assert r.category.startswith("unsupported: ") and "exponential" in r.category


def test_a_value_without_elements_is_named():
    err = _refused(GEMMINI, """HloModule e
ENTRY main {
  a = s32[0,16]{1,0} parameter(0)
  ROOT n = s32[0,16]{1,0} negate(a)
}
""", timeout=10)
    assert err.refusal.kind == EMPTY and err.refusal.node


def test_no_pii_graph_names_the_operators_the_buffer_and_whether_time_ran_out():
    # an s32 minimum with 127: Gemmini's accumulator adds and its array multiplies, and its
    # only clamp is on the way to int8 (of two varying operands, or at a bound none of its
    # instructions clips at, such as 5, it is refused before the search)
    err = _refused(GEMMINI, """HloModule m
ENTRY main {
  a = s32[16,16]{1,0} parameter(0)
  top = s32[] constant(127)
  b = s32[16,16]{1,0} broadcast(top), dimensions={}
  ROOT m = s32[16,16]{1,0} minimum(a, b)
}
""", timeout=2, tiling=False)
    r = err.refusal
    assert r.kind == NO_PII_GRAPH and r.where and r.node.startswith(("s32", "u8"))
    assert r.what and r.category == f"no pii graph: {'/'.join(r.what[:3])} in {r.where}"
    assert err.message.startswith("no pii graph for gemmini: ")


def test_the_categories_are_short_and_without_numbers():
    assert Refusal(ALLOCATION, ("CSP4",), "acc").category == "allocation: CSP4 acc"
    assert Refusal(NO_PII_GRAPH).category == "no pii graph: node bound"
    assert Refusal(NO_PII_GRAPH, ("concatenate", "reshape"), "HBM").category == \
        "no pii graph: concatenate/reshape in HBM"


def test_fuzz_counts_a_refusal_by_its_fields_not_its_text():
    err = CompileError("some text fuzz's patterns do not know", refusal=Refusal(ALLOCATION, ("CSP2",), ""))
    assert classify(err) == (FUZZ_UNSUPPORTED, "allocation: CSP2")
    text = "no pii graph for x: every output can be produced, but each choice is cyclic or exceeds the node bound"
    assert classify(CompileError(text)) == (FUZZ_UNSUPPORTED, "no pii graph: node bound")  # no fields: the text
