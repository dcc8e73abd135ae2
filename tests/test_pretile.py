"""Tiling to instruction size before saturation (runtime_skeleton.isel.pretile): the tiled
kernel computes exactly what the kernel does, on random kernels of every fuzzing operator
and on hand-made ones, and phase 1 maps a multi-tile kernel from its tiles."""
from __future__ import annotations

import pathlib

import pytest

from runtime_skeleton.fuzz.gen import random_kernel
from runtime_skeleton.hlo import parse_module
from runtime_skeleton.isel.convert import module_to_terms
from runtime_skeleton.isel.phase1 import InstructionSelector, Limits, target_facts
from runtime_skeleton.isel.pretile import pretile
from runtime_skeleton.isel.rule_check import check_equivalent, subterms
from tests.test_isel import target

ROOT = pathlib.Path(__file__).resolve().parent.parent


def tiled(tname: str, text: str, exact: bool = False):
    facts = target_facts(target(tname))
    roots = module_to_terms(parse_module(text, "<k>"))
    return roots, pretile(roots, facts.tiles, facts.dots, facts.ops, exact, facts.narrowest_stores)


@pytest.mark.parametrize("tname", ["gemmini", "amx"])
@pytest.mark.parametrize("seed", range(12))
def test_a_tiled_random_kernel_computes_the_kernel(tname, seed):
    roots, out = tiled(tname, random_kernel(tname, seed, max_nodes=40))  # every operator, every dtype
    if out is None:
        return  # nothing larger than one instruction's tile
    for a, b in zip(roots, out):
        check_equivalent(a, b, exact=not a.type.dtype.is_float)


TWO_TILES = """HloModule pm
ENTRY main {
  a = s8[32,16]{1,0} parameter(0)
  b = s8[32,16]{1,0} parameter(1)
  ca = s32[32,16]{1,0} convert(a)
  cb = s32[32,16]{1,0} convert(b)
  s1 = s32[32,16]{1,0} add(cb, ca)
  na = s32[32,16]{1,0} negate(ca)
  d = s32[32,16]{1,0} subtract(na, cb)
  ROOT r = s32[32,16]{1,0} add(s1, d)
}
"""


def test_an_elementwise_kernel_of_two_tiles_is_cut_into_its_tiles():
    roots, out = tiled("gemmini", TWO_TILES)
    assert out is not None
    adds = [s for s in subterms(out[0]) if s.op == "add"]
    assert adds and all(s.type.shape == (16, 16) for s in adds)  # Gemmini adds s32[16, 16] tiles
    check_equivalent(roots[0], out[0], exact=True)


def test_an_integer_dot_is_cut_to_the_instruction_and_its_contraction_summed():
    text = """HloModule d
ENTRY main {
  a = s8[32,48]{1,0} parameter(0)
  b = s8[48,32]{1,0} parameter(1)
  ROOT d = s32[32,32]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    roots, out = tiled("gemmini", text)
    dots = [s for s in subterms(out[0]) if s.op == "dot"]
    assert {(d.args[0].type.shape, d.args[1].type.shape) for d in dots} == {((16, 16), (16, 16))}
    assert len(dots) == 4 * 3  # 2 x 2 tiles of the result, 3 steps of the contraction each
    check_equivalent(roots[0], out[0], exact=True)


def test_views_follow_the_tiles_of_what_reads_them():
    text = """HloModule v
ENTRY main {
  a = s32[32]{0} parameter(0)
  b = s32[32,32]{1,0} parameter(1)
  x = s32[32,32]{1,0} broadcast(a), dimensions={1}
  r = s32[32,32]{1,0} reverse(b), dimensions={0}
  t = s32[32,32]{1,0} transpose(r), dimensions={1,0}
  s = s32[32,32]{1,0} add(x, t)
  c = s32[64,32]{1,0} concatenate(s, b), dimensions={0}
  z = s32[] constant(0)
  ROOT m = s32[64]{0} reduce(c, z), dimensions={1}, to_apply=sum
}
sum {
  p = s32[] parameter(0)
  q = s32[] parameter(1)
  ROOT o = s32[] add(p, q)
}
"""
    roots, out = tiled("gemmini", text)
    check_equivalent(roots[0], out[0], exact=True)
    adds = {s.type.shape for s in subterms(out[0]) if s.op == "add" and s.type.rank}
    assert adds == {(16, 16), (64,)}  # the tiles' adds, and the reduction's tree over single columns


REVERSE = """HloModule r
ENTRY main {
  a = DT[16,16]{1,0} parameter(0)
  r = DT[16,16]{1,0} reverse(a), dimensions={DIMS}
  ROOT n = DT[16,16]{1,0} negate(r)
}
"""


@pytest.mark.parametrize("dtype", ["f32", "s32"])
@pytest.mark.parametrize("dims", ["1", "0", "0,1"])
def test_a_reverse_no_instruction_computes_becomes_moves_of_single_rows_or_columns(dtype, dims):
    """AMX has no lane permute: a reverse is cut to moves of extent 1 along each reversed
    dimension (rows, then columns), and the elements reversed within rows are read back
    from the bytes they are stored to."""
    roots, out = tiled("amx", REVERSE.replace("DT", dtype).replace("DIMS", dims))
    assert out is not None
    parts = list(subterms(out[0]))
    assert not any(s.op == "reverse" for s in parts)
    assert ("bitcast-convert" in {s.op for s in parts}) == dims.endswith("1")  # the round trip through bytes
    check_equivalent(roots[0], out[0], exact=True)


@pytest.mark.parametrize("dims", ["1", "0,1"])
def test_a_lane_reverse_no_store_can_move_stays_a_reverse(dims):
    """Gemmini stores rows of 16 lanes, never one s32: the columns' reverse cannot be moves
    of columns, so it stays reverses (of the blocks one int8 dot permutes) for the rules
    (reverse-as-byte-dot); the rows' reverse is still moves of rows."""
    text = (REVERSE.replace("DT", "s32").replace("DIMS", dims).replace("[16,16]", "[32,32]")
            .replace("negate(r)", "add(r, r)"))  # an add Gemmini computes tile by tile
    roots, out = tiled("gemmini", text)
    assert out is not None
    reversed_dims = {s.attrs["dimensions"] for s in subterms(out[0]) if s.op == "reverse"}
    assert reversed_dims == {(1,)}
    check_equivalent(roots[0], out[0], exact=True)


REDUCE = """HloModule s
ENTRY main {
  a = DT[4,16]{1,0} parameter(0)
  z = DT[] constant(INIT)
  ROOT r = DT[4]{0} reduce(a, z), dimensions={1}, to_apply=op
}
op {
  p = DT[] parameter(0)
  q = DT[] parameter(1)
  ROOT o = DT[] OP(p, q)
}
"""


@pytest.mark.parametrize("dtype,op,init,exact,cut", [
    ("s32", "add", "0", True, True),  # an integer sum wraps alike in any order
    ("s32", "maximum", "5", True, True),  # max is idempotent: any init
    ("s32", "add", "1", True, False),  # the init would be added once per part
    ("f32", "add", "0", False, True),
    ("f32", "add", "0", True, False),  # a float sum in another order rounds differently
])
def test_a_reduce_no_instruction_computes_becomes_a_tree_of_its_combiner(dtype, op, init, exact, cut):
    text = REDUCE.replace("DT", dtype).replace("OP", op).replace("INIT", init)
    roots, out = tiled("amx", text, exact=exact)
    if not cut:
        assert out is None
        return
    parts = list(subterms(out[0]))
    assert sum(s.op == op for s in parts) == 15 and not any(
        s.op == "reduce" and s.args[0].type.shape[1] > 1 for s in parts)
    check_equivalent(roots[0], out[0], exact=dtype != "f32")


def test_a_reverse_within_rows_compiles_straight_line_on_amx():
    """Sixteen single floats moved into place through HBM, then negated as one row (before:
    no pii graph within 40k e-nodes, and 18 s for 16 rows strip-mined to single elements)."""
    from runtime_skeleton.compile import CompileOptions, compile_hlo, verify

    amx = target("amx")
    text = REVERSE.replace("DT", "f32").replace("DIMS", "1").replace("16,16", "1,16")
    res = compile_hlo(amx, text, CompileOptions(timeout=20, deterministic=True, tiling=False))
    names = [i.name for i in res.program.instructions]
    assert names.count("vmulps") == 1 and res.tiling is None
    assert verify(amx, res, seeds=(0, 1)) == []


def test_a_kernel_of_one_tile_is_left_as_it_is():
    _, out = tiled("gemmini", (ROOT / "examples/kernels/gemmini_add.hlo").read_text())
    assert out is None


def test_phase_1_maps_a_kernel_of_two_tiles_from_its_tiles():
    sel = InstructionSelector(target("gemmini"), parse_module(TWO_TILES, "<k>"), Limits(max_nodes=5000, tiles_first=True))
    g = sel.first()
    assert sel.stats.saturation.nodes < 5000
    out = g.nodes[g.outputs[0]]
    assert out.op == "concat^H" and len(out.args) == 2  # the result's two s32[16, 16] tiles
    assert all(g.nodes[k].op.startswith("mvout") for k in out.args)


def test_a_kernel_of_two_tiles_compiles_straight_line_with_tiles_first():
    """Each pii graph shares one preloaded ±I between the two tiles, which Gemmini's 16-row
    ws cannot hold beside another matrix: the heuristic order overflows it (CSP4), and
    either the order is repaired so that the matmuls reading one preload run together
    (alloc.order.serialized) or the matrix is preloaded again for each (alloc.remat)."""
    from runtime_skeleton.compile import CompileOptions, compile_hlo, verify

    gemmini = target("gemmini")
    res = compile_hlo(gemmini, TWO_TILES, CompileOptions(timeout=30, deterministic=True, tiling=False,
                                                         tiles_first=True))
    names = [i.name for i in res.program.instructions]
    assert res.tiling is None and 1 <= names.count("preload_ws") <= names.count("compute_ws") + names.count(
        "compute_ws_acc"), names
    assert verify(gemmini, res, seeds=(0, 1)) == []


def _schedules(sel: InstructionSelector):
    """Runs sel's enumeration to its first pii graph: that graph, and the e-nodes at which
    each schedule before the last was abandoned (pii_graphs reseeds the e-graph for the next)."""
    abandoned: list[int] = []
    seed = sel._seed

    def spy() -> None:
        abandoned.append(sel.stats.saturation.nodes)
        seed()

    sel._seed = spy
    return sel.first(), abandoned


def test_by_default_a_kernel_that_needs_lowering_is_mapped_lowering_first():
    """Gemmini computes the negation of two tiles only as matmuls by -I: by default the
    lowering-first schedule maps it, well within its budget, and is never abandoned."""
    from runtime_skeleton.isel.phase1 import LOWERING_FIRST_GROWTH

    sel = InstructionSelector(target("gemmini"), parse_module(TWO_TILES, "<k>"))
    entered = sel.eg.view.node_count()
    assert _schedules(sel)[1] == []
    assert sel.stats.saturation.nodes < LOWERING_FIRST_GROWTH * entered


def test_by_default_the_lowering_first_schedule_gives_way_at_its_budget(monkeypatch):
    """AMX K1 needs no lowering; with the lowering rules from round 1 its e-graph grew past
    10k e-nodes with no pii graph. Where that schedule runs first (here K1 not taken for the
    matmul kernel it is), it stops near its budget (LOWERING_FIRST_GROWTH e-nodes per e-node
    of the kernel as written, at least LOWERING_FIRST_FLOOR) and the cheap rules first map it
    in a new e-graph: its 16 instructions."""
    from runtime_skeleton.isel import phase1
    from runtime_skeleton.isel.phase1 import LOWERING_FIRST_FLOOR, LOWERING_FIRST_GROWTH

    monkeypatch.setattr(phase1, "_matmuls_only", lambda module, dots: False)
    sel = InstructionSelector(target("amx"), parse_module((ROOT / "examples/kernels/amx_k1.hlo").read_text(), "<k1>"))
    budget = max(LOWERING_FIRST_FLOOR, LOWERING_FIRST_GROWTH * sel.kernel_nodes)
    g, abandoned = _schedules(sel)
    assert len(abandoned) == 1 and abandoned[0] <= 2 * budget
    assert g.num_instructions == 16


def test_by_default_a_matmul_kernel_starts_with_the_cheap_rules():
    """AMX K1 computes nothing but dots AMX's tile dots compute: no lowering-first schedule
    to abandon, and its 16 instructions from the cheap rules."""
    sel = InstructionSelector(target("amx"), parse_module((ROOT / "examples/kernels/amx_k1.hlo").read_text(), "<k1>"))
    g, abandoned = _schedules(sel)
    assert abandoned == [] and g.num_instructions == 16


BYTE_ROW = """HloModule row
ENTRY e {
  a = u8[1,16]{1,0} parameter(0)
  b = u8[1,16]{1,0} parameter(1)
  c = u8[1,16]{1,0} parameter(2)
  n = u8[1,16]{1,0} negate(a)
  k = u8[] constant(3)
  kb = u8[1,16]{1,0} broadcast(k), dimensions={}
  s = u8[1,16]{1,0} add(b, kb)
  d = u8[1,16]{1,0} subtract(n, c)
  m = u8[1,16]{1,0} minimum(s, d)
  x = u8[1,16]{1,0} maximum(m, b)
  ROOT r = u8[1,16]{1,0} subtract(x, n)
}
"""


def test_an_e_graph_short_only_of_piis_is_not_abandoned():
    """A row of byte operators on AMX (widened to s32, narrowed by vpandd and vpmovusdb): its
    lowering-first e-graph passes the schedule's budget while Γ(k) is still smaller than the
    fewest instructions that compute it. That e-graph produces every output, so it is held and
    Γ grows on it, and the first pii graph comes from it (before, the schedule was abandoned
    there and the next one took over ten times as long)."""
    from runtime_skeleton.ir.widen import widened

    amx = target("amx")
    module = widened(parse_module(BYTE_ROW, "<row>"), target_facts(amx).narrow_arithmetic)
    sel = InstructionSelector(amx, module)
    g, abandoned = _schedules(sel)
    assert abandoned == [] and g.num_instructions > 2 ** 3
