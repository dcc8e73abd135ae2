"""Compiled tile programs placed in a loop nest: the whole kernel's program.

A tile program (phases 1-2 on a tile kernel) reads its inputs and writes its
output at the HBM offsets its allocation chose. In the loop, each of those
tensors is a tile of a whole-kernel tensor (``Tiling``'s placements), so every
instruction slice of HBM that lies in a tile input or the tile output is moved
there: the address attribute that starts the slice becomes affine in the loop
variables. Constants and HBM scratch are the same every iteration; each piece's
move up past the previous piece's, and the whole kernel's tensors go above
everything the pieces touch. The loop nest then goes through the named passes of
``passes`` (double buffering, hoisting loads out of the loops they do not depend on).
Every instruction the loop executes is checked against its instruction's ranges,
constraint and buffer bounds, as the simulator would.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from .. import stopwatch
from ..ir.types import TensorType
from ..layout import byte_size
from ..program import ConcreteInstr, ConstData, Loop, Program, TensorDecl
from ..program.verify import verify_program
from ..sim.machine import SimError
from ..target import TargetDef
from .addressing import hbm_slices, moved, page, region_of, stacked
from .passes import Stage, run_passes
from .strip import OUTPUT, NotTileable, Placement


@dataclass(frozen=True)
class Piece:
    """A compiled tile program and where its HBM tensors lie in the whole kernel's
    (None: a value on chip, e.g. a reduction's accumulator); ``loop``: its own
    innermost loop (variable, start, stop), as a reduction's body has."""

    program: Program
    inputs: tuple[Placement | None, ...]  # per .input of the program
    output: Placement | None
    loop: tuple[str, int, int] | None = None


def _regions(piece: Piece) -> list[tuple[int, int, Placement]]:
    prog = piece.program
    regions = [(d.offset, byte_size(d.type), p) for d, p in zip(prog.inputs, piece.inputs) if p is not None]
    if piece.output is not None:
        regions += [(d.offset, byte_size(d.type), replace(piece.output, source=OUTPUT)) for d in prog.outputs]
    return regions


def looped_programs(target: TargetDef, loops: tuple[tuple[str, int], ...], pieces: list[Piece],
                    input_types: list[TensorType], output_type: TensorType) -> list[Stage]:
    """The whole kernel's program: the pieces, in order, in the loop nest ``loops``;
    as it is and after each pass that changes it (unchecked: the caller keeps the
    cheapest that passes, cheapest_checked).

    Each piece's constants and HBM scratch move up past the previous piece's (every
    iteration reuses them), and the whole kernel's tensors go above everything."""
    shifts, at = stacked(target, [(piece.program, _regions(piece)) for piece in pieces])
    bases = []
    for t in list(input_types) + [output_type]:
        bases.append(at)
        at += page(byte_size(t))
    if at > target.hbm.nbytes:
        raise NotTileable(f"the kernel's tensors and the tile programs' data need {at} bytes of HBM; "
                          f"{target.hbm.name} has {target.hbm.nbytes}")
    body: list = []
    consts = []
    for piece, shift in zip(pieces, shifts):
        regions = _regions(piece)
        items = []
        for ci in piece.program.instructions:
            if not isinstance(ci, ConcreteInstr):
                raise NotTileable("the tile program already has loops")
            items.append(_relocate(target, ci, regions, bases, shift))
        consts += [ConstData(c.offset + shift, c.data) for c in piece.program.consts]
        body += [Loop(piece.loop[0], piece.loop[1], piece.loop[2], tuple(items))] if piece.loop else items
    items = body
    for var, trips in reversed(loops):
        items = [Loop(var, 0, trips, tuple(items))]
    prog = Program(target=pieces[0].program.target,
                   inputs=[TensorDecl(f"arg{i}", t, b) for i, (t, b) in enumerate(zip(input_types, bases))],
                   outputs=[TensorDecl("out0", output_type, bases[-1])],
                   consts=consts, instructions=items)
    return run_passes(target, prog)


def cheapest_checked(target: TargetDef, stages: list[Stage],
                     cost: Callable[[TargetDef, Program], float]) -> tuple[int, float]:
    """The stage whose program is the cheapest that passes check_program (ties to the
    earlier, simpler one), and its cost.

    Checking verifies every instruction over its loops' ranges, so the stages are costed
    first and checked in order of cost, usually once."""
    t0 = time.perf_counter()
    try:
        costed = []
        for n, stage in enumerate(stages):
            try:
                costed.append((cost(target, stage.program), n))
            except SimError:  # an address constraint the moved copies break: not that variant
                continue
        failure = NotTileable("no variant of the loop nest passes the simulator's checks")
        for c, n in sorted(costed):
            try:
                check_program(target, stages[n].program)
                return n, c
            except NotTileable as err:
                failure = err
        raise failure
    finally:
        stopwatch.add("loops", time.perf_counter() - t0)


def _relocate(target: TargetDef, ci: ConcreteInstr, regions, bases: list[int], shift: int) -> ConcreteInstr:
    """``bases``: where each whole-kernel input, then the output, starts in HBM;
    ``shift``: how far the piece's own data (constants, scratch) moves."""
    moves = []
    for j, lo, n in hbm_slices(target, target.instructions[ci.name], ci.attrs):
        found = region_of(regions, lo, n)
        if found is None:  # a constant or scratch: the same every iteration, past the earlier pieces' data
            if shift:
                moves.append((j, shift, ()))
        else:
            region_start, place = found
            # OUTPUT = -1: the output's base, last
            moves.append((j, bases[place.source] + place.const - region_start, place.terms))
    return moved(target, ci, ci.attrs, moves)


def check_program(target: TargetDef, prog: Program) -> None:
    """Every executed instruction passes the simulator's checks (else NotTileable), checked
    over the loops' ranges, not unrolled (program.verify)."""
    try:
        verify_program(target, prog)
    except SimError as err:
        raise NotTileable(f"in the loop: {err.message}") from None
