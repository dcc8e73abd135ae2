"""Which attribute of an instruction addresses which of its slices, and which HBM a program touches."""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import TypeVar

from ..layout import byte_size
from ..program import Affine, ConcreteInstr, Loop, Program, shift, value_at
from ..target import InstructionDef, TargetDef
from .strip import NotTileable

ALIGN = 4096  # whole-kernel tensors start at page boundaries: every alignment an address needs divides it
Rect = tuple[slice, ...]
R = TypeVar("R")
Terms = tuple[tuple[str, int], ...]  # (loop variable, bytes per unit of it)
Regions = list[tuple[int, int, object]]  # (start, size, what) of HBM regions


def region_of(regions: list[tuple[int, int, R]], lo: int, n: int) -> tuple[int, R] | None:
    """The region (start, size, what) an HBM access [lo, lo + n) lies in: (its start,
    what); None when it lies in none; NotTileable when it straddles one's edge."""
    for start, size, what in regions:
        if start <= lo and lo + n <= start + size:
            return start, what
        if lo < start + size and start < lo + n:
            raise NotTileable(f"an HBM access [{lo}, {lo + n}) straddles a tensor at [{start}, {start + size})")
    return None


def moved(target: TargetDef, ci: ConcreteInstr, attrs: Mapping[str, int],
          moves: list[tuple[int, int, Terms]]) -> ConcreteInstr:
    """``ci`` with slice j moved by ``delta`` bytes plus ``terms`` for each (j, delta, terms):
    the attribute that addresses the slice (read off ``attrs``, ``ci``'s attributes at
    one point of its loops) shifts by as many of its steps."""
    ins = target.instructions[ci.name]
    by_attr: dict[str, tuple[int, Terms]] = {}
    for j, delta, terms in moves:
        name, c = start_attr(ins, attrs, j)
        if delta % c or any(k % c for _, k in terms):
            raise NotTileable(f"{ci.name}: {name} addresses HBM in steps of {c} bytes; the data moves by {delta}")
        want = (delta // c, tuple((v, k // c) for v, k in terms))
        if by_attr.setdefault(name, want) != want:
            raise NotTileable(f"{ci.name}: {name} addresses two tensors that move differently")
    new = dict(ci.attrs)
    for name, (const, terms) in by_attr.items():
        new[name] = shift(ci.attrs[name], const, dict(terms))
    return ConcreteInstr(ci.name, new, ci.loc)


def hbm_slices(target: TargetDef, ins: type[InstructionDef], attrs: Mapping[str, int]) -> list[tuple[int, int, int]]:
    """(slice index, start byte, length) of each HBM slice the instruction accesses."""
    hbm = target.hbm.name
    slices = (ins.output,) + ins.inputs
    found = []
    for j, (s, (starts, lengths)) in enumerate(zip(slices, ins.h(attrs))):
        if s.buffer == hbm:
            found.append((j, int(starts[0]), int(lengths[0])))
    return found


def start_attr(ins: type[InstructionDef], attrs: Mapping[str, int], j: int) -> tuple[str, int]:
    """The addressing attribute that moves slice j (its start in the first access
    dimension: an HBM byte, an on-chip row), and how far per unit of it."""
    def start(name: str, step: int) -> int:
        return int(ins.h({**attrs, name: attrs[name] + step})[j][0][0])

    found = []
    for d in ins.addr_attrs:
        c = start(d.name, 1) - start(d.name, 0)
        if c and start(d.name, 2) - start(d.name, 0) == 2 * c:  # affine in it
            found.append((d.name, c))
    if len(found) != 1:
        raise NotTileable(f"{ins.name}: cannot tell which attribute addresses its slice {j}")
    return found[0]


def slices_at(target: TargetDef, ci: ConcreteInstr, env: Mapping[str, int]) -> tuple[dict[str, int], list[tuple[int, str, Rect]]]:
    """The instruction's attributes with the loop variables at ``env``, and the
    (slice index, buffer, box) of each slice it accesses (0 the output, then the inputs)."""
    ins = target.instructions[ci.name]
    attrs = {k: value_at(v, env) for k, v in ci.attrs.items()}
    boxes = [(j, s.buffer, tuple(slice(int(a), int(a) + int(n)) for a, n in zip(starts, lengths)))
             for j, (s, (starts, lengths)) in enumerate(zip((ins.output,) + ins.inputs, ins.h(attrs)))]
    return attrs, boxes


def corners(ci: ConcreteInstr, ranges: Mapping[str, tuple[int, int]]) -> list[dict[str, int]]:
    """The loop variables ``ci`` uses at the corners of their ranges (first, last value):
    an affine address takes its extremes there, so a slice lies in one tensor at every
    iteration when it does at every corner."""
    used = sorted({v for a in ci.attrs.values() if isinstance(a, Affine) for v, _ in a.terms})
    return [dict(zip(used, c)) for c in itertools.product(*(ranges[v] for v in used))]


def corner_slices(target: TargetDef, ci: ConcreteInstr, ranges) -> list[tuple[dict[str, int], list[tuple[int, int, int]]]]:
    """At each corner: the instruction's attributes there, and its HBM slices (hbm_slices)."""
    ins = target.instructions[ci.name]
    found = []
    for env in corners(ci, ranges):
        attrs = {k: value_at(v, env) for k, v in ci.attrs.items()}
        found.append((attrs, hbm_slices(target, ins, attrs)))
    return found


def with_ranges(items, ranges: Mapping[str, tuple[int, int]] | None = None):
    """(instruction, the first and last value of each enclosing loop variable); loops
    with no trips left out."""
    for it in items:
        if isinstance(it, Loop):
            if it.trips:
                yield from with_ranges(it.body, {**(ranges or {}), it.var: (it.start, it.stop - 1)})
        else:
            yield it, ranges or {}


def accessed(target: TargetDef, prog: Program) -> Iterator[tuple[int, int]]:
    """(start, size) of every HBM slice the program's instructions access, loops included
    (at the corners of their ranges, where an affine address takes its extremes)."""
    for ci, ranges in with_ranges(prog.instructions):
        for _, found in corner_slices(target, ci, ranges):
            for _, lo, n in found:
                yield lo, n


def page(n: int) -> int:
    """``n`` rounded up to whole ALIGN pages."""
    return -(-n // ALIGN) * ALIGN


def own_area(target: TargetDef, prog: Program, moving: Regions) -> tuple[int, int]:
    """[lo, hi) of the HBM a program uses outside the regions (start, size, what) that
    move to the whole kernel's tensors: its constants and scratch, which move with the
    program (lo down to a page; (0, 0) when there are none). Where the regions lie does
    not matter (CP-SAT may put a tensor at the top of HBM)."""
    spans = [(c.offset, c.offset + len(c.data)) for c in prog.consts]
    spans += [(lo, lo + n) for lo, n in accessed(target, prog) if region_of(moving, lo, n) is None]
    if not spans:
        return 0, 0
    lo = min(a for a, _ in spans)
    return lo - lo % ALIGN, max(b for _, b in spans)


def stacked(target: TargetDef, programs: list[tuple[Program, Regions]]) -> tuple[list[int], int]:
    """For programs run one after the other (with the regions that move each to the whole
    kernel's tensors): how far each one's own area (``own_area``) moves so that the areas lie
    one after the other from address 0, and the page where the last ends."""
    shifts, at = [], 0
    for prog, moving in programs:
        lo, hi = own_area(target, prog, moving)
        shifts.append(at - lo)
        at += page(hi - lo)
    return shifts, at


def hbm_end(target: TargetDef, prog: Program) -> int:
    """The end of the HBM the program touches: its placed tensors, constants and every
    slice an instruction accesses (loops included, at the corners of their ranges)."""
    top = [d.offset + byte_size(d.type) for d in prog.inputs + prog.outputs if d.offset >= 0]
    top += [c.offset + len(c.data) for c in prog.consts]
    top += [lo + n for lo, n in accessed(target, prog)]
    return max(top + [0])
