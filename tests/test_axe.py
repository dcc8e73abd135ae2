"""The Axe layout algebra (runtime_skeleton.layout.axe): property tests of its
operations against the maps they induce, and the layouts the backends use
(XLA layouts onto bytes, Gemmini scratchpad rows, AMX VNNI tiles)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from runtime_skeleton.ir.dtypes import DTYPES
from runtime_skeleton.ir.types import Layout as XlaLayout
from runtime_skeleton.ir.types import TensorType
from runtime_skeleton.layout import Iter, Layout, LayoutError, compose, direct_sum, identity, inverse, storage, tile
from runtime_skeleton.layout.axe import vec

AXES = ("m", "row", "col")


def full_map(lay: Layout) -> list[frozenset]:
    return [lay.points(x) for x in range(lay.size)]


@st.composite
def iters(draw, axes=AXES, allow_zero=False):  # noqa: ANN001, ANN201
    e = draw(st.integers(1, 4))
    s = draw(st.integers(-6 if allow_zero else 1, 12))
    if s == 0 and not allow_zero:
        s = 1
    return Iter(e, s, draw(st.sampled_from(axes)))


@st.composite
def layouts(draw, replicas=True, axes=AXES):  # noqa: ANN001, ANN201
    shard = tuple(draw(st.lists(iters(axes), min_size=0, max_size=4)))
    rep = tuple(draw(st.lists(iters(axes, allow_zero=True), max_size=2))) if replicas else ()
    off = vec({a: draw(st.integers(-5, 5)) for a in draw(st.sets(st.sampled_from(axes), max_size=2))})
    return Layout(shard, rep, off)


@st.composite
def compact(draw, extents=st.integers(1, 4), max_rank=4):  # noqa: ANN001, ANN201
    """A bijection onto [0, E) of one axis: the iters' extents in a random memory order."""
    ext = draw(st.lists(extents, min_size=1, max_size=max_rank))
    order = draw(st.permutations(range(len(ext))))
    strides, step = [0] * len(ext), 1
    for k in reversed(order):
        strides[k] = step
        step *= ext[k]
    return Layout.strided(*zip(ext, strides))


def bit_permutation(n: int):  # noqa: ANN201
    """Bijections of [0, 2^n) that permute bits: any two compose."""
    return compact(extents=st.just(2), max_rank=n).filter(lambda lay: len(lay.shard) == n)


# -- canonical forms and equality ------------------------------------------------------------------
@given(layouts())
def test_canonical_form_keeps_the_map(lay: Layout) -> None:
    assert full_map(lay.canonical()) == full_map(lay)
    assert lay.canonical().canonical() == lay.canonical()


@given(layouts(replicas=False), st.data())
def test_split_and_fused_layouts_are_equal(lay: Layout, data) -> None:  # noqa: ANN001
    """Splitting an iter (Lemma B.1) changes the iters, not the map; equality sees that."""
    shard = list(lay.shard)
    assume(shard)
    k = data.draw(st.integers(0, len(shard) - 1))
    it = shard[k]
    f = data.draw(st.sampled_from([d for d in range(1, it.extent + 1) if it.extent % d == 0]))
    split = shard[:k] + [Iter(f, it.stride * (it.extent // f), it.axis), Iter(it.extent // f, it.stride, it.axis)] + \
        shard[k + 1:]
    other = Layout(tuple(split), lay.replica, lay.offset)
    assert full_map(other) == full_map(lay)
    assert other.same(lay)


@given(compact(), st.data())
def test_equality_is_equality_of_maps(a: Layout, data) -> None:  # noqa: ANN001
    """Two orders of the same extents: equal exactly when they induce the same map."""
    ext = data.draw(st.permutations([it.extent for it in a.shard]))
    order = data.draw(st.permutations(range(len(ext))))
    strides, step = [0] * len(ext), 1
    for k in reversed(order):
        strides[k] = step
        step *= ext[k]
    b = Layout.strided(*zip(ext, strides))
    assert a.same(b) == (full_map(a) == full_map(b))


def test_replicas_absorb_into_one_run() -> None:
    lay = Layout((Iter(4, 1),), (Iter(2, 1, "warp"), Iter(3, 2, "warp")))
    c = lay.canonical()
    assert c.replica == (Iter(6, 1, "warp"),)
    assert full_map(c) == full_map(lay)


# -- group, slice, tile, direct sum --------------------------------------------------------------
@given(compact(), st.data())
def test_group_keeps_the_map_and_matches_the_shape(lay: Layout, data) -> None:  # noqa: ANN001
    n = lay.size
    first = data.draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
    try:
        blocks = lay.blocks((first, n // first))
    except LayoutError:
        return
    assert [math.prod(i.extent for i in b) for b in blocks] == [first, n // first]
    assert full_map(Layout(sum(blocks, ()))) == full_map(lay)


def test_group_fails_when_an_iter_straddles_two_dimensions() -> None:
    with pytest.raises(LayoutError, match="straddles"):
        Layout.strided((6, 1), (2, 100)).group((4, 3))


@given(compact(max_rank=3), st.data())
def test_slice_is_the_map_at_the_box(lay: Layout, data) -> None:  # noqa: ANN001
    shape = tuple(it.extent for it in lay.shard)
    begin = tuple(data.draw(st.integers(0, s - 1)) for s in shape)
    ext = tuple(data.draw(st.integers(1, s - b)) for s, b in zip(shape, begin))
    try:
        sub = lay.slice(shape, begin, ext)
    except LayoutError:
        return
    for y in itertools.product(*map(range, ext)):
        assert sub.at(y, ext) == lay.at(tuple(b + v for b, v in zip(begin, y)), shape)


def test_aligned_boxes_always_slice() -> None:
    lay = Layout.row_major((8, 12))
    for b0, b1 in itertools.product(range(0, 8, 4), range(0, 12, 3)):
        sub = lay.slice((8, 12), (b0, b1), (4, 3))
        assert sub.shard == (Iter(4, 12), Iter(3, 1)) and sub.offset == vec({"m": b0 * 12 + b1})


@given(compact(max_rank=2), compact(max_rank=2))
def test_tiling_then_flattening_is_the_direct_map(inner: Layout, outer: Layout) -> None:
    """f_{A (x) B}(o * S_A + i) = span(A) * f_B(o) + f_A(i) (Axe §3.3), per dimension."""
    si = tuple(it.extent for it in inner.shard) + (1,) * (2 - len(inner.shard))
    so = tuple(it.extent for it in outer.shard) + (1,) * (2 - len(outer.shard))
    t = tile(inner, si, outer, so)
    shape = tuple(a * b for a, b in zip(si, so))
    span = inner.span()
    for o in itertools.product(*map(range, so)):
        for i in itertools.product(*map(range, si)):
            x = tuple(a * n + b for a, n, b in zip(o, si, i))
            want = dict(outer.at(o, so)).get("m", 0) * span + dict(inner.at(i, si)).get("m", 0)
            assert dict(t.at(x, shape)).get("m", 0) == want
    assert t.span() == inner.span() * outer.span() or outer.span() == 1


def test_direct_sum_adds_the_two_maps() -> None:
    box = Layout.strided((4, 64))  # 4 rows of a 64-byte pitch
    inner = Layout.strided((8, 1))  # 8 bytes a row
    d = direct_sum(box, (4, 1), inner, (1, 8))
    assert [dict(d.at((r, c), (4, 8))).get("m", 0) for r in range(4) for c in range(8)] == \
        [r * 64 + c for r in range(4) for c in range(8)]


# -- composition and inverse ---------------------------------------------------------------------
@given(bit_permutation(4), bit_permutation(4), bit_permutation(4))
def test_composition_is_associative(a: Layout, b: Layout, c: Layout) -> None:
    left, right = compose(compose(a, b), c), compose(a, compose(b, c))
    assert left.same(right)
    assert full_map(left) == [a.points(dict(b.apply(dict(c.apply(x)).get("m", 0))).get("m", 0))
                              for x in range(c.size)]


@given(compact(), layouts(replicas=False, axes=("m",)))
def test_composition_is_the_composed_map_when_defined(outer: Layout, inner: Layout) -> None:
    try:
        both = compose(outer, inner)
    except LayoutError:
        return
    for x in range(inner.size):
        y = dict(inner.apply(x)).get("m", 0)
        assert both.apply(x) == outer.apply(y)


@given(compact())
def test_a_layout_and_its_inverse_round_trip(lay: Layout) -> None:
    inv = inverse(lay)
    assert compose(inv, lay).same(identity(lay.size))
    assert compose(lay, inv).same(identity(lay.size))


def test_inverse_needs_a_bijection() -> None:
    with pytest.raises(LayoutError, match="bijection"):
        inverse(Layout.strided((4, 2)))


# -- the layouts the backends use ----------------------------------------------------------------
def _type(dt: str, shape, m2m, tiles=()) -> TensorType:  # noqa: ANN001
    return TensorType(DTYPES[dt], shape, XlaLayout(m2m, tiles))


@pytest.mark.parametrize("t", [
    _type("f32", (3, 5), (1, 0)), _type("f32", (3, 5), (0, 1)), _type("s8", (32, 64), (1, 0), ((16, 4),)),
    _type("bf16", (14, 32), (1, 0), ((14, 16),)), _type("s32", (4, 6, 8), (0, 2, 1), ((2, 4),)),
])
def test_xla_layouts_are_bijections_onto_their_bytes(t: TensorType) -> None:
    st_ = storage(t)
    with_bytes = Layout(st_.bytes.shard + (Iter(t.dtype.nbytes, 1),))
    assert compose(inverse(with_bytes), with_bytes).same(identity(math.prod(st_.shape) * t.dtype.nbytes))


def test_amx_vnni_tile_is_the_xla_t41_layout() -> None:
    """B[K, N] s8 in {1,0:T(4,1)}: a K=64 x N=16 tile is 16 tile rows of 64 bytes (4 K values of
    each column n at bytes 4n..4n+3), rows 4N bytes apart in memory."""
    k, n = 256, 256
    whole = storage(_type("s8", (k, n), (1, 0), ((4, 1),))).bytes
    box = whole.slice((k, n), (64, 32), (64, 16))
    vnni = Layout((Iter(16, 1, "row"), Iter(4, 1, "col"), Iter(16, 4, "col")))  # (k/4, k%4, n) -> row, col
    rows = Layout.strided((16, 4 * n), (64, 1))  # tile row r, byte c -> memory
    onto_tile = compose(inverse(Layout.row_major((16, 64))), Layout(tuple(
        Iter(i.extent, i.stride * (64 if i.axis == "row" else 1)) for i in vnni.shard)))
    assert compose(rows, onto_tile).same(Layout(box.shard))
    assert dict(box.offset)["m"] == 16 * 4 * n + 32 * 4


def test_gemmini_scratchpad_rows() -> None:
    """An s8[32, 16] matrix in Gemmini's scratchpad: row r is scratchpad row r, column c byte c."""
    sp = Layout((Iter(32, 1, "row"), Iter(16, 1, "col")))
    assert sp.spans() == {"col": 16, "row": 32}
    assert np.array_equal(sp.offsets("row"), np.repeat(np.arange(32), 16))
