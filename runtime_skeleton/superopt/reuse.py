"""Reuse of loaded tiles across loop iterations: loads hoisted out of the loops
whose variables they do not use.

In a loop nest of tile programs, every iteration loads what it reads. A *load*
(an instruction that reads only HBM and writes one on-chip slice) whose
attributes do not use a loop's variable loads the same data in every iteration
of that loop: a GEMM's row block of A for every column tile, or all of B for
every row block. Such a load moves in front of the loop, inside copies of the
loops between that its attributes do use, and writes one slot per iteration of
those into rows of its buffer that nothing else uses; the instructions that
read what it loaded read their iteration's slot instead. This is Axon §4.3's
block loop, sized by what the buffer has room for: loops are taken outermost
first (the most reuse), and a load whose slots do not fit stays where it is.

A hoist is sound when nothing but the redirected readers sees the rows the load
wrote: every read of those on-chip cells, anywhere in the program, must follow
a write that covers it in the same loop body (the load or another), so no value
survives from one iteration to the next; the load's HBM source is never written;
and the accesses to those cells do not move with loop variables.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np

from ..errors import ActgenError
from ..program import Affine, Attr, ConcreteInstr, Item, Loop
from ..program import shift as shift_affine
from ..target import TargetDef
from .addressing import Rect, slices_at, start_attr
from .double_buffer import _substituted

Path = tuple[int, ...]  # indices into nested loop bodies


@dataclass(frozen=True)
class _Use:
    """One slice an executed instruction accesses, with its loops at their first iteration."""

    path: Path
    slot: int  # 0 the output, then the inputs
    buffer: str
    rect: Rect
    hull: Rect  # every cell the slice covers over all iterations of its loops
    write: bool

    @property
    def varying(self) -> bool:
        return self.hull != self.rect

    @property
    def scope(self) -> Path:
        return self.path[:-1]


def reused(target: TargetDef, items: list[Item]) -> list[Item]:
    """The items with every load that can be hoisted hoisted (outermost loops first)."""
    items = list(items)
    while (hoisted := _one_hoist(target, items)) is not None:
        items = hoisted
    return items


def _instructions(items, path: Path = (), loops: tuple[Loop, ...] = ()) -> Iterator[tuple[Path, tuple[Loop, ...], ConcreteInstr]]:
    """Every instruction a run executes once or more, with its path and enclosing loops."""
    for n, it in enumerate(items):
        if isinstance(it, Loop):
            if it.trips:
                yield from _instructions(it.body, path + (n,), loops + (it,))
        else:
            yield path + (n,), loops, it


def _loops(items, path: Path = ()) -> Iterator[tuple[Path, Loop]]:
    """Loops in pre-order: outer before inner."""
    for n, it in enumerate(items):
        if isinstance(it, Loop):
            yield path + (n,), it
            yield from _loops(it.body, path + (n,))


def _uses(target: TargetDef, path: Path, loops: tuple[Loop, ...], ci: ConcreteInstr) -> list[_Use]:
    """The instruction's slices, reads before its write."""
    env = {lp.var: lp.start for lp in loops}
    _, boxes = slices_at(target, ci, env)
    lo = [[r.start for r in rect] for _, _, rect in boxes]
    hi = [[r.stop for r in rect] for _, _, rect in boxes]
    for lp in loops:
        if lp.trips < 2:
            continue
        _, moved = slices_at(target, ci, {**env, lp.var: lp.start + 1})
        for k, ((_, _, a), (_, _, b)) in enumerate(zip(boxes, moved)):
            for d, (ra, rb) in enumerate(zip(a, b)):
                span = (rb.start - ra.start) * (lp.trips - 1)
                lo[k][d] += min(0, span)
                hi[k][d] += max(0, span) + max(0, (rb.stop - rb.start) - (ra.stop - ra.start))
    uses = [_Use(path, j, b, rect, tuple(slice(a, z) for a, z in zip(lo[k], hi[k])), j == 0)
            for k, (j, b, rect) in enumerate(boxes)]
    return uses[1:] + uses[:1]


def _overlap(a: Rect, b: Rect) -> bool:
    return all(x.start < y.stop and y.start < x.stop for x, y in zip(a, b))


def _covers(a: Rect, b: Rect) -> bool:
    return all(x.start <= y.start and y.stop <= x.stop for x, y in zip(a, b))


def _one_hoist(target: TargetDef, items: list[Item]) -> list[Item] | None:
    found = list(_instructions(items))
    uses = [u for path, loops, ci in found for u in _uses(target, path, loops, ci)]
    used = {b.name: np.zeros(b.access_shape, bool) for b in target.buffers.values() if not b.is_hbm}
    for u in uses:
        if u.buffer in used:
            used[u.buffer][u.hull] = True
    hbm_writes = [u.hull for u in uses if u.write and target.buffers[u.buffer].is_hbm]
    for jpath, loop in _loops(items):
        if loop.trips < 2:
            continue
        edits: dict[Path, ConcreteInstr] = {}
        loads = []
        for path, loops, ci in found:
            if path[:len(jpath)] != jpath or len(path) == len(jpath):
                continue
            moved = _hoist(target, items, loop, path, loops[len(jpath):], ci, uses, used, hbm_writes, edits)
            if moved is not None:
                edits.update(moved)
                loads.append(path)
        if loads:
            # the first iteration loads into the slots as it goes; the others only read them
            first = _at(_edit(items, edits), jpath)
            rest = _at(_edit(items, {**edits, **{p: None for p in loads}}), jpath)
            peeled = _substituted(first.body, loop.var, 0, loop.start) + [replace(rest, start=loop.start + 1)]
            return _edit(items, {jpath: None}, {jpath: peeled})
    return None


def _uses_var(ci: ConcreteInstr, var: str) -> bool:
    return any(isinstance(v, Affine) and var in dict(v.terms) for v in ci.attrs.values())


def _hoist(target: TargetDef, items: list[Item], loop: Loop, path: Path, inner: tuple[Loop, ...], ci: ConcreteInstr,
           uses: list[_Use], used: dict[str, np.ndarray], hbm_writes: list[Rect],
           edits: dict[Path, ConcreteInstr]) -> dict[Path, ConcreteInstr] | None:
    """The instructions to change (``edits``: those already changed) so that the
    instruction at ``path`` writes, and its readers read, one slot per iteration of the
    ``inner`` loops (between ``loop`` and it) that it uses; None when it is not a load
    that can leave ``loop``."""
    if _uses_var(ci, loop.var):
        return None
    mine = [u for u in uses if u.path == path]
    out = mine[-1]
    if not out.write or out.buffer not in used or out.varying:
        return None
    for u in mine[:-1]:
        if u.buffer in used or any(_overlap(u.hull, w) for w in hbm_writes):
            return None
    readers = _private_readers(uses, out)
    if not readers:
        return None
    kept = [lp for lp in inner if _uses_var(ci, lp.var)]
    slot = _slot(out.rect, used[out.buffer], math.prod(lp.trips for lp in kept))
    if slot is None:
        return None
    base, step = slot
    strides, n = {}, 1
    for lp in reversed(kept):
        strides[lp.var], n = n, n * lp.trips
    # the slot of an iteration: base + step * (linear index of the kept loops' variables)
    const = base - out.rect[0].start - step * sum(strides[lp.var] * lp.start for lp in kept)
    terms = {v: step * k for v, k in strides.items()}
    env = {lp.var: lp.start for lp in _enclosing(items, path)}
    by_instr: dict[Path, list[int]] = {path: [0]}
    for r in readers:
        by_instr.setdefault(r.path, []).append(r.slot)
    changed = {}
    for p, slots in by_instr.items():
        moved = _moved(target, edits.get(p) or _at(items, p), slots, const, terms, env)
        if moved is None:
            return None
        changed[p] = moved
    return changed


def _private_readers(uses: list[_Use], out: _Use) -> list[_Use] | None:
    """The reads of what ``out`` writes, or None unless every read of its cells in the
    program follows, in the same loop body, a write that covers it (so no value
    outlives an iteration and the hoisted write is only seen by these reads)."""
    writes: list[_Use] = []
    readers = []
    for u in uses:
        if u.buffer != out.buffer or not _overlap(u.hull, out.rect):
            continue
        if u.varying:
            return None
        if u.write:
            writes.append(u)
            continue
        last = next((w for w in reversed(writes) if _overlap(w.rect, u.rect)), None)
        if last is None or last.scope != u.scope or not _covers(last.rect, u.rect):
            return None
        if last.path == out.path:
            readers.append(u)
    return readers


def _slot(rect: Rect, used: np.ndarray, count: int) -> tuple[int, int] | None:
    """(first row, rows a slot) of ``count`` slots of the rectangle's rows, aligned as its
    start, clear of every used cell; None when the buffer has no room."""
    rows = rect[0].stop - rect[0].start
    align = rect[0].start & -rect[0].start if rect[0].start else 1 << (rows - 1).bit_length()
    step = -(-rows // align) * align
    need = step * count
    other = used[(slice(None),) + rect[1:]]
    busy = other.reshape(other.shape[0], -1).any(axis=1)
    for base in range(0, used.shape[0] - need + 1, align):
        if not busy[base:base + need].any():
            used[(slice(base, base + need),) + rect[1:]] = True
            return base, step
    return None


def _moved(target: TargetDef, ci: ConcreteInstr, slots: list[int], const: int, terms: dict[str, int],
           env: dict[str, int]) -> ConcreteInstr | None:
    """The instruction with the given slices moved by const + terms rows (affine in
    loop variables), checked through its slice function; None when no attribute
    moves exactly them."""
    ins = target.instructions[ci.name]
    attrs, _ = slices_at(target, ci, env)
    add: dict[str, tuple[int, dict[str, int]]] = {}
    for j in set(slots):
        try:
            name, per = start_attr(ins, attrs, j)
        except ActgenError:
            return None
        if const % per or any(k % per for k in terms.values()):
            return None
        want = (const // per, {v: k // per for v, k in terms.items()})
        if add.setdefault(name, want) != want:
            return None
    new = ConcreteInstr(ci.name, {k: _shifted(v, add.get(k)) for k, v in ci.attrs.items()}, ci.loc)
    for probe in [env] + [{**env, v: env[v] + 1} for v in terms]:
        by = const + sum(k * probe[v] for v, k in terms.items())
        try:
            _, before = slices_at(target, ci, probe)
            _, after = slices_at(target, new, probe)
        except ActgenError:
            return None
        for (j, _, a), (_, _, b) in zip(before, after):
            expect = (slice(a[0].start + by, a[0].stop + by),) + a[1:] if j in slots else a
            if b != expect:
                return None
    return new


def _shifted(v: Attr, add: tuple[int, dict[str, int]] | None) -> Attr:
    return v if add is None else shift_affine(v, add[0], add[1])


def _enclosing(items, path: Path) -> list[Loop]:
    loops = []
    for n in path[:-1]:
        items = items[n]
        loops.append(items)
        items = items.body
    return loops


def _at(items, path: Path) -> Item:
    for n in path[:-1]:
        items = items[n].body
    return items[path[-1]]


def _edit(items, edits: dict[Path, Item | None], before: dict[Path, list[Item]] | None = None,
          prefix: Path = ()) -> list[Item]:
    """The items with the instructions at the edited paths replaced (None: removed)
    and the ``before`` items inserted in front of their paths."""
    out: list[Item] = []
    before = before or {}
    for n, it in enumerate(items):
        p = prefix + (n,)
        out += before.get(p, [])
        if p in edits:
            if edits[p] is not None:
                out.append(edits[p])
        elif isinstance(it, Loop):
            out.append(replace(it, body=tuple(_edit(it.body, edits, before, p))))
        else:
            out.append(it)
    return out
