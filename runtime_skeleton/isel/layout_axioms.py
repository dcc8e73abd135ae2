"""Layout axioms (part of the foundational axioms R, registered in ``axioms.AXIOMS``):
views, strided windows and strided stores.

Byte-flattening (bflat, Act Def. 7) puts every kernel input and output in
row-major byte order behind reshape and bitcast-convert. A tile of a matrix is
then a strided window of that byte vector: a tile load reads ``rows`` runs of
``width`` bytes, ``C`` bytes apart (``slice-reshape-strided``, the form of the
strided load semantics: pad / reshape / slice; rows may also be a stride of rows
apart, and a slice strided along its rows' elements is the concatenation of its
columns, ``slice-strided-columns``, each such a window), and a matrix tiled along its
columns is written by one read-modify-write strided store per tile, each keeping
the bytes between its rows (``concat-strided-store``, the form of the strided
store semantics: concatenate with the kept bytes of ``old``). The other rules
move slices, concatenations and transposes through the views (reshape,
bitcast-convert) so that those forms appear.

Rules that read their operands' nodes are ``watch_operands`` (they fire again
when an operand class gains a node, e.g. a concatenation from a tiling split).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from ..ir.attrs import PadDim, SliceDim
from ..ir.dtypes import DType, u8
from ..ir.types import TensorType
from .axioms import Arg, Make, axiom, count, splat
from .egraph import ClassId
from .isa_rules import UNDEF
from .terms import Class, ENode, Term, View


MAX_COLUMNS = 64  # slice-strided-columns: a wider strided slice is left whole


def _prod(xs: Iterable[int]) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


def _viewable(t: TensorType) -> bool:
    """bitcast-convert is a reinterpretation of bytes (pred is not: XLA's pred is not a byte type here)."""
    return not t.dtype.is_pred


def _bitcast(mk: Make, x: Arg, dtype: DType) -> Term:
    return mk.op("bitcast-convert", [x], {}, TensorType(dtype, ()))


# ---------------------------------------------------------------- slices through views


def bitcast_slice_spec(spec: Sequence[SliceDim], src: TensorType, dst: TensorType) -> tuple[SliceDim, ...] | None:
    """The slice of bitcast-convert's operand (type ``src``) that gives slice ``spec`` of its
    result (type ``dst``): the same spec for equal widths; a narrower result has a trailing
    byte dimension, which must be kept whole; a wider result drops the operand's trailing
    dimension, which is taken whole."""
    if src.rank == dst.rank:
        return tuple(spec)
    if dst.rank == src.rank + 1:
        return tuple(spec[:-1]) if spec[-1] == SliceDim(0, dst.shape[-1], 1) else None
    return tuple(spec) + (SliceDim(0, src.shape[-1], 1),)


@axiom("slice-bitcast-convert", {"slice"}, {"slice", "bitcast-convert"}, watch_operands=1)
def slice_bitcast_convert(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """slice(bitcast-convert(x)) = bitcast-convert(slice(x)): each element is made of the same
    bytes (a byte dimension added or removed by the bitcast is kept whole)."""
    mk = Make(view)
    for b in view.find(node.children[0], "bitcast-convert"):
        src = view.type(b.children[0])
        if not (_viewable(src) and _viewable(b.type)):
            continue
        sub = bitcast_slice_spec(node.attrs["slice"], src, b.type)
        if sub is not None:
            yield _bitcast(mk, mk.slice(Class(b.children[0]), sub), node.type.dtype)


def _partial_dims(shape: Sequence[int], spec: Sequence[SliceDim]) -> list[int]:
    """The dimensions a slice does not take whole."""
    return [d for d in range(len(shape)) if (spec[d].start, spec[d].limit, spec[d].stride) != (0, shape[d], 1)]


def row_window(shape: Sequence[int], spec: Sequence[SliceDim]) -> tuple[int, int, int, int] | None:
    """A slice of a row-major tensor as a window of its flat elements:
    (start, rows, width, row_length) when the slice is ``rows`` runs of ``width``
    consecutive elements, ``row_length`` apart; None when it is not (several partial outer
    dimensions, a stride in both the innermost sliced dimension and an outer range), is
    empty, or is the whole tensor. A stride t in the innermost sliced dimension, under
    single outer indices, makes each of its elements a row: ``count`` runs of the inner
    elements, t of them apart. A stride t in the outer range, when whole dimensions lie
    between it and the innermost sliced one, only when those are of size 1: its rows are
    t rows apart (x[0:16:2, 1:2] is 8 runs of one element, 2 rows apart)."""
    if any(count(s) == 0 for s in spec):
        return None
    partial = _partial_dims(shape, spec)
    if not partial:
        return None
    j = partial[-1]  # the innermost sliced dimension: one run per row
    inner = _prod(shape[j + 1:])
    row_length = shape[j] * inner
    # outer dims: single indices, then at most one range, then whole dims
    i = next((d for d in range(j) if count(spec[d]) != 1), None)
    if any(spec[d].stride != 1 and count(spec[d]) != 1 for d in range(j) if d != i):
        return None
    if i is not None and any((spec[d].start, spec[d].limit) != (0, shape[d]) for d in range(i + 1, j)):
        return None
    first_row = sum(spec[d].start * _prod(shape[d + 1:j]) for d in range(j))
    start = first_row * row_length + spec[j].start * inner
    if spec[j].stride != 1 and count(spec[j]) != 1:
        return None if i is not None else (start, count(spec[j]), inner, spec[j].stride * inner)
    if i is None:
        return start, 1, count(spec[j]) * inner, row_length
    if spec[i].stride != 1:
        if _prod(shape[i + 1:j]) != 1:
            return None
        row_length *= spec[i].stride
    return start, count(spec[i]) * _prod(shape[i + 1:j]), count(spec[j]) * inner, row_length


def strided_window(mk: Make, flat: Arg, start: int, rows: int, width: int, row_length: int) -> Arg:
    """The [rows, width] window at ``start`` of a 1-D ``flat`` whose rows are ``row_length``
    apart, as the strided load semantics read it: the (rows - 1) * row_length + width
    elements from ``start``, padded to whole rows, viewed as [rows, row_length], the first
    ``width`` columns kept. A contiguous window is one slice."""
    if width == row_length or rows == 1:
        return mk.reshape(mk.slice(flat, [SliceDim(start, start + rows * width, 1)]), (rows, width))
    span = (rows - 1) * row_length + width
    win = mk.slice(flat, [SliceDim(start, start + span, 1)])
    padded = mk.op("pad", [win, mk.scalar(0, mk.type(flat).dtype)], {"padding": (PadDim(0, row_length - width, 0),)})
    return mk.slice(mk.reshape(padded, (rows, row_length)), [SliceDim(0, rows, 1), SliceDim(0, width, 1)])


@axiom("slice-reshape-strided", {"slice"}, {"slice", "reshape", "pad", "constant"}, watch_operands=1)
def slice_reshape_strided(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """slice(reshape(F)) of a 1-D F, when the slice is ``rows`` runs of ``width`` elements
    C apart from s, = reshape(slice(reshape(pad(F[s : s + (rows-1)*C + width], hi = C - width),
    [rows, C]), [0:rows, 0:width])): a tile of a row-major matrix is a strided window of its
    flat elements (reshape(F[s : s + rows*width]) when the runs are contiguous)."""
    mk = Make(view)
    for r in view.find(node.children[0], "reshape"):
        f = r.children[0]
        if view.type(f).rank != 1 or view.find(f, "pad"):  # F = pad(..): already the strided form
            continue
        win = row_window(r.type.shape, node.attrs["slice"])
        if win is not None:
            yield mk.reshape(strided_window(mk, Class(f), *win), node.type.shape)


@axiom("slice-strided-columns", {"slice"}, {"slice", "concatenate"})
def slice_strided_columns(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """A slice with a stride in its innermost sliced dimension j and a range outside it
    = the concatenation along j of its single-index slices at j, each a strided window
    (``row_window``): x[0:16:2, 1:64:3] is 21 columns x[0:16:2, 1+3k], each 8 elements
    2 rows apart, that a strided load reads and a strided store writes."""
    spec, shape = node.attrs["slice"], view.type(node.children[0]).shape
    if row_window(shape, spec) is not None:
        return
    partial = _partial_dims(shape, spec)
    j = partial[-1] if partial else None
    if j is None or spec[j].stride == 1 or not 1 < count(spec[j]) <= MAX_COLUMNS:
        return
    columns = [[*spec[:j], SliceDim(k, k + 1, 1), *spec[j + 1:]]
               for k in range(spec[j].start, spec[j].limit, spec[j].stride)]
    if all(row_window(shape, col) is not None for col in columns):
        mk = Make(view)
        yield mk.concat([mk.slice(Class(node.children[0]), col) for col in columns], j)


def group_dims(src: Sequence[int], dst: Sequence[int]) -> list[tuple[list[int], list[int]]] | None:
    """The finest pairing of runs of consecutive dimensions of a reshape src -> dst with equal
    element counts (a size-1 dimension joins the group before it; leading ones the first)."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src) or j < len(dst):
        gs: list[int] = []
        gd: list[int] = []
        ps = pd = 1
        while not (ps == pd and gs and gd):
            if (ps <= pd or j >= len(dst)) and i < len(src):
                gs.append(i)
                ps *= src[i]
                i += 1
            elif j < len(dst):
                gd.append(j)
                pd *= dst[j]
                j += 1
            else:
                return None
        while i < len(src) and src[i] == 1:
            gs.append(i)
            i += 1
        while j < len(dst) and dst[j] == 1:
            gd.append(j)
            j += 1
        groups.append((gs, gd))
    return groups


def _contiguous_range(shape: Sequence[int], spec: Sequence[SliceDim]) -> tuple[int, int] | None:
    """The flat element range [lo, hi) a slice of a row-major group covers, if contiguous."""
    if all((s.start, s.limit, s.stride) == (0, n, 1) for s, n in zip(spec, shape)):
        return 0, _prod(shape)
    win = row_window(shape, spec)
    if win is None:
        return None
    start, rows, width, row_length = win
    return (start, start + rows * width) if rows == 1 or width == row_length else None


def _spec_of_range(shape: Sequence[int], lo: int, hi: int) -> list[SliceDim] | None:
    """A unit-stride slice of a row-major group covering exactly the flat range [lo, hi)."""
    spec: list[SliceDim] = []
    for d, n in enumerate(shape):
        inner = _prod(shape[d + 1:])
        if lo % inner == 0 and hi % inner == 0:
            return spec + [SliceDim(lo // inner, hi // inner, 1)] + [SliceDim(0, m, 1) for m in shape[d + 1:]]
        a = lo // inner
        if hi > (a + 1) * inner:
            return None
        spec.append(SliceDim(a, a + 1, 1))
        lo, hi = lo - a * inner, hi - a * inner
    return None


def reshape_slice_spec(src: Sequence[int], dst: Sequence[int], spec: Sequence[SliceDim]) -> list[SliceDim] | None:
    """The slice of a reshape's operand (shape ``src``) that, reshaped, is slice ``spec`` of
    the reshape (shape ``dst``): in each group of dimensions the reshape merges or splits,
    the slice must take a contiguous run of the group's elements."""
    groups = group_dims(src, dst)
    if groups is None:
        return None
    out: list[SliceDim] = []
    for gs, gd in groups:
        rng = _contiguous_range([dst[k] for k in gd], [spec[k] for k in gd])
        sub = None if rng is None else _spec_of_range([src[k] for k in gs], *rng)
        if sub is None:
            return None
        out.extend(sub)
    return out


@axiom("slice-reshape", {"slice"}, {"slice", "reshape"}, watch_operands=1)
def slice_reshape(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """slice(reshape(x)) = reshape(slice(x)) when, in each group of dimensions the reshape
    merges or splits, the slice takes a contiguous run that is also a slice of x's group
    (e.g. the columns of a VNNI-packed matrix: whole groups of four rows)."""
    mk = Make(view)
    for r in view.find(node.children[0], "reshape"):
        x = r.children[0]
        sub = reshape_slice_spec(view.type(x).shape, r.type.shape, node.attrs["slice"])
        if sub is not None:
            yield mk.reshape(mk.slice(Class(x), sub), node.type.shape)


# ---------------------------------------------------------------- concatenations through views


@axiom("bitcast-convert-concat", {"bitcast-convert"}, {"bitcast-convert", "concatenate"}, watch_operands=1)
def bitcast_convert_concat(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """bitcast-convert(concat(xs, d)) = concat(bitcast-convert(x) for x in xs, d) (d not the
    byte dimension a widening bitcast consumes)."""
    mk = Make(view)
    for cat in view.find(node.children[0], "concatenate"):
        (d,) = cat.attrs["dimensions"]
        if _viewable(cat.type) and _viewable(node.type) and d < node.type.rank:
            yield mk.concat([_bitcast(mk, Class(k), node.type.dtype) for k in cat.children], d)


def reshape_concat_dim(src: Sequence[int], d: int, sizes: Sequence[int], dst: Sequence[int]) -> int | None:
    """For reshape(concat(xs, d)) to ``dst``: a dimension d' of dst such that the reshape is
    the concatenation along d' of the xs reshaped (dst's dimensions before d' span src's
    before d, and every piece is a whole number of rows of d'). The innermost such d'."""
    outer, inner_src = _prod(src[:d]), _prod(src[d + 1:])
    best = None
    for k in range(len(dst)):
        if _prod(dst[:k]) != outer or _prod(dst[k:]) != src[d] * inner_src:
            continue
        below = _prod(dst[k + 1:])
        if all(n * inner_src % below == 0 for n in sizes):
            best = k
    return best


@axiom("reshape-concat", {"reshape"}, {"reshape", "concatenate"}, watch_operands=1)
def reshape_concat(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reshape(concat(xs, d)) = concat(reshape(x) for x in xs, d') when the reshape keeps the
    dimensions before d and each piece fills whole rows of d' (``reshape_concat_dim``): the
    row blocks of a row-major matrix are consecutive runs of its flat elements."""
    mk = Make(view)
    dst = node.type.shape
    for cat in view.find(node.children[0], "concatenate"):
        (d,) = cat.attrs["dimensions"]
        src = cat.type.shape
        sizes = [view.type(k).shape[d] for k in cat.children]
        k = reshape_concat_dim(src, d, sizes, dst)
        if k is None:
            continue
        below, inner_src = _prod(dst[k + 1:]), _prod(src[d + 1:])
        yield mk.concat([mk.reshape(Class(x), dst[:k] + (n * inner_src // below,) + dst[k + 1:])
                         for x, n in zip(cat.children, sizes)], k)


@axiom("transpose-concat", {"transpose"}, {"transpose", "concatenate", "reshape"}, watch_operands=1)
def transpose_concat(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """transpose(concat(xs, d), p) = concat(transpose(x, p) for x in xs, p⁻¹(d)) (a piece's
    transpose that moves only size-1 dimensions is a reshape, see ``Make.transpose``)."""
    mk = Make(view)
    perm = tuple(node.attrs["dimensions"])
    for cat in view.find(node.children[0], "concatenate"):
        (d,) = cat.attrs["dimensions"]
        yield mk.concat([mk.transpose(Class(k), perm) for k in cat.children], perm.index(d))


def squeeze_perm(shape: Sequence[int], perm: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the shape without its size-1 dims, the permutation of the remaining dims)."""
    keep = [d for d in range(len(shape)) if shape[d] != 1]
    return tuple(shape[d] for d in keep), tuple(keep.index(d) for d in perm if d in keep)


@axiom("transpose-squeeze", {"transpose"}, {"transpose", "reshape"})
def transpose_squeeze(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """transpose(x, p) = reshape(transpose(reshape(x, x without its size-1 dims), p'), ..), p'
    being p on the other dims (x with size-1 dims, p' not the identity): a VNNI tile layout
    T(4,1) is a rank-3 transpose."""
    x = node.children[0]
    shape = view.type(x).shape
    if 1 not in shape:
        return
    squeezed, p2 = squeeze_perm(shape, node.attrs["dimensions"])
    if len(squeezed) < 2 or p2 == tuple(range(len(p2))):
        return
    mk = Make(view)
    yield mk.reshape(mk.transpose(mk.reshape(Class(x), squeezed), p2), node.type.shape)


def transpose_through_reshape(src: Sequence[int], mid: Sequence[int], perm: Sequence[int]) -> tuple[int, ...] | None:
    """For transpose(reshape(x, mid), perm) with x of shape ``src``: the permutation of x's
    dimensions that, followed by a reshape, gives the same tensor, when perm moves whole
    groups of the reshape (each group's dimensions stay together and in order); None if not."""
    groups = group_dims(src, mid)
    if groups is None:
        return None
    of = {gd[0]: (gs, gd) for gs, gd in groups if gd}
    out: list[int] = []
    i = 0
    while i < len(perm):
        g = of.get(perm[i])
        if g is None or tuple(perm[i:i + len(g[1])]) != tuple(g[1]):
            return None
        out.extend(g[0])
        i += len(g[1])
    return tuple(out) if len(out) == len(src) else None


@axiom("transpose-reshape", {"transpose"}, {"transpose", "reshape"}, watch_operands=1)
def transpose_reshape(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """transpose(reshape(x), p) = reshape(transpose(x, q)) when p permutes whole groups of
    dimensions the reshape merges or splits, q being p on x's dimensions: the transpose of a
    tiled layout's logical matrix moves its tiles' dimensions (K1's B^T in T(16,4) is the
    VNNI layout of B)."""
    mk = Make(view)
    for r in view.find(node.children[0], "reshape"):
        x = r.children[0]
        q = transpose_through_reshape(view.type(x).shape, r.type.shape, node.attrs["dimensions"])
        if q is not None:
            yield mk.reshape(mk.transpose(Class(x), q), node.type.shape)


# ---------------------------------------------------------------- constants


def splat_bitcast(value: np.ndarray, dst: DType) -> np.ndarray | None:
    """The element of ``dst`` that every element of bitcast-convert(a splat of ``value``) is,
    when that is a splat (equal widths, or all bytes of ``value`` equal, e.g. zero)."""
    raw = np.ascontiguousarray(value.reshape(1)).view(np.uint8)
    if dst.nbytes == value.dtype.itemsize:
        return raw.view(dst.np).reshape(())
    if (raw == raw[0]).all():
        return np.full(dst.nbytes, raw[0], np.uint8).view(dst.np).reshape(())
    return None


@axiom("bitcast-convert-splat", {"bitcast-convert"}, {"broadcast", "constant"}, watch_operands=1)
def bitcast_convert_splat(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """bitcast-convert(broadcast(v)) = broadcast(v') when every element of the result has the
    same bits v' (equal widths, or v's bytes all equal: zeroed tiles are zeroed bytes)."""
    x = node.children[0]
    if not (_viewable(view.type(x)) and _viewable(node.type)):
        return
    v = splat(view, x)
    w = None if v is None else splat_bitcast(v, node.type.dtype)
    if w is not None:
        mk = Make(view)
        yield mk.broadcast(mk.constant(w, node.type.dtype), node.type.shape, ())


# ---------------------------------------------------------------- strided stores


def store_rows(mk: Make, m: Arg, old: Arg, stride: int) -> Term:
    """The strided store semantics: the rows of ``m`` (u8[R, W]) written ``stride`` bytes
    apart over ``old`` (u8[(R - 1) * stride + W]), whose bytes between the rows are kept:
    slice(reshape(concatenate(m, slice(reshape(pad(old, hi = stride - W), [R, stride]),
    [0:R, W:stride]), dim 1), [R * stride]), [0 : (R - 1) * stride + W])."""
    rows, width = mk.type(m).shape
    oldf = mk.op("pad", [old, mk.scalar(0, u8)], {"padding": (PadDim(0, stride - width, 0),)})
    keep = mk.slice(mk.reshape(oldf, (rows, stride)), [SliceDim(0, rows, 1), SliceDim(width, stride, 1)])
    row = mk.op("concatenate", [m, keep], {"dimensions": (1,)})
    return mk.op("slice", [mk.reshape(row, (rows * stride,))], {"slice": (SliceDim(0, (rows - 1) * stride + width, 1),)})


Segment = tuple[Arg | None, int, int]  # (a byte vector, or None for undefined bytes; start in it; length)


def _segments_slice(segs: Sequence[Segment], lo: int, hi: int) -> list[Segment]:
    out, pos = [], 0
    for t, s, n in segs:
        a, b = max(lo, pos), min(hi, pos + n)
        if a < b:
            out.append((t, s + a - pos, b - a))
        pos += n
    return out


def _segments_term(mk: Make, segs: Sequence[Segment]) -> Arg:
    parts = [Term(UNDEF, TensorType(u8, (n,))) if t is None else mk.slice(t, [SliceDim(s, s + n, 1)])
             for t, s, n in segs]
    return mk.concat(parts, 0)


def strided_stores(mk: Make, pieces: Sequence[Arg], rows: int) -> Arg:
    """The bytes of a row-major u8[rows, S] made of column blocks ``pieces`` (u8[rows, W_k]),
    written by one strided store per block: block k, at column O_k, replaces the window
    [O_k, O_k + (rows - 1) * S + W_k) of what the stores before it left (its ``old``),
    starting from undefined bytes. Every byte is written by some store, so the result does
    not depend on the undefined ones."""
    widths = [mk.type(p).shape[1] for p in pieces]
    stride = sum(widths)
    state: list[Segment] = [(None, 0, rows * stride)]
    offset = 0
    for p, w in zip(pieces, widths):
        span = (rows - 1) * stride + w
        written = store_rows(mk, p, _segments_term(mk, _segments_slice(state, offset, offset + span)), stride)
        state = (_segments_slice(state, 0, offset) + [(written, 0, span)]
                 + _segments_slice(state, offset + span, rows * stride))
        offset += w
    return _segments_term(mk, state)


def _kept_bytes(view: View, c: ClassId) -> bool:
    """Is ``c`` the kept bytes of a strided store, slice(reshape(pad(old)))? Then the
    concatenation it ends is a store already, not a matrix to store."""
    return any(view.find(r.children[0], "pad") for s in view.find(c, "slice")
               for r in view.find(s.children[0], "reshape"))


@axiom("concat-strided-store", {"reshape"}, {"slice", "reshape", "pad", "concatenate", "constant", UNDEF},
       watch_operands=1)
def concat_strided_store(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reshape(concat(x_0, .., x_n, d)) to flat bytes (u8, d >= 1, at least two rows before d)
    = the blocks written one after another by strided read-modify-write stores
    (``strided_stores``): a row-major matrix tiled along its columns, stored tile by tile."""
    if node.type.rank != 1 or node.type.dtype != u8:
        return
    mk = Make(view)
    for cat in view.find(node.children[0], "concatenate"):
        (d,) = cat.attrs["dimensions"]
        rows = _prod(cat.type.shape[:d])
        if d == 0 or rows < 2 or _kept_bytes(view, cat.children[-1]):
            continue
        pieces = [mk.reshape(Class(k), (rows, _prod(view.type(k).shape[d:]))) for k in cat.children]
        yield strided_stores(mk, pieces, rows)
