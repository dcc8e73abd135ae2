"""Double buffering: a loop unrolled by two, the second copy's iteration-private
on-chip data at other addresses, so that one iteration's loads overlap the
previous iteration's compute (Axon §4.6's software pipelining, here left to the
engines: the timing model runs each engine in issue order and an instruction
waits only for the slices it reads and overwrites).

In one iteration of a loop body, a cell of an on-chip buffer is *carried* when
it is read before the iteration writes it (a reduction's accumulator); every
other cell the body touches is *private*: written, then read, within the
iteration. Private data of a buffer moves, in the second copy, by the smallest
shift that keeps it inside the buffer, clear of every cell the program uses,
and aligned as the original addresses are. A buffer with a slice that mixes
carried and private cells is left as it is. The copies alternate so that the
last iteration is always the unmoved one: whatever the loop leaves for later
code is where that code reads it. On-chip addresses here never depend on loop
variables (only HBM addresses move with the loop); a loop where one does is
left as it is.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import ActgenError
from ..program import Affine, Attr, ConcreteInstr, Item, Loop
from ..target import TargetDef
from .addressing import Rect, slices_at, start_attr


@dataclass(frozen=True)
class _Access:
    instr: ConcreteInstr
    slot: int  # slice index in h(): 0 the output, then the inputs
    buffer: str
    rect: Rect
    write: bool
    pos: int  # the instruction's place in the walk (nested loops walked once)
    attrs: dict[str, int] = field(compare=False, default_factory=dict)  # evaluated where it was walked


class _Varying(Exception):
    """An on-chip address depends on a loop variable."""


def double_buffered(target: TargetDef, items: list[Item]) -> list[Item]:
    """The items with every loop that gains from it double-buffered (innermost first)."""
    used = {b.name: np.zeros(b.access_shape, bool) for b in target.buffers.values() if not b.is_hbm}
    try:
        for a in _accesses(target, items, {}):
            used[a.buffer][a.rect] = True
    except _Varying:
        return items
    return _walk(target, items, used, {})


def _walk(target: TargetDef, items, used: dict[str, np.ndarray], env: dict[str, int]) -> list[Item]:
    out: list[Item] = []
    for it in items:
        if not isinstance(it, Loop):
            out.append(it)
            continue
        inner = {**env, it.var: it.start}
        it = replace(it, body=tuple(_walk(target, it.body, used, inner)))
        out += _unrolled(target, it, used, inner)
    return out


def _accesses(target: TargetDef, items, env: dict[str, int], walk=None):
    """The on-chip slices the items access, in order, nested loops walked once."""
    walk = itertools.count() if walk is None else walk
    for it in items:
        if isinstance(it, Loop):
            if it.trips:
                yield from _accesses(target, it.body, {**env, it.var: it.start}, walk)
            continue
        pos = next(walk)
        here = _onchip(target, it, env, pos)
        if any(here != _onchip(target, it, {**env, v: k + 1}, pos) for v, k in env.items()):
            raise _Varying
        reads = [a for a in here if not a.write]
        yield from reads + [a for a in here if a.write]


def _onchip(target: TargetDef, ci: ConcreteInstr, env: dict[str, int], pos: int) -> list[_Access]:
    attrs, boxes = slices_at(target, ci, env)
    return [_Access(ci, j, b, rect, j == 0, pos, attrs) for j, b, rect in boxes if not target.buffers[b].is_hbm]


def _unrolled(target: TargetDef, loop: Loop, used: dict[str, np.ndarray], env: dict[str, int]) -> list[Item]:
    """The loop as pairs of iterations (the first copy's private data moved), or as it is."""
    if loop.trips < 2:
        return [loop]
    try:
        accesses = list(_accesses(target, loop.body, env))
    except _Varying:
        return [loop]
    shifts = {b: s for b in used if (s := _shift(b, accesses, used[b])) is not None}
    moves = _moves(target, accesses, shifts)
    if not moves:
        return [loop]
    for a in accesses:
        if a.buffer in shifts and _private(a, shifts):
            used[a.buffer][_moved_rect(a.rect, shifts[a.buffer][0])] = True
    moved = tuple(_move(loop.body, moves, itertools.count()))
    return _pairs(loop, moved)


def _carried(accesses: list[_Access], buffer: str, shape: tuple[int, ...]) -> np.ndarray:
    """Cells of ``buffer`` the iteration reads before it writes them."""
    written, carried = np.zeros(shape, bool), np.zeros(shape, bool)
    for a in (a for a in accesses if a.buffer == buffer):
        if a.write:
            written[a.rect] = True
        else:
            carried[a.rect] |= ~written[a.rect]
    return carried


def _shift(buffer: str, accesses: list[_Access], used: np.ndarray):
    """(rows to move the buffer's private slices by, their accesses), or None when
    it has none, a slice mixes carried and private cells, or there is no room."""
    mine = [a for a in accesses if a.buffer == buffer]
    carried = _carried(mine, buffer, used.shape)
    private = []
    for a in mine:
        c = carried[a.rect]
        if c.any() and not c.all():
            return None
        if not c.any():
            private.append(a)
    if not private:
        return None
    cells = np.zeros(used.shape, bool)
    for a in private:
        cells[a.rect] = True
    rows = np.flatnonzero(cells.reshape(cells.shape[0], -1).any(axis=1))
    starts = [a.rect[0].start for a in private]
    # the largest power of two dividing every start, so the moved addresses stay as aligned
    # (all at 0: the power of two that covers the data)
    align = math.gcd(*starts) or 1 << int(rows[-1]).bit_length()
    align &= -align
    for by in range(align, used.shape[0] - int(rows[-1]), align):
        if not (used[by:] & cells[:used.shape[0] - by]).any():
            return by, frozenset(id(a) for a in private)
    return None


def _private(a: _Access, shifts) -> bool:
    return id(a) in shifts[a.buffer][1]


def _moved_rect(rect: Rect, by: int) -> Rect:
    return (slice(rect[0].start + by, rect[0].stop + by),) + rect[1:]


def _moves(target: TargetDef, accesses: list[_Access], shifts) -> dict[int, dict[str, int]]:
    """Per instruction (its position in the walk), attribute -> units to add, such
    that exactly the private slices move and by their buffer's shift ({} when an
    attribute would move something else too)."""
    by_instr: dict[int, list[_Access]] = {}
    for a in accesses:
        by_instr.setdefault(a.pos, []).append(a)
    moves: dict[int, dict[str, int]] = {}
    for pos, mine in by_instr.items():
        ci = mine[0].instr
        ins = target.instructions[ci.name]
        attrs = mine[0].attrs
        want = {a.slot: shifts[a.buffer][0] for a in mine if a.buffer in shifts and _private(a, shifts)}
        if not want:
            continue
        add: dict[str, int] = {}
        for slot, by in want.items():
            try:
                name, per = start_attr(ins, attrs, slot)
            except ActgenError:
                return {}
            if by % per or add.setdefault(name, by // per) != by // per:
                return {}
        before, after = ins.h(attrs), ins.h({**attrs, **{k: attrs[k] + v for k, v in add.items()}})
        for slot, ((s0, n0), (s1, n1)) in enumerate(zip(before, after)):
            expect = [int(x) for x in s0]
            expect[0] += want.get(slot, 0)
            if [int(x) for x in s1] != expect or [int(x) for x in n0] != [int(x) for x in n1]:
                return {}
        moves[pos] = add
    return moves


def _move(items, moves: dict[int, dict[str, int]], positions) -> list[Item]:
    """The items with the planned attributes moved (positions in _accesses' walk order)."""
    out: list[Item] = []
    for it in items:
        if isinstance(it, Loop):
            out.append(replace(it, body=tuple(_move(it.body, moves, positions))) if it.trips else it)
            continue
        add = moves.get(next(positions), {})
        attrs = {k: _plus(v, add.get(k, 0)) for k, v in it.attrs.items()}
        out.append(ConcreteInstr(it.name, attrs, it.loc))
    return out


def _plus(v: Attr, k: int) -> Attr:
    return v + k if isinstance(v, int) else Affine(v.const + k, v.terms) if k else v


def _pairs(loop: Loop, moved: tuple[Item, ...]) -> list[Item]:
    """Iterations alternate moved, unmoved, ..., ending unmoved (an odd count starts
    with one unmoved iteration on its own); a single pair is not a loop."""
    head: list[Item] = []
    first = loop.start
    if loop.trips % 2:
        head = _substituted(loop.body, loop.var, 0, first)
        first += 1
    body = _substituted(moved, loop.var, 2, first) + _substituted(loop.body, loop.var, 2, first + 1)
    pairs = (loop.stop - first) // 2
    if pairs == 1:  # one pair: straight-line code
        return head + _substituted(body, loop.var, 0, 0)
    return head + [replace(loop, start=0, stop=pairs, body=tuple(body))]


def _substituted(items, var: str, scale: int, offset: int) -> list[Item]:
    """The items with loop variable ``var`` replaced by scale * var + offset."""
    def at(v: Attr) -> Attr:
        if isinstance(v, int):
            return v
        terms = dict(v.terms)
        c = terms.pop(var, 0)
        return Affine.of(v.const + c * offset, {**terms, var: c * scale})

    return [replace(it, body=tuple(_substituted(it.body, var, scale, offset))) if isinstance(it, Loop) else
            ConcreteInstr(it.name, {k: at(v) for k, v in it.attrs.items()}, it.loc) for it in items]
