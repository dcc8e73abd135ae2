"""Narrow integer arithmetic computed in s32 (ir/widen.py)."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

from runtime_skeleton.compile import compile_hlo, verify
from runtime_skeleton.hlo import parse_module
from runtime_skeleton.ir.types import TensorType
from runtime_skeleton.ir.widen import NARROW_INTS, ORDERED, WRAPPING, narrow_pairs, reverses_widened, widened
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.npz_io import random_inputs
from runtime_skeleton.isel.phase1 import target_facts

ALL = narrow_pairs(set())


def _chain(dt: str) -> str:
    """Every operator, wrapping results feeding ordered ones and the reverse."""
    t = f"{dt}[3,5]{{1,0}}"
    return f"""HloModule k
ENTRY e {{
  a = {t} parameter(0)
  b = {t} parameter(1)
  s = {t} add(a, b)
  d = {t} subtract(s, b)
  m = {t} multiply(d, a)
  n = {t} negate(m)
  lo = {dt}[] constant(3)
  hi = {dt}[] constant(100)
  c = {t} clamp(lo, n, hi)
  x = {t} maximum(n, s)
  y = {t} minimum(x, c)
  z = {t} add(y, m)
  ROOT r = ({t}, {t}) tuple(z, y)
}}
"""


@pytest.mark.parametrize("dt", sorted(NARROW_INTS))
def test_widened_chain_computes_the_same_values(dt):
    module = parse_module(_chain(dt), "<k>")
    wide = widened(module, ALL)
    comp = wide.entry_computation
    computing = [i for i in comp.instructions if i.opcode in WRAPPING | ORDERED]
    assert computing and all(i.type.dtype.name == "s32" for i in computing)
    assert comp.root == module.entry_computation.root
    for seed in range(4):
        inputs = random_inputs([p.type for p in module.entry_computation.parameters], seed)
        for got, want in zip(evaluate(wide, inputs), evaluate(module, inputs)):
            assert np.array_equal(np.asarray(got), np.asarray(want)), (dt, seed)


def test_only_the_pairs_asked_for_are_widened():
    module = parse_module(_chain("u8"), "<k>")
    assert widened(module, frozenset()) is module
    some = widened(module, frozenset({("add", "u8")}))
    wide = {i.opcode for i in some.entry_computation.instructions
            if isinstance(i.type, TensorType) and i.type.dtype.name == "s32"}
    assert wide == {"add", "convert"}


def test_amx_computes_no_byte_arithmetic_and_gemmini_none_at_all():
    amx = importlib.import_module("generated.amx").TARGET
    narrow = target_facts(amx).narrow_arithmetic
    assert ("add", "u8") in narrow and ("maximum", "s8") in narrow
    assert narrow == ALL
    assert target_facts(importlib.import_module("generated.gemmini").TARGET).narrow_arithmetic == ALL


def test_a_byte_add_compiles_on_amx_through_dwords():
    """vpmovzxbd, vpaddd, then the low bytes: vpandd with 255 and vpmovusdb (before: no
    pii graph, AMX has no arithmetic on bytes)."""
    amx = importlib.import_module("generated.amx").TARGET
    hlo = ("HloModule k\nENTRY e {\n  a = u8[1,16]{1,0} parameter(0)\n  b = u8[1,16]{1,0} parameter(1)\n"
           "  ROOT s = u8[1,16]{1,0} add(a, b)\n}\n")
    res = compile_hlo(amx, hlo, timeout=30, deterministic=True)
    names = [i.name for i in res.program.flat()]
    assert {"vpmovzxbd", "vpaddd", "vpandd", "vpmovusdb"} <= set(names), names
    assert verify(amx, res) == []


def test_a_byte_clamp_of_several_rows_is_a_loop_of_register_rows_on_amx():
    """A u8 clamp of [16,32] widened computes s32 rows in zmm (one register row an
    instruction), not 16-row tiles (AMX's tile dot writes 16 rows of s32, but no tile
    instruction clamps): the preferred cut is rows, each row cut to register rows, and a
    first program comes in a fraction of the time (before: none in 10 s)."""
    from runtime_skeleton.superopt.strip import identity
    from runtime_skeleton.superopt.tiled import _options, _option_text, _preferred

    amx = importlib.import_module("generated.amx").TARGET
    hlo = ("HloModule k\nENTRY e {\n  a = u8[16,32]{1,0} parameter(0)\n  lo = u8[] constant(2)\n"
           "  hi = u8[] constant(16)\n  ROOT c = u8[16,32]{1,0} clamp(lo, a, hi)\n}\n")
    module = widened(parse_module(hlo), target_facts(amx).narrow_arithmetic)
    cuts = _preferred(amx, module, _options(amx, identity(module), 0)[0])
    assert _option_text(cuts[0]) == "tiles of 1 along dimension 0"
    res = compile_hlo(amx, hlo, timeout=10, deterministic=True, patience=0.0)
    assert res.tiling is not None and res.tiling.tile.result_type.shape == (1, 16)
    assert verify(amx, res) == []


@pytest.mark.parametrize("body", [
    "  ROOT m = u8[16,16]{1,0} add(b, b)",  # widened to s32
    "  r = u8[16,16]{1,0} reverse(b), dimensions={0}\n  ROOT m = u8[16,16]{1,0} add(r, r)",  # and its reverse sunk
])
def test_a_parameter_the_result_never_reads_keeps_its_number(body):
    """The passes that rebuild a kernel before the search (widening, reverses moved to the
    inputs, simplification) keep every parameter, read or not: a kernel whose first input is
    unused compiles and verifies on AMX (before: an internal error in strip-mining, which
    found parameter 1 of a kernel that had one)."""
    text = f"HloModule k\nENTRY e {{\n  a = u8[16,16]{{1,0}} parameter(0)\n  b = u8[16,16]{{1,0}} parameter(1)\n{body}\n}}\n"
    amx = importlib.import_module("generated.amx").TARGET
    res = compile_hlo(amx, text, timeout=20, deterministic=True)
    assert verify(amx, res) == []


def _reverses(dt: str) -> str:
    t = f"{dt}[4,16]{{1,0}}"
    return f"""HloModule k
ENTRY e {{
  a = {t} parameter(0)
  lanes = {t} reverse(a), dimensions={{1}}
  rows = {t} reverse(lanes), dimensions={{0}}
  ROOT both = {t} reverse(rows), dimensions={{0,1}}
}}
"""


@pytest.mark.parametrize("dt", sorted(NARROW_INTS))
def test_lane_reverses_widened_compute_the_same_values(dt):
    module = parse_module(_reverses(dt), "<k>")
    wide = reverses_widened(module, frozenset({dt}))
    comp = wide.entry_computation
    revs = {i.attrs["dimensions"]: i.type.dtype.name for i in comp.instructions if i.opcode == "reverse"}
    assert revs == {(1,): "s32", (0,): dt, (0, 1): "s32"}  # a reverse of rows moves whole rows: kept
    assert comp.root == "both" and reverses_widened(module, frozenset({"s32"})) is module
    for seed in range(3):
        inputs = random_inputs([p.type for p in module.entry_computation.parameters], seed)
        assert np.array_equal(np.asarray(evaluate(wide, inputs)[0]), np.asarray(evaluate(module, inputs)[0]))


def test_byte_lane_reverses_are_widened_where_stores_write_words_not_bytes():
    """AMX stores at least a word (vmovups_store of one float, tilestored of 4 bytes a row);
    Gemmini writes rows of 16 lanes even of s32, so word moves do not help it (its byte
    reverses are int8 matmuls, ``axioms.reverse-as-byte-dot``)."""
    amx, gemmini = (importlib.import_module(f"generated.{t}").TARGET for t in ("amx", "gemmini"))
    assert target_facts(amx).widened_reverses == {"s8", "u8"}
    assert target_facts(gemmini).widened_reverses == frozenset()


def test_a_byte_lane_reverse_compiles_on_amx_as_word_moves():
    """reverse(u8[1,16]): the bytes widened by vpmovzxbd, a loop of 16 one-word moves, the
    low bytes stored by vpmovusdb (before: no pii graph within 10 s; no store writes one byte)."""
    amx = importlib.import_module("generated.amx").TARGET
    hlo = ("HloModule k\nENTRY e {\n  a = u8[1,16]{1,0} parameter(0)\n"
           "  ROOT r = u8[1,16]{1,0} reverse(a), dimensions={1}\n}\n")
    res = compile_hlo(amx, hlo, timeout=10, deterministic=True, patience=0.0)
    assert {"vpmovzxbd", "vpmovusdb"} <= {i.name for i in res.program.flat()}
    assert verify(amx, res) == []
