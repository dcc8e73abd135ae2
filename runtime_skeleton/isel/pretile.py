"""Tiling to instruction size as a step before saturation.

A kernel larger than one instruction's operands enters the e-graph already cut into
the tiles its instructions compute, as XLA and TVM tile for a target, so the e-graph
starts from tiles instead of reaching them through slices pushed down every operator.

Each value of the kernel gets a block grid (``cuts``: per dimension the block bounds)
and a way to build any rectangular region of itself (``piece``):

- an operator some instruction computes (``tiles.instruction_tiles``: an element-wise
  operator, or a dot whose operand dtypes an instruction's dot reads) is built once per
  block of the instruction's size, from the regions of its operands it reads; an
  integer dot longer than the instruction's contraction is a wrapping sum of pieces
  (exact), a float dot keeps its contraction whole (a sum reordered is not the same sum);
- views and operators no instruction tiles (broadcast, reverse, transpose, slice,
  concatenate, reduce, converts and the other element-wise operators) are built per
  region asked for, from the same regions of their operands, so they follow the tiles
  of what reads them;
- a reverse or a reduce on a target none of whose instructions reverses or reduces
  (``ops``: the operators the instructions' semantics use) is cut to single elements
  along the reversed or reduced dimensions: a reverse becomes moves of rows, columns
  or elements (a reverse of extent 1 is its operand), one reversed dimension at a
  time; a reduce becomes a balanced tree of its combiner over the reductions of single
  elements (a sum's are the elements themselves; ``reduce-unit`` makes the others
  reshapes where the init is the combiner's identity), where splitting the reduction is
  exact: max, min, and, or, an integer sum from 0, and a float sum from 0 only when
  ``exact`` is False (the order of a float sum changes its rounding). AMX has no lane
  permute and no horizontal sum: reversing 16 floats took 29 s of saturation to fail
  whole, and the element moves were found only in 1x1 strip-mined tiles;
- anything else (reshape, pad, a kernel's inputs) stays whole, and a region of it is a slice.

A region that is one block is that block; one that spans blocks is a concatenation of
slices of them. Every step is an identity of the operators' meaning, so the tiled kernel
computes exactly what the kernel does (integer sums wrap alike however they are split;
float sums are reordered only when ``exact`` is False, as the inexact rules would).
``InstructionSelector`` adds the tiled kernel to the e-graph beside the kernel as
written, in one class, so no program the kernel as written leads to is lost.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..ir.attrs import SliceDim
from ..ir.graph import combiner
from ..ir.types import TensorType
from ..ir.ops import ELEMENTWISE
from . import bflat
from .axioms import Make, free_dims, is_zero, reduce_splits
from .isa_rules import store_writes
from .convert import reducer
from .terms import Term, post_order
from .tiles import MAX_PIECES, PASS_THROUGH, Tiles, aligned, permuted_bytes

Region = tuple[tuple[int, int], ...]  # per dimension [lo, hi)
Cuts = tuple[tuple[int, ...], ...]  # per dimension the block bounds: 0, ..., extent


@dataclass(eq=False)  # hashed by identity: the memo of pieces holds each value it is keyed by
class _Value:
    type: TensorType
    cuts: Cuts
    build: Callable[[Region], Term]  # the value over a region


def pretile(roots: Sequence[Term], tiles: Tiles, dots: frozenset[tuple[str, str, str]], ops: frozenset[str],
            exact: bool = True, narrowest: Mapping[int, int] | None = None) -> list[Term] | None:
    """``roots`` cut to the instructions' tiles; None when nothing is cut (every value
    fits one instruction) or a value would be cut into more than ``MAX_PIECES`` tiles.
    ``ops``: the operators the instructions compute; ``exact``: only cuts exact bit for bit;
    ``narrowest``: the fewest row bytes a store writes per element width (isa_rules.narrowest_stores)."""
    t = _Tiler(tiles, dots, ops, exact, narrowest or {})
    try:
        values = t.run(roots)
    except _TooMany:
        return None
    if not t.cut:
        return None
    return [t.whole(v) for v in values]


class _TooMany(Exception):
    pass


class _Tiler:
    def __init__(self, tiles: Tiles, dots: frozenset[tuple[str, str, str]], ops: frozenset[str], exact: bool,
                 narrowest: Mapping[int, int]):
        self.tiles, self.dots, self.ops, self.exact, self.narrowest = tiles, dots, ops, exact, narrowest
        self.mk = Make(None)  # type: ignore[arg-type]  # terms only: no e-graph classes
        self.values: dict[int, _Value] = {}
        self.memo: dict[tuple[_Value, Region], Term] = {}
        self.cut = False  # some value has more than one block

    def run(self, roots: Sequence[Term]) -> list[_Value]:
        for t in post_order(roots):
            self.values[id(t)] = self._value(t)
        return [self.values[id(r)] for r in roots]

    # -- regions of values

    def piece(self, v: _Value, region: Region) -> Term:
        key = (v, region)
        got = self.memo.get(key)
        if got is None:
            got = self.memo[key] = v.build(region)
        return got

    def whole(self, v: _Value) -> Term:
        return self.piece(v, _full(v.type.shape))

    def _of(self, t: Term) -> _Value:
        return self.values[id(t)]

    def _blocked(self, ty: TensorType, cuts: Cuts, block: Callable[[Region], Term]) -> _Value:
        """A value built block by block; other regions from slices of the blocks."""
        blocks: dict[Region, Term] = {}
        if math.prod(len(c) - 1 for c in cuts) > MAX_PIECES:
            raise _TooMany
        self.cut = self.cut or any(len(c) > 2 for c in cuts)

        def get(r: Region) -> Term:
            if r not in blocks:
                blocks[r] = block(r)
            return blocks[r]

        def build(region: Region) -> Term:
            return self._assemble(cuts, region, get)

        return _Value(ty, cuts, build)

    def _assemble(self, cuts: Cuts, region: Region, block: Callable[[Region], Term]) -> Term:
        """``region`` as a concatenation, dimension by dimension, of slices of the blocks it meets."""
        def go(d: int, outer: Region, inner: Region) -> Term:
            if d == len(cuts):
                b = block(outer)
                return self.mk.slice(b, [_dim(lo, hi) for lo, hi in inner])  # type: ignore[return-value]
            lo, hi = region[d]
            parts = []
            for a, b in zip(cuts[d], cuts[d][1:]):
                if b <= lo or a >= hi:
                    continue
                parts.append(go(d + 1, outer + ((a, b),), inner + ((max(lo, a) - a, min(hi, b) - a),)))
            return self.mk.concat(parts, d)  # type: ignore[return-value]

        return go(0, (), ())

    def _whole_value(self, t: Term) -> _Value:
        """``t`` over its operands whole; a region of it is a slice."""
        args = tuple(self.whole(self._of(a)) for a in t.args)  # type: ignore[arg-type]
        return self._sliced(t.type, Term(t.op, t.type, args, t.attrs))

    def _sliced(self, ty: TensorType, built: Term) -> _Value:
        """The term ``built`` uncut: a region of it is a slice."""
        return _Value(ty, _uncut(ty.shape), lambda r: self.mk.slice(built, [_dim(*x) for x in r]))

    # -- operators

    def _value(self, t: Term) -> _Value:
        if t.op == "dot":
            return self._dot(t)
        if t.op in ELEMENTWISE and t.type.rank:
            return self._elementwise(t)
        handler = {"broadcast": self._broadcast, "reverse": self._reverse, "transpose": self._transpose,
                   "slice": self._slice, "concatenate": self._concat, "reduce": self._reduce}.get(t.op)
        got = handler(t) if handler and t.type.rank else None
        return got or self._whole_value(t)

    def _elementwise(self, t: Term) -> _Value:
        ranked = [self._of(a) for a in t.args if a.type.rank]  # type: ignore[union-attr]

        def over(r: Region) -> Term:
            args = [self.piece(self._of(a), r) if a.type.rank else a for a in t.args]  # type: ignore[union-attr]
            return self.mk.op(t.op, args, dict(t.attrs), TensorType(t.type.dtype, _shape(r)))

        tile = None if t.op == "convert" else self._tile(t)  # a convert follows what reads it (a dot's cuts)
        if tile is None:
            return _Value(t.type, ranked[0].cuts if ranked else _uncut(t.type.shape), over)
        return self._blocked(t.type, _grid(t.type.shape, tile), over)

    def _tile(self, t: Term) -> tuple[int, ...] | None:
        """The largest tile an instruction computes ``t``'s operator at (an accumulating
        size only where an operand is a dot), aligned to its shape."""
        sizes = [e for e, _, on_dot in self.tiles.get((t.op, t.type.dtype.name), ())
                 if not on_dot or any(_dot_below(a) for a in t.args)]  # type: ignore[arg-type]
        fits = sorted({tuple(aligned(e, t.type.shape)) for e in sizes}, key=lambda s: (-math.prod(s), s))
        return fits[0] if fits else None

    def _dot(self, t: Term) -> _Value:
        a, b = t.args
        lb, lc, rb, rc = (tuple(t.attrs.get(k, ())) for k in
                          ("lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims"))
        lf, rf = free_dims(a.type.rank, lb, lc), free_dims(b.type.rank, rb, rc)  # type: ignore[union-attr]
        va, vb = self._of(a), self._of(b)  # type: ignore[arg-type]

        def operands(r: Region, k: tuple[int, int] | None) -> tuple[Term, Term]:
            ra, rb_ = list(_full(a.type.shape)), list(_full(b.type.shape))  # type: ignore[union-attr]
            for i, (x, y) in enumerate(zip(lb, rb)):
                ra[x] = rb_[y] = r[i]
            for i, x in enumerate(lf):
                ra[x] = r[len(lb) + i]
            for i, y in enumerate(rf):
                rb_[y] = r[len(lb) + len(lf) + i]
            if k is not None:
                ra[lc[0]] = rb_[rc[0]] = k
            return self.piece(va, tuple(ra)), self.piece(vb, tuple(rb_))

        def redot(x: Term, y: Term) -> Term:
            return self.mk.op("dot", [x, y], dict(t.attrs), TensorType(t.type.dtype, ()))

        def whole_k(r: Region) -> Term:
            return redot(*operands(r, None))

        sig = self._signature(t)
        if sig is None:  # no instruction's dot: the regions what reads it asks for, contraction whole
            return _Value(t.type, _uncut(t.type.shape), whole_k)
        tile, k = sig
        n = a.type.shape[lc[0]] if len(lc) == 1 else 0  # type: ignore[union-attr]
        if not (t.type.dtype.is_int and 0 < k < n):
            return self._blocked(t.type, _grid(t.type.shape, tile), whole_k)

        def summed(r: Region) -> Term:
            parts = [redot(*operands(r, (lo, min(lo + k, n)))) for lo in range(0, n, k)]
            total = parts[0]
            for p in parts[1:]:
                total = self.mk.op("add", [total, p])
            return total

        return self._blocked(t.type, _grid(t.type.shape, tile), summed)

    def _signature(self, t: Term) -> tuple[tuple[int, ...], int] | None:
        """(tile, contraction) of the instruction dot that reads ``t``'s operands' dtypes."""
        a, b = t.args
        r = t.type.dtype.name
        if not any((x, y, r) in self.dots for x in _read_dtypes(a) for y in _read_dtypes(b)):  # type: ignore[arg-type]
            return None
        sizes = sorted(self.tiles.get(("dot", r), ()))
        if not sizes:
            return None
        e, k, _ = sizes[-1]
        return tuple(aligned(e, t.type.shape)), int(min(k, 2**62))

    def _broadcast(self, t: Term) -> _Value:
        (x,) = t.args
        dims = tuple(t.attrs["dimensions"])
        vx = self._of(x)  # type: ignore[arg-type]
        cuts = list(_uncut(t.type.shape))
        for i, d in enumerate(dims):
            if x.type.shape[i] == t.type.shape[d]:  # type: ignore[union-attr]
                cuts[d] = vx.cuts[i]

        def over(r: Region) -> Term:
            inner = tuple(r[d] if x.type.shape[i] == t.type.shape[d] else (0, 1)  # type: ignore[union-attr]
                          for i, d in enumerate(dims))
            return self.mk.broadcast(self.piece(vx, inner), _shape(r), dims)  # type: ignore[return-value]

        return _Value(t.type, tuple(cuts), over)

    def _reverse(self, t: Term) -> _Value:
        (x,) = t.args
        rev = sorted(t.attrs["dimensions"])
        vx = self._of(x)  # type: ignore[arg-type]
        if "reverse" in self.ops:
            return self._reversed(t.type, vx, set(rev), lambda piece: self.mk.op("reverse", [piece], dict(t.attrs)))
        # Slabs along a dimension narrower than any store of their element width cannot be moved
        # one by one (Gemmini moves rows of 16 lanes): the reverse along those stays an operator,
        # for the rules to compute otherwise (reverse-as-byte-dot), in blocks of the lanes one
        # int8 dot permutes (a reverse of 16 s32 lanes on Gemmini: four reverses of 4).
        kept = [d for d in rev if self._unmovable(t.type, d)]
        if kept:
            vx = self._lane_reversed(t.type, vx, kept)
            rev = [d for d in rev if d not in kept]
            if not rev:
                return vx
        for i, d in enumerate(rev):  # one dimension at a time: n + m moves for both of an n x m value, not n * m
            if i:  # the previous dimension's moves assembled, then sliced by this one's
                vx = self._sliced(t.type, self.whole(vx))
            vx = self._reversed(t.type, vx, {d}, None)
        if all(n == 1 for n in t.type.shape[rev[-1] + 1:]):
            # Elements reversed within a row: the result lies nowhere in its operand's bytes, so it
            # is stored (element by element) and read back by what reads it; hbm-round-trip does
            # not add that round trip to values that only move the inputs.
            vx = self._sliced(t.type, bflat.unflatten(bflat.flatten(self.whole(vx), t.type), t.type))
        return vx

    def _lane_reversed(self, ty: TensorType, vx: _Value, kept: list[int]) -> _Value:
        """``vx`` reversed along ``kept`` by reverse operators, the last dimension cut into
        blocks of ``_lane_block`` elements (block k of the result reverses the mirrored block)."""
        shape, last = ty.shape, len(ty.shape) - 1
        block = self._lane_block(ty)
        mirrored = _Mirror(shape, frozenset(kept))
        cuts = tuple(tuple(range(0, n + 1, block)) if d == last and block else c
                     for d, (n, c) in enumerate(zip(shape, mirrored.cuts(vx.cuts))))
        attrs = {"dimensions": tuple(kept)}
        return self._blocked(ty, cuts, lambda r: self.mk.op("reverse", [self.piece(vx, mirrored(r))], attrs))

    def _lane_block(self, ty: TensorType) -> int | None:
        """Elements of ``ty``'s last dimension whose bytes one int8 dot permutes
        (``permuted_bytes``; None: no such dot, or the dimension is no whole number of blocks)."""
        block = (permuted_bytes(self.tiles, self.dots) or 0) // ty.dtype.nbytes
        return block if block and ty.shape[-1] % block == 0 and block < ty.shape[-1] else None

    def _unmovable(self, ty: TensorType, d: int) -> bool:
        """Whether the slabs of ``ty`` along ``d`` are narrower than every store of their element width."""
        width = ty.dtype.nbytes
        return not store_writes(self.narrowest, width, width * math.prod(ty.shape[d + 1:]))

    def _reversed(self, ty: TensorType, vx: _Value, rev: set[int], op: Callable[[Term], Term] | None) -> _Value:
        """``vx`` reversed along ``rev``: each region by ``op`` over the mirrored region
        of ``vx``, or (``op`` None) block by block, single elements along ``rev``."""
        shape = ty.shape
        mirrored = _Mirror(shape, frozenset(rev))
        if op is None:
            cuts = tuple(tuple(range(shape[d] + 1)) if d in rev else vx.cuts[d] for d in range(len(shape)))
            return self._blocked(ty, cuts, lambda r: self.piece(vx, mirrored(r)))
        return _Value(ty, mirrored.cuts(vx.cuts), lambda r: op(self.piece(vx, mirrored(r))))

    def _transpose(self, t: Term) -> _Value:
        (x,) = t.args
        perm = tuple(t.attrs["dimensions"])
        vx = self._of(x)  # type: ignore[arg-type]

        def over(r: Region) -> Term:
            inner = [None] * len(perm)
            for j, p in enumerate(perm):
                inner[p] = r[j]
            return self.mk.op("transpose", [self.piece(vx, tuple(inner))], dict(t.attrs))  # type: ignore[arg-type]

        return _Value(t.type, tuple(vx.cuts[p] for p in perm), over)

    def _slice(self, t: Term) -> _Value | None:
        (x,) = t.args
        spec = t.attrs["slice"]
        if any(s.stride != 1 for s in spec):
            return None
        vx = self._of(x)  # type: ignore[arg-type]
        cuts = tuple(tuple(sorted({0, s.limit - s.start} | {c - s.start for c in cs if s.start < c < s.limit}))
                     for s, cs in zip(spec, vx.cuts))

        def over(r: Region) -> Term:
            return self.piece(vx, tuple((s.start + lo, s.start + hi) for s, (lo, hi) in zip(spec, r)))

        return _Value(t.type, cuts, over)

    def _concat(self, t: Term) -> _Value:
        (d,) = t.attrs["dimensions"]
        parts, at = [], 0
        for a in t.args:
            n = a.type.shape[d]  # type: ignore[union-attr]
            parts.append((at, at + n, self._of(a)))  # type: ignore[arg-type]
            at += n
        cuts = list(parts[0][2].cuts)
        cuts[d] = tuple(sorted({c + lo for lo, _, v in parts for c in v.cuts[d]}))

        def over(r: Region) -> Term:
            lo, hi = r[d]
            pieces = [self.piece(v, r[:d] + ((max(lo, a) - a, min(hi, b) - a),) + r[d + 1:])
                      for a, b, v in parts if a < hi and b > lo]
            return self.mk.concat(pieces, d)  # type: ignore[return-value]

        return _Value(t.type, tuple(cuts), over)

    def _reduce(self, t: Term) -> _Value | None:
        x, init = t.args
        if init.type.rank or x.type.rank == 0:  # type: ignore[union-attr]
            return None
        red = set(t.attrs["dimensions"])
        kept = [d for d in range(x.type.rank) if d not in red]  # type: ignore[union-attr]
        vx = self._of(x)  # type: ignore[arg-type]
        name = t.attrs["to_apply"]
        combine = None if "reduce" in self.ops else self._splittable(t, init)  # type: ignore[arg-type]
        red_dims = sorted(red)
        units = list(itertools.product(*(range(x.type.shape[d]) for d in red_dims)))  # type: ignore[union-attr]
        if combine is not None and len(units) > MAX_PIECES:
            raise _TooMany
        self.cut = self.cut or (combine is not None and len(units) > 1)

        def reduced(inner: Region) -> Term:
            if combine == "add":  # from 0 (_splittable): a sum of one element is that element
                return self.mk.reshape(self.piece(vx, inner), [hi - lo for d, (lo, hi) in enumerate(inner)
                                                               if d not in red])  # type: ignore[return-value]
            return self.mk.op("reduce", [self.piece(vx, inner), init], dict(t.attrs),
                              computations={name: reducer(name)})

        def over(r: Region) -> Term:
            inner = list(_full(x.type.shape))  # type: ignore[union-attr]
            for d, span in zip(kept, r):
                inner[d] = span
            if combine is None:
                return reduced(tuple(inner))
            parts = []
            for unit in units:
                for d, i in zip(red_dims, unit):
                    inner[d] = (i, i + 1)
                parts.append(reduced(tuple(inner)))
            return self._tree(combine, parts)

        return _Value(t.type, tuple(vx.cuts[d] for d in kept), over)

    def _splittable(self, t: Term, init: Term) -> str | None:
        """The reduce's combiner when its reduction may be split into parts combined by it
        (the conditions of the reduce-split-reduced axioms, the float one when not ``exact``), else None."""
        op = combiner(reducer(t.attrs["to_apply"]))
        value = init.attrs["literal"].array if init.op == "constant" else None
        float_sum = op == "add" and t.type.dtype.is_float and is_zero(value) and not self.exact
        return op if reduce_splits(op, value, t.type.dtype) or float_sum else None

    def _tree(self, op: str, parts: list[Term]) -> Term:
        """``op`` over ``parts`` as a balanced tree (independent halves: the sums can overlap)."""
        while len(parts) > 1:
            parts = [self.mk.op(op, parts[i:i + 2]) if i + 1 < len(parts) else parts[i]
                     for i in range(0, len(parts), 2)]
        return parts[0]


def _dot_below(t: Term) -> bool:
    while t.op in PASS_THROUGH and t.args:
        t = t.args[0]  # type: ignore[assignment]
    return t.op == "dot"


def _read_dtypes(t: Term) -> set[str]:
    """The dtypes ``t`` holds its value in: its own, and before a convert."""
    return {t.type.dtype.name} | ({t.args[0].type.dtype.name} if t.op == "convert" else set())  # type: ignore[union-attr]


@dataclass(frozen=True)
class _Mirror:
    """Regions and cuts of a value of ``shape`` mirrored along the dimensions ``rev``."""
    shape: tuple[int, ...]
    rev: frozenset[int]

    def __call__(self, r: Region) -> Region:
        return tuple((self.shape[d] - hi, self.shape[d] - lo) if d in self.rev else (lo, hi)
                     for d, (lo, hi) in enumerate(r))

    def cuts(self, cuts: Cuts) -> Cuts:
        return tuple(tuple(sorted(n - c for c in cs)) if d in self.rev else cs
                     for d, (n, cs) in enumerate(zip(self.shape, cuts)))


def _grid(shape: Sequence[int], tile: Sequence[int]) -> Cuts:
    return tuple(tuple(range(0, n, max(1, s))) + (n,) for n, s in zip(shape, tile))


def _uncut(shape: Sequence[int]) -> Cuts:
    return tuple((0, n) for n in shape)


def _full(shape: Sequence[int]) -> Region:
    return tuple((0, n) for n in shape)


def _shape(r: Region) -> tuple[int, ...]:
    return tuple(hi - lo for lo, hi in r)


def _dim(lo: int, hi: int) -> SliceDim:
    return SliceDim(lo, hi, 1)
