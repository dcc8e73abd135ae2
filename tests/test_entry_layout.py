"""The tiled kernel's bytes in the forms loads and stores read and write
(runtime_skeleton.isel.entry_layout): equal to the kernel bit for bit on random kernels, and
phase 1 maps a kernel of column tiles from them at once."""
from __future__ import annotations

import pytest

from runtime_skeleton.fuzz.gen import random_kernel
from runtime_skeleton.hlo import parse_module
from runtime_skeleton.ir.types import TensorType
from runtime_skeleton.isel import bflat
from runtime_skeleton.isel.convert import module_to_terms
from runtime_skeleton.isel.entry_layout import stored, windowed
from runtime_skeleton.isel.phase1 import InstructionSelector, Limits, target_facts
from runtime_skeleton.isel.pretile import pretile
from runtime_skeleton.isel.rule_check import check_equivalent, subterms
from runtime_skeleton.isel.terms import Term
from tests.test_isel import target


def _on_bytes(text: str):
    """The kernel's terms over its inputs' bytes (parameters u8[n], as phase 1 sees them)."""
    m = parse_module(text, "<k>")
    args = [bflat.unflatten(Term("parameter", bflat.flat_type(t), (), {"parameter_number": i}), t)
            for i, t in enumerate(m.parameter_types)]
    return module_to_terms(m, args=args)


COLUMN_TILES_ADD = """HloModule cols_add
ENTRY main {
  a = s32[16,32]{1,0} parameter(0)
  b = s32[16,32]{1,0} parameter(1)
  ROOT d = s32[16,32]{1,0} add(a, b)
}
"""


# int8 column tiles stored as bytes (the lanes' reverse stays reverse operators on Gemmini, in
# blocks of 16 bytes); before, stored() concatenated their s8 rows with the u8 bytes kept between
BYTE_COLUMN_TILES = """HloModule byte_cols
ENTRY main {
  a = s8[32]{0} parameter(0)
  b = s8[32,32]{1,0} broadcast(a), dimensions={1}
  ROOT r = s8[32,32]{1,0} reverse(b), dimensions={1}
}
"""


@pytest.mark.parametrize("tname,text", [("gemmini", COLUMN_TILES_ADD), ("gemmini", BYTE_COLUMN_TILES)] +
                         [(t, random_kernel(t, s, max_nodes=30)) for t in ("gemmini", "amx") for s in range(6)])
def test_windows_and_stores_compute_the_kernel_bit_for_bit(tname, text):
    facts = target_facts(target(tname))
    roots = _on_bytes(text)
    cut = pretile(roots, facts.tiles, facts.dots, facts.ops, narrowest=facts.narrowest_stores)
    if cut is None:
        return  # one tile: nothing to cut
    win = windowed(cut)
    for whole, tiles, w in zip(roots, cut, win):
        check_equivalent(tiles, w, exact=True)
        t = TensorType(whole.type.dtype, whole.type.shape)
        s = stored(w, t)
        if s is not None:  # undefined bytes are filled at random: the stores must write every byte
            check_equivalent(bflat.flatten(whole, t), s, exact=True)


def test_the_column_tiles_enter_as_windows_and_stores():
    roots = _on_bytes(COLUMN_TILES_ADD)
    facts = target_facts(target("gemmini"))
    win = windowed(pretile(roots, facts.tiles, facts.dots, facts.ops))
    assert not [s for s in subterms(win[0]) if s.op == "slice" and s.args[0].op == "bitcast-convert"]
    s = stored(win[0], roots[0].type)
    assert s is not None and sum(1 for x in subterms(s) if x.op == "pad") >= 2  # two strided stores


def test_phase1_maps_column_tiles_from_the_first_rounds():
    sel = InstructionSelector(target("gemmini"), parse_module(COLUMN_TILES_ADD, "<k>"), Limits(timeout=30))
    g = sel.first()
    assert g.num_instructions == 6 and sel.stats.saturation.nodes < 2000
