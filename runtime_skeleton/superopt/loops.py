"""A compiled tile program placed in a loop nest: the whole kernel's program.

The tile program (phases 1-2 on the tile kernel) reads its inputs and writes its
output at the HBM offsets its allocation chose. In the loop, each of those
tensors is a tile of a whole-kernel tensor (``Tiling``'s placements), so every
instruction slice of HBM that lies in a tile input or the tile output is moved
there: the address attribute that starts the slice becomes affine in the loop
variables. Constants and HBM scratch stay where the allocation put them (every
iteration reuses them), and the whole kernel's tensors go above everything the
tile program touches. Every instruction the loop executes is then checked against
its instruction's ranges, constraint and buffer bounds, as the simulator would.
"""
from __future__ import annotations

from collections.abc import Mapping

from ..ir.types import TensorType
from ..layout import byte_size
from ..sim.machine import SimError, checked
from ..sim.program import ConcreteInstr, ConstData, Loop, Program, TensorDecl, shift
from ..target import InstructionDef, TargetDef
from .strip import NotTileable, Placement, Tiling

ALIGN = 4096  # whole-kernel tensors start at page boundaries: every alignment an address needs divides it


def _hbm_slices(target: TargetDef, ins: type[InstructionDef], attrs: Mapping[str, int]) -> list[tuple[int, int, int]]:
    """(slice index, start byte, length) of each HBM slice the instruction accesses."""
    hbm = target.hbm.name
    slices = (ins.output,) + ins.inputs
    found = []
    for j, (s, (starts, lengths)) in enumerate(zip(slices, ins.h(attrs))):
        if s.buffer == hbm:
            found.append((j, int(starts[0]), int(lengths[0])))
    return found


def _start_attr(ins: type[InstructionDef], attrs: Mapping[str, int], j: int) -> tuple[str, int]:
    """The addressing attribute that moves HBM slice j, and bytes per unit of it."""
    def start(name: str, step: int) -> int:
        return int(ins.h({**attrs, name: attrs[name] + step})[j][0][0])

    found = []
    for d in ins.addr_attrs:
        c = start(d.name, 1) - start(d.name, 0)
        if c and start(d.name, 2) - start(d.name, 0) == 2 * c:  # affine in it
            found.append((d.name, c))
    if len(found) != 1:
        raise NotTileable(f"{ins.name}: cannot tell which attribute addresses its HBM slice")
    return found[0]


def _region_of(regions: list[tuple[int, int, Placement]], lo: int, n: int) -> tuple[int, Placement] | None:
    """The tile tensor an HBM access lies in: (its start in the tile program, its placement)."""
    for start, size, place in regions:
        if start <= lo and lo + n <= start + size:
            return start, place
        if lo < start + size and start < lo + n:
            raise NotTileable(f"an HBM access [{lo}, {lo + n}) straddles a tile tensor [{start}, {start + size})")
    return None


def looped_program(target: TargetDef, tiling: Tiling, tile_prog: Program, input_types: list[TensorType],
                   output_type: TensorType) -> Program:
    """The whole kernel's program: the tile program in ``tiling``'s loop nest."""
    regions = [(d.offset, byte_size(d.type), p) for d, p in zip(tile_prog.inputs, tiling.inputs)]
    regions += [(d.offset, byte_size(d.type), tiling.output) for d in tile_prog.outputs]
    top = max([o + n for o, n, _ in regions] + [c.offset + len(c.data) for c in tile_prog.consts] + [0])
    for ci in tile_prog.flat():
        ins = target.instructions[ci.name]
        top = max([top] + [lo + n for _, lo, n in _hbm_slices(target, ins, ci.attrs)])
    bases, at = [], -(-top // ALIGN) * ALIGN
    for t in list(input_types) + [output_type]:
        bases.append(at)
        at += -(-byte_size(t) // ALIGN) * ALIGN
    if at > target.hbm.nbytes:
        raise NotTileable(f"the kernel's tensors and the tile program's data need {at} bytes of HBM; "
                          f"{target.hbm.name} has {target.hbm.nbytes}")
    body = []
    for ci in tile_prog.instructions:
        if not isinstance(ci, ConcreteInstr):
            raise NotTileable("the tile program already has loops")
        body.append(_relocate(target, ci, regions, bases, tiling))
    items: list = body
    for var, trips in reversed(tiling.loops):
        items = [Loop(var, 0, trips, tuple(items))]
    prog = Program(target=tile_prog.target,
                   inputs=[TensorDecl(f"arg{i}", t, b) for i, (t, b) in enumerate(zip(input_types, bases))],
                   outputs=[TensorDecl("out0", output_type, bases[-1])],
                   consts=[ConstData(c.offset, c.data) for c in tile_prog.consts],
                   instructions=items)
    check_program(target, prog)
    return prog


def _relocate(target: TargetDef, ci: ConcreteInstr, regions, bases: list[int], tiling: Tiling) -> ConcreteInstr:
    """``bases``: where each whole-kernel input, then the output, starts in HBM."""
    ins = target.instructions[ci.name]
    attrs = dict(ci.attrs)
    moved: dict[str, tuple[int, tuple]] = {}
    for j, lo, n in _hbm_slices(target, ins, ci.attrs):
        found = _region_of(regions, lo, n)
        if found is None:
            continue  # a constant or scratch: the same every iteration
        region_start, place = found
        base = bases[-1] if place is tiling.output else bases[place.source]
        delta = base + place.const - region_start
        name, c = _start_attr(ins, ci.attrs, j)
        if delta % c or any(k % c for _, k in place.terms):
            raise NotTileable(f"{ci.name}: {name} addresses HBM in steps of {c} bytes; a tile moves by {delta}")
        want = (delta // c, tuple((v, k // c) for v, k in place.terms))
        if moved.setdefault(name, want) != want:
            raise NotTileable(f"{ci.name}: {name} addresses two tensors that move differently")
    for name, (const, terms) in moved.items():
        attrs[name] = shift(ci.attrs[name], const, dict(terms))
    return ConcreteInstr(ci.name, attrs, ci.loc)


def check_program(target: TargetDef, prog: Program) -> None:
    """Every executed instruction passes the simulator's checks (else NotTileable)."""
    try:
        for ci in prog.flat():
            checked(target, ci)
    except SimError as err:
        raise NotTileable(f"in the loop: {err.message}") from None
