"""Axe layouts: logical coordinates to named physical axes (Axe §3, Appendices A-F).

A layout L = (D, R, O) is an ordered tuple of *iters* D (the shard), a multiset of
iters R (the replicas) and an offset O. An iter (extent e, stride s, axis a)
generates {0, s, ..., (e-1)s} on axis a. A logical index x in [0, E), E = the
product of D's extents, is unflattened mixed-radix with the first iter the most
significant digit, and maps to the set

    f_L(x) = { sum_k digit_k(x) * s_k @ a_k  +  r  +  O   :   r in R's points }.

A layout does not carry its logical shape: a caller admits a shape S whose
product is E and indexes it row-major. Axes are names: ``m`` for bytes of
memory, ``row``/``col`` for a scratchpad's rows and the bytes in a row, AMX tile
rows and VNNI groups, and so on.

What is here: canonical forms and equality (App. A), grouping by a shape
(App. B), tiling as a Kronecker product (App. C), box slices (App. E), the
direct sum (App. F), and, for layouts onto one axis, functional composition
and the inverse of a bijection (which the paper leaves out and byte-flattening
needs: a tile's own bytes placed in its whole tensor's bytes).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Iterable, Mapping

import numpy as np

from ..errors import ActgenError

MEMORY = "m"

Vec = tuple[tuple[str, int], ...]  # a point of Z^axes: sorted (axis, value), no zeros


class LayoutError(ActgenError):
    """The layout operation is not defined for these operands; the message says why."""


def vec(values: Mapping[str, int] | Iterable[tuple[str, int]]) -> Vec:
    acc: dict[str, int] = {}
    for a, v in (values.items() if isinstance(values, Mapping) else values):
        acc[a] = acc.get(a, 0) + v
    return tuple(sorted((a, v) for a, v in acc.items() if v))


def add(*vs: Vec) -> Vec:
    return vec([p for v in vs for p in v])


@dataclass(frozen=True, order=True)
class Iter:
    extent: int
    stride: int
    axis: str = MEMORY

    def __post_init__(self) -> None:
        if self.extent < 1:
            raise LayoutError(f"iter extent {self.extent} < 1")

    def scaled(self, k: int) -> Iter:
        return Iter(self.extent, self.stride * k, self.axis)

    def __str__(self) -> str:
        return f"{self.extent}:{self.stride}@{self.axis}"


@dataclass(frozen=True)
class Layout:
    shard: tuple[Iter, ...]
    replica: tuple[Iter, ...] = ()
    offset: Vec = field(default=())

    # -- construction -------------------------------------------------------------------------
    @staticmethod
    def strided(*pairs: tuple[int, int], axis: str = MEMORY) -> Layout:
        """S[(e0, e1, ...):(s0, s1, ...)] on one axis."""
        return Layout(tuple(Iter(e, s, axis) for e, s in pairs))

    @staticmethod
    def row_major(shape: Iterable[int], axis: str = MEMORY, unit: int = 1) -> Layout:
        """The compact row-major layout of ``shape`` (strides in multiples of ``unit``)."""
        shape = tuple(shape)
        strides, step = [], unit
        for e in reversed(shape):
            strides.append(step)
            step *= e
        return Layout.strided(*zip(shape, reversed(strides)), axis=axis)

    def __str__(self) -> str:
        s = "S[" + ", ".join(map(str, self.shard)) + "]"
        if self.replica:
            s += " + R[" + ", ".join(map(str, self.replica)) + "]"
        if self.offset:
            s += " + " + " + ".join(f"{v}@{a}" for a, v in self.offset)
        return s

    # -- the induced map ---------------------------------------------------------------------
    @property
    def size(self) -> int:
        return math.prod(i.extent for i in self.shard)

    @property
    def axes(self) -> frozenset[str]:
        return frozenset(i.axis for i in self.shard + self.replica) | {a for a, _ in self.offset}

    def digits(self, x: int) -> tuple[int, ...]:
        if not 0 <= x < self.size:
            raise LayoutError(f"index {x} outside the layout's domain [0, {self.size})")
        out = []
        for it in reversed(self.shard):
            x, d = divmod(x, it.extent)
            out.append(d)
        return tuple(reversed(out))

    def apply(self, x: int) -> Vec:
        """f_D(x) + O: the point of x without replicas."""
        return add(self.offset, vec((it.axis, d * it.stride) for it, d in zip(self.shard, self.digits(x))))

    def points(self, x: int) -> frozenset[Vec]:
        """f_L(x): every copy of x."""
        base = self.apply(x)
        pts = {base}
        for it in self.replica:
            pts = {add(p, ((it.axis, k * it.stride),)) for p in pts for k in range(it.extent)}
        return frozenset(pts)

    def at(self, coords: Iterable[int], shape: Iterable[int]) -> Vec:
        """f_D of a logical coordinate under the admitted shape (row-major)."""
        x = 0
        for c, n in zip(coords, shape, strict=True):
            if not 0 <= c < n:
                raise LayoutError(f"coordinate {tuple(coords)} outside shape {tuple(shape)}")
            x = x * n + c
        return self.apply(x)

    def offsets(self, axis: str = MEMORY) -> np.ndarray:
        """f_D(x) + O on ``axis`` for every x in order (an int64 vector of length E)."""
        off = np.full((), dict(self.offset).get(axis, 0), dtype=np.int64)
        for it in self.shard:
            step = np.arange(it.extent, dtype=np.int64) * (it.stride if it.axis == axis else 0)
            off = off[..., None] + step
        return off.reshape(-1)

    def span(self, axis: str = MEMORY) -> int:
        """max - min + 1 over every point on ``axis`` (Lemma C.1)."""
        return 1 + sum((it.extent - 1) * abs(it.stride) for it in self.shard + self.replica if it.axis == axis)

    def spans(self) -> dict[str, int]:
        return {a: self.span(a) for a in sorted(self.axes)}

    # -- canonical form and equality (App. A) ----------------------------------------------------
    def canonical(self) -> Layout:
        shard: list[Iter] = []
        for it in self.shard:
            if it.extent == 1:
                continue
            if it.stride == 0:
                it = Iter(it.extent, 0, MEMORY)  # a broadcast digit: its axis is immaterial
            if shard and shard[-1].axis == it.axis and shard[-1].stride == it.extent * it.stride:
                it = Iter(shard.pop().extent * it.extent, it.stride, it.axis)
            shard.append(it)
        offset = dict(self.offset)
        rep: list[Iter] = []
        for it in self.replica:
            if it.extent == 1 or it.stride == 0:
                continue
            if it.stride < 0:
                offset[it.axis] = offset.get(it.axis, 0) + (it.extent - 1) * it.stride
                it = Iter(it.extent, -it.stride, it.axis)
            rep.append(it)
        return Layout(tuple(shard), _absorb(rep), vec(offset))

    def same(self, other: Layout) -> bool:
        """Whether the two layouts induce the same map (Thm A.14: compare canonical forms)."""
        return self.canonical() == other.canonical()

    # -- group (App. B) ------------------------------------------------------------------------
    def group(self, shape: Iterable[int]) -> tuple[Layout, tuple[int, ...]]:
        """D split and fused, without reordering, into consecutive blocks whose extents
        multiply to ``shape``; returns the layout and the block boundaries."""
        shape = tuple(shape)
        if math.prod(shape) != self.size:
            raise LayoutError(f"shape {shape} does not match the layout's {self.size} elements")
        try:
            return self, _seps(_exact_blocks(self.shard, shape))
        except LayoutError:
            pass
        todo = [it for it in self.canonical().shard]
        out: list[Iter] = []
        seps = [0]
        for need in shape:
            while need > 1:
                if not todo:
                    raise LayoutError(f"{self} does not group by {shape}")
                it = todo.pop(0)
                if need % it.extent == 0:
                    out.append(it)
                    need //= it.extent
                elif it.extent % need == 0:
                    rest = it.extent // need
                    out.append(Iter(need, it.stride * rest, it.axis))
                    todo.insert(0, Iter(rest, it.stride, it.axis))
                    need = 1
                else:
                    raise LayoutError(f"{self} does not group by {shape}: {it} straddles a dimension")
            seps.append(len(out))
        return replace(self, shard=tuple(out)), tuple(seps)

    def blocks(self, shape: Iterable[int]) -> list[tuple[Iter, ...]]:
        """The grouped iters of each dimension of ``shape`` (D's own iters when they
        already group that way, extent-1 iters included)."""
        g, seps = self.group(shape)
        return [g.shard[a:b] for a, b in zip(seps, seps[1:])]

    def scaled(self, factor: int) -> Layout:
        """Every stride and the offset times ``factor`` (elements -> bytes, say)."""
        return Layout(tuple(i.scaled(factor) for i in self.shard), tuple(i.scaled(factor) for i in self.replica),
                      vec((a, v * factor) for a, v in self.offset))

    # -- slice (App. E) ------------------------------------------------------------------------
    def slice(self, shape: Iterable[int], begin: Iterable[int], extents: Iterable[int]) -> Layout:
        """The layout L' over ``extents`` with f_L'(y) = f_L(begin + y) (a box of ``shape``)."""
        shape, begin, extents = tuple(shape), tuple(begin), tuple(extents)
        if not all(0 <= b and 0 < n and b + n <= s for s, b, n in zip(shape, begin, extents, strict=True)):
            raise LayoutError(f"box at {begin} of {extents} is outside {shape}")
        out: list[Iter] = []
        for dim, (block, b, n) in enumerate(zip(self.blocks(shape), begin, extents)):
            out += _slice_block(block, b, n, dim)
        return Layout(tuple(out), self.replica, self.at(begin, shape))


def _exact_blocks(shard: tuple[Iter, ...], shape: tuple[int, ...]) -> list[tuple[Iter, ...]]:
    """D cut, as it is, into consecutive runs whose extents multiply to ``shape``.
    A dimension of extent 1 takes one extent-1 iter when one comes next; extent-1
    iters left at the end join the last run."""
    out: list[tuple[Iter, ...]] = []
    k = 0
    for need in shape:
        run: list[Iter] = []
        if need == 1 and k < len(shard) and shard[k].extent == 1:
            run.append(shard[k])
            k += 1
        while need > 1 and k < len(shard) and need % shard[k].extent == 0:
            need //= shard[k].extent
            run.append(shard[k])
            k += 1
        if need != 1:
            raise LayoutError(f"{shard} does not group by {shape} as it is")
        out.append(tuple(run))
    if any(it.extent != 1 for it in shard[k:]) or (shard[k:] and not out):
        raise LayoutError(f"{shard} does not group by {shape} as it is")
    if shard[k:]:
        out[-1] += tuple(shard[k:])
    return out


def _seps(blocks: list[tuple[Iter, ...]]) -> tuple[int, ...]:
    seps = [0]
    for b in blocks:
        seps.append(seps[-1] + len(b))
    return tuple(seps)


def _absorb(rep: list[Iter]) -> tuple[Iter, ...]:
    """C2: (e1, sigma) and (e2, k*sigma) on one axis, 1 <= k <= e1, are one iter."""
    changed = True
    while changed:
        changed = False
        rep.sort(key=lambda i: (i.axis, i.stride, i.extent))
        for i, a in enumerate(rep):
            for j, b in enumerate(rep):
                if i != j and a.axis == b.axis and b.stride % a.stride == 0 and \
                        (i < j or b.stride != a.stride) and 1 <= b.stride // a.stride <= a.extent:
                    k = b.stride // a.stride
                    merged = Iter((b.extent - 1) * k + a.extent, a.stride, a.axis)
                    rep = [x for n, x in enumerate(rep) if n not in (i, j)] + [merged]
                    changed = True
                    break
            if changed:
                break
    return tuple(sorted(rep, key=lambda i: (i.axis, i.stride, i.extent)))


def _slice_block(block: tuple[Iter, ...], begin: int, length: int, dim: int) -> list[Iter]:
    digits, x = [], begin
    for it in reversed(block):
        x, d = divmod(x, it.extent)
        digits.append(d)
    digits.reverse()
    k = len(block) - 1
    peeled: list[Iter] = []
    while length > 1 and k >= 0 and digits[k] == 0 and length % block[k].extent == 0:
        peeled.insert(0, block[k])
        length //= block[k].extent
        k -= 1
    if length == 1:
        return peeled
    pivot = block[k]
    if digits[k] + length <= pivot.extent:
        return [Iter(length, pivot.stride, pivot.axis)] + peeled
    half = length // 2
    if length % 2 == 0 and digits[k] + half == pivot.extent and k > 0 and digits[k - 1] + 1 < block[k - 1].extent \
            and block[k - 1].axis == pivot.axis:
        wrap = Iter(2, block[k - 1].stride - digits[k] * pivot.stride, pivot.axis)
        return [wrap, Iter(half, pivot.stride, pivot.axis)] + peeled
    raise LayoutError(f"a box of {length} from {begin} along dimension {dim} is not one layout "
                      f"(it wraps around {pivot})")


# -- tile (App. C) and direct sum (App. F) ------------------------------------------------------
def direct_sum(outer: Layout, outer_shape: Iterable[int], inner: Layout, inner_shape: Iterable[int]) -> Layout:
    """f(x) = f_outer(o) + f_inner(i) on the interleaved domain x_d = o_d * inner_d + i_d."""
    ob, ib = outer.blocks(outer_shape), inner.blocks(inner_shape)
    if len(ob) != len(ib):
        raise LayoutError(f"rank {len(ob)} and rank {len(ib)} layouts do not combine")
    shard = tuple(it for o, i in zip(ob, ib) for it in o + i)
    return Layout(shard, outer.replica + inner.replica, add(outer.offset, inner.offset))


def tile(inner: Layout, inner_shape: Iterable[int], outer: Layout, outer_shape: Iterable[int]) -> Layout:
    """The Kronecker product: tiles laid out by ``outer``, each one by ``inner``,
    ``outer`` scaled by inner's span so that tiles do not overlap."""
    sigma = inner.spans()

    def scale(it: Iter) -> Iter:
        return it.scaled(sigma.get(it.axis, 1))

    scaled = Layout(tuple(map(scale, outer.shard)), tuple(map(scale, outer.replica)),
                    vec((a, v * sigma.get(a, 1)) for a, v in outer.offset))
    return direct_sum(scaled, outer_shape, inner, inner_shape)


def tiled_shape(inner_shape: Iterable[int], outer_shape: Iterable[int]) -> tuple[int, ...]:
    return tuple(i * o for i, o in zip(inner_shape, outer_shape, strict=True))


# -- composition and inverse (layouts onto one axis) --------------------------------------------
def identity(n: int, axis: str = MEMORY) -> Layout:
    return Layout.strided((n, 1), axis=axis)


def compose(outer: Layout, inner: Layout) -> Layout:
    """outer ∘ inner: x -> f_outer(f_inner(x)), where inner maps onto one axis whose
    integers are outer's domain. Defined when every iter of inner lands on outer's
    digits without carries (each digit's total reach stays below its extent)."""
    axes = {it.axis for it in inner.shard + inner.replica if it.extent > 1 and it.stride} | \
        {a for a, _ in inner.offset}
    if len(axes) > 1:
        raise LayoutError(f"{inner} maps onto several axes; only a layout onto one axis composes")
    digits = list(reversed(outer.canonical().shard)) or [Iter(1, 0)]  # least significant first
    reach = [0] * len(digits)
    base = dict(inner.offset).get(next(iter(axes), MEMORY), 0)
    if not 0 <= base < outer.size:
        raise LayoutError(f"offset {base} of {inner} is outside {outer}'s domain")
    rest = base
    for j, d in enumerate(digits):
        rest, reach[j] = divmod(rest, d.extent)
    start = tuple(reach)

    def expand(it: Iter) -> list[Iter]:
        if it.extent == 1:
            return []
        if it.stride == 0:
            return [Iter(it.extent, 0)]
        if it.stride < 0:
            raise LayoutError(f"{it}: negative strides do not compose")
        j, c = 0, it.stride
        while j < len(digits) and c % digits[j].extent == 0:
            c //= digits[j].extent
            j += 1
        out, left = [], it.extent
        while left > 1:
            if j == len(digits):
                raise LayoutError(f"{it} of {inner} runs past {outer}'s domain")
            d = digits[j]
            if (left - 1) * c < d.extent:
                out.append(Iter(left, c * d.stride, d.axis))
                reach[j] += (left - 1) * c
                break
            if d.extent % c or left % (d.extent // c):
                raise LayoutError(f"{it} of {inner} does not divide {d} of {outer}")
            cap = d.extent // c
            out.append(Iter(cap, c * d.stride, d.axis))
            reach[j] += (cap - 1) * c
            left //= cap
            j, c = j + 1, 1
        return list(reversed(out))

    shard = tuple(x for it in inner.shard for x in expand(it))
    rep = tuple(x for it in inner.replica for x in expand(it))
    for j, d in enumerate(digits):
        if reach[j] >= d.extent:
            raise LayoutError(f"{inner} carries across {d} of {outer} (not one layout)")
    offset = add(outer.offset, vec((d.axis, s * d.stride) for d, s in zip(digits, start)))
    return Layout(shard, outer.replica + rep, offset)


def inverse(layout: Layout) -> Layout:
    """The inverse of a bijection of [0, E) onto [0, E) on one axis."""
    c = layout.canonical()
    if c.replica or c.offset or len({it.axis for it in c.shard}) > 1:
        raise LayoutError(f"{layout} is not a bijection onto one axis")
    suffix, p = [], 1
    for it in reversed(c.shard):
        suffix.append(p)
        p *= it.extent
    suffix.reverse()
    order = sorted(range(len(c.shard)), key=lambda k: -c.shard[k].stride)
    step = 1
    for k in reversed(order):
        if c.shard[k].stride != step:
            raise LayoutError(f"{layout} is not a bijection onto [0, {c.size}) (stride {c.shard[k].stride})")
        step *= c.shard[k].extent
    axis = c.shard[0].axis if c.shard else MEMORY
    return Layout(tuple(Iter(c.shard[k].extent, suffix[k], axis) for k in order))
