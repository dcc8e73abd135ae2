"""The instruction-sized tiling splits (runtime_skeleton.isel.tiles): the sizes read from
the targets' instruction patterns, and the rule checked numerically with the reference
interpreter like every axiom (tests/test_axioms.py)."""
from __future__ import annotations

import pytest

from runtime_skeleton.isel.isa_rules import isa_rules
from runtime_skeleton.isel.rule_check import check_rule, fire, subterms
from runtime_skeleton.isel.tensor_egraph import TensorEGraph
from runtime_skeleton.isel.terms import Term
from runtime_skeleton.isel.tiles import MAX_PIECES, instruction_dots, instruction_tiles, tile_split_rule
from tests.test_axioms import P, const, dot, op
from tests.test_isel import target


def tiles_of(tname):
    return instruction_tiles(isa_rules(target(tname))[1])


def pieces(t: Term, name: str) -> list[Term]:
    out, stack = [], [t]
    while stack:
        x = stack.pop()
        if isinstance(x, Term):
            out += [x] if x.op == name else []
            stack.extend(x.args)
    return out


def amx_dots():
    return instruction_dots(isa_rules(target("amx"))[1])


def sizes(tiles, key):
    return {(e, k) for e, k, _ in tiles[key]}


def test_the_sizes_come_from_the_instructions():
    amx, gemmini = tiles_of("amx"), tiles_of("gemmini")
    assert ((1, 16), 1.0, False) in amx[("add", "f32")]  # vaddps: one zmm row
    assert ((16, 16), 1.0, True) in amx[("add", "f32")]  # tdpbf16ps' accumulation
    assert ((16, 16), 16) in sizes(gemmini, ("dot", "s32"))  # the 16x16 systolic array, K = 16
    assert ("negate", "f32") not in amx  # no instruction negates: nothing to tile to
    assert ("bf16", "bf16", "f32") in amx_dots() and ("f32", "f32", "f32") not in amx_dots()


def test_an_elementwise_op_is_cut_into_instruction_rows():
    a, b = P(0, "f32", 16, 32), P(1, "f32", 16, 32)
    (rows,) = check_rule(tile_split_rule(tiles_of("amx")), op("add", a, b))
    assert {p.type.shape for p in pieces(rows, "add")} == {(1, 16)} and len(pieces(rows, "add")) == 32


def test_an_accumulating_add_is_also_cut_to_the_tile_dot_size():
    """An add fed by a dot gets tdpbf16ps' 16 x 16 blocks too; one fed by no dot does not (above)."""
    x, y = P(0, "f32", 16, 8), P(1, "f32", 8, 32)
    acc = P(2, "f32", 16, 32)
    lhs = op("add", dot(x, y), acc)
    results = check_rule(tile_split_rule(tiles_of("amx")), lhs, float_order=True)
    assert {p.type.shape for r in results for p in pieces(r, "add")} == {(1, 16), (16, 16)}


def test_unit_dimensions_do_not_take_an_instruction_extent():
    """Sizes align modulo unit dimensions: a column f32[14, 1] is one vmulps row as
    f32[1, 14] is (views relate the two), not 14 single elements (on AMX K3 these
    single elements and their views were most of the e-graph); f32[32, 1] is two."""
    rule = tile_split_rule(tiles_of("amx"))
    assert not fire(rule, op("multiply", P(0, "f32", 14, 1), P(1, "f32", 14, 1)))
    col = P(0, "f32", 32, 1)
    (r,) = check_rule(rule, op("multiply", col, col))
    assert [p.type.shape for p in pieces(r, "multiply")] == [(16, 1), (16, 1)]


def test_scalar_operands_stay_whole_and_remainders_are_cut():
    x = P(0, "f32", 3, 20)
    lo, hi = const(-1, "f32"), const(1, "f32")
    rule = tile_split_rule({("clamp", "f32"): frozenset({((1, 16), 1.0, False)})})
    results = check_rule(rule, op("clamp", lo, x, hi))
    (r,) = results
    assert sorted({p.type.shape for p in pieces(r, "clamp")}) == [(1, 4), (1, 16)]
    assert all(p.args[0] is lo and p.args[2] is hi for p in pieces(r, "clamp"))


def test_an_integer_dot_is_cut_along_batch_rows_columns_and_contraction():
    a, b = P(0, "s32", 2, 24, 40), P(1, "s32", 2, 40, 16)
    lhs = dot(a, b, lc=(2,), rc=(1,), lb=(0,), rb=(0,))
    (r,) = check_rule(tile_split_rule(tiles_of("gemmini")), lhs)
    dots = pieces(r, "dot")
    # batch 2 x rows {16, 8} x one column block x contraction {16, 16, 8}, each batch of
    # one summed as a plain matmul (reshaped once, not at every add of the sum)
    assert len(dots) == 2 * 2 * 3
    assert {p.args[0].type.shape for p in dots} == {(16, 16), (16, 8), (8, 16), (8, 8)}
    assert not any(d.attrs["lhs_batch_dims"] for d in dots)


def test_a_float_dot_an_instruction_takes_keeps_its_contraction_whole():
    """tdpbf16ps takes bf16 operands: their f32 dot is cut to its 16 x 16 tiles, not summed anew."""
    a, b = P(0, "bf16", 32, 8), P(1, "bf16", 8, 48)
    lhs = dot(op("convert", a, dtype="f32"), op("convert", b, dtype="f32"))
    (r,) = check_rule(tile_split_rule(tiles_of("amx"), amx_dots()), lhs, float_order=True)
    dots = pieces(r, "dot")
    assert len(dots) == 2 * 3 and all(p.args[0].type.shape == (16, 8) for p in dots)
    assert not pieces(r, "add")  # a float sum is not regrouped


def test_a_float_dot_no_instruction_takes_is_cut_into_outer_products():
    """No AMX instruction's dot reads f32 operands: an f32 dot becomes vfmadd231ps rows, one
    multiply per contracted element summed in the order they accumulate in (with the halving
    splits, gemm_f32's pieces passed 400k e-nodes before any pii graph)."""
    a, b = P(0, "f32", 2, 3), P(1, "f32", 3, 32)
    (r,) = check_rule(tile_split_rule(tiles_of("amx"), amx_dots()), dot(a, b), float_order=True)
    dots = pieces(r, "dot")
    assert len(dots) == 2 * 2 * 3
    assert {(p.args[0].type.shape, p.args[1].type.shape) for p in dots} == {((1, 1), (1, 16))}
    row = r.args[0].args[0]  # the first [1, 16] piece: ((k0 + k1) + k2)
    assert row.op == "add" and row.args[0].op == "add" and row.args[0].args[0].op == "dot"
    starts = [p.args[0].attrs["slice"][1].start for p in (row.args[0].args[0], row.args[0].args[1], row.args[1])]
    assert starts == [0, 1, 2]
    assert not fire(tile_split_rule(tiles_of("amx"), amx_dots()), dot(P(0, "f32", 1, 1), P(1, "f32", 1, 16)))


def test_an_integer_dot_no_instruction_takes_is_cut_into_outer_products():
    """No AMX instruction's dot reads s32 operands (its tile dots read int8): an s32 dot is
    vpbroadcastd and vpmulld rows summed by vpaddd, one product per contracted element
    (exact, wrapping); an s8 dot keeps the tile dot's cuts."""
    a, b = P(0, "s32", 1, 3), P(1, "s32", 3, 16)
    (r,) = check_rule(tile_split_rule(tiles_of("amx"), amx_dots()), dot(a, b))
    dots = pieces(r, "dot")
    assert len(dots) == 3 and {(p.args[0].type.shape, p.args[1].type.shape) for p in dots} == {((1, 1), (1, 16))}
    s8 = dot(P(0, "s8", 1, 128), P(1, "s8", 128, 16), dtype="s32")
    assert all(len(pieces(t, "dot")) < 128 for t in fire(tile_split_rule(tiles_of("amx"), amx_dots()), s8))


def test_no_cut_at_or_below_the_instruction_size_nor_past_the_piece_limit():
    rule = tile_split_rule(tiles_of("amx"))
    a = P(0, "f32", 1, 16)
    assert not fire(rule, op("multiply", a, a))
    big = P(0, "f32", MAX_PIECES + 1, 16)
    assert not fire(rule, op("multiply", big, big))
    with pytest.raises(AssertionError):
        check_rule(rule, op("negate", P(0, "f32", 4, 32)))


def test_no_cut_when_some_instruction_computes_the_op_whole():
    """tdpbusd converts a whole u8[16, 64] tile to s32: its rows (vpmovzxbd's size) are not cut first."""
    x = P(0, "u8", 16, 64)
    assert not fire(tile_split_rule(tiles_of("amx")), op("convert", x, dtype="s32"))
    assert fire(tile_split_rule(tiles_of("amx")), op("convert", P(0, "u8", 32, 64), dtype="s32"))


def test_a_converted_dot_operand_is_cut_by_the_dot_not_by_itself():
    """A convert a dot takes as an operand is not cut to vpmovzxbd's rows: its pieces come
    from the dot's cuts, slices pushed through it. On AMX K1 the VNNI weights' 128 rows,
    each with its views, were most of the e-graph (31k e-nodes; 523 without them)."""
    rule = tile_split_rule(tiles_of("amx"))
    cx = op("convert", P(0, "u8", 32, 64), dtype="s32")
    eg = TensorEGraph()
    refs = {t: eg.add(t) for t in subterms(dot(cx, op("convert", P(1, "s8", 64, 32), dtype="s32")))}
    view = eg.flush()
    c = eg.class_of(refs[cx])
    assert not list(rule.apply(view, c, view.find(c, "convert")[0]))
    assert fire(rule, cx)  # the same convert, not a dot's operand


@pytest.mark.parametrize("limit", ["nodes", "deadline", "none"])
def test_a_cut_the_e_graph_has_no_room_for_is_not_made(limit):
    """One rewrite may build thousands of pieces (a 64x64x16 f32 dot is 4096 outer
    products): a cut past the e-nodes the e-graph may still take, or past what the time
    left can send to egglog, is left to the halving splits; the rest are made."""
    from runtime_skeleton import budget
    from runtime_skeleton.isel.rules import run_rules

    eg = TensorEGraph()
    root = eg.add(op("add", P(0, "f32", 16, 32), P(1, "f32", 16, 32)))
    eg.flush()
    before = eg.view.node_count()
    max_nodes = before + 40 if limit == "nodes" else 10_000
    deadline = None
    if limit == "deadline":  # time for the flush and 40 more e-nodes
        deadline = budget.after(eg.flush_cost() + budget.COST["apply"] + 40 * budget.COST["node"])
    run_rules(eg, [tile_split_rule(tiles_of("amx"))], iterations=1, max_nodes=max_nodes, deadline=deadline)
    cuts = [n for n in eg.view.nodes(eg.class_of(root)) if n.op == "concatenate"]
    added = eg.view.node_count() - before
    assert (len(cuts), added > 40) == ((1, True) if limit == "none" else (0, False))
