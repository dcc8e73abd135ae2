"""Kernels compiled as several programs that run one after the other.

A kernel cut into parts (one per output, superopt.outputs; one per stage,
superopt.stages) is compiled part by part, and the programs become one program over
the whole kernel's tensors: the kernel's inputs and outputs, and intermediates that
one part writes to HBM and a later part reads. Every HBM access of a part moves to
the tensor it lies in, and each part's constants and HBM scratch move past the
earlier parts'. On-chip data does not outlive a part, so parts need not avoid each
other on chip.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from .. import budget, progress
from ..direct import CompileError, CompileOptions, CompileResult, CompileStats
from ..errors import ActgenError
from ..ir.graph import Module
from ..ir.types import TensorType
from ..layout import byte_size
from ..program import ConcreteInstr, ConstData, Item, Loop, Program, TensorDecl
from ..target import TargetDef
from .addressing import Terms, corner_slices, moved, page, region_of, stacked
from .loops import check_program
from .strip import NotTileable


@dataclass(frozen=True)
class Part:
    """A kernel of its own, and which of the whole computation's tensors its
    parameters read and its outputs write (indices into ``Plan.types``), and where in
    each written tensor its output starts (a byte offset: a block of a concatenation)."""
    module: Module
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    at: tuple[int, ...] = ()  # per write; none: 0


@dataclass(frozen=True)
class Plan:
    """The parts in program order over the tensors ``types``: the kernel's inputs
    first (``n_inputs`` of them), then outputs and intermediates in HBM."""
    kind: str  # what a part is, for messages: "output", "stage", "piece", "block"
    parts: tuple[Part, ...]
    types: tuple[TensorType, ...]
    n_inputs: int
    outputs: tuple[int, ...]  # the kernel's outputs, in order


CompileOne = Callable[[TargetDef, Module, CompileOptions, float], CompileResult]


def compile_plan(target: TargetDef, module: Module, plan: Plan, compile_one: CompileOne, opts: CompileOptions,
                 deadline: float) -> CompileResult:
    """Each part compiled by ``compile_one`` (the time left shared evenly among the distinct
    kernels left: a part equal to an earlier one, its name aside, reuses its program), the
    programs in sequence. A part that fails is tried again after the others, with the time
    they left shared among the parts that failed: an output that needs more than its share
    gets what the quick ones did not use.

    Every part is first compiled to its first program (no patience: a part that found one
    stops, where it used to spend the rest of its share improving it while a later part
    ran out of time); then, with the time left, each part again with the patience, the
    cheaper program kept."""
    t0 = time.perf_counter()
    kernels = [part.module.anonymous() for part in plan.parts]
    same = [kernels.index(m) for m in kernels]  # equal kernels compile once: each part's first equal
    distinct = [k for k, j in enumerate(same) if j == k]
    done: dict[int, CompileResult] = {}
    failed: dict[int, tuple[ActgenError, float]] = {}  # part -> its error, and the time it had
    first = replace(opts, patience=0.0)
    for n, k in enumerate(distinct):
        now = budget.now()
        share = (deadline - now) / (len(distinct) - n)
        progress.note(f"{plan.kind} {n + 1} of {len(distinct)}")
        try:
            done[k] = compile_one(target, plan.parts[k].module, first, now + share)
        except ActgenError as err:
            failed[k] = (err, share)
    for n, k in enumerate(sorted(failed)):
        now = budget.now()
        err, had = failed[k]
        share = (deadline - now) / (len(failed) - n)
        if share <= had:
            raise CompileError(f"{plan.kind} {k}: {err.message}", err.loc, getattr(err, "refusal", None)) from None
        try:
            done[k] = compile_one(target, plan.parts[k].module, first, now + share)
        except ActgenError as again:
            raise CompileError(f"{plan.kind} {k}: {again.message}", again.loc, getattr(again, "refusal", None)) from None
    if opts.patience > 0:
        for n, k in enumerate(distinct):
            now = budget.now()
            progress.note(f"{plan.kind} {n + 1} of {len(distinct)}, improved")
            try:
                better = compile_one(target, plan.parts[k].module, opts, now + (deadline - now) / (len(distinct) - n))
            except ActgenError:
                continue
            if better.cost < done[k].cost:
                done[k] = better
    results = [done[j] for j in same]
    try:
        prog = sequenced(target, plan, [r.program for r in results])
        check_program(target, prog)
    except NotTileable as err:
        raise CompileError(err.message) from None
    stats = summed([done[k].stats for k in distinct])
    stats.seconds = time.perf_counter() - t0
    head = results[0]
    # the parts run one after the other: their costs add up (timing the whole sequence again
    # cost more than compiling it, and overlap across a part's edge is a few cycles)
    return CompileResult(prog, sum(r.cost for r in results), head.pii_graph, head.allocation, stats, module,
                         parts=tuple(results), part_kind=plan.kind)


def sequenced(target: TargetDef, plan: Plan, programs: list[Program]) -> Program:
    """The parts' programs one after the other as one program over the plan's tensors."""
    # each part's constants and scratch, one part after the other; its tensors move to the plan's
    shifts, at = stacked(target, [(prog, [(d.offset, byte_size(d.type), d) for d in prog.inputs + prog.outputs])
                                  for prog in programs])
    bases = []
    for t in plan.types:
        bases.append(at)
        at += page(byte_size(t))
    if at > target.hbm.nbytes:
        raise NotTileable(f"the {plan.kind}s' programs and the kernel's tensors need {at} bytes of HBM; "
                          f"{target.hbm.name} has {target.hbm.nbytes}")
    items: list[Item] = []
    consts: list[ConstData] = []
    for part, prog, shift in zip(plan.parts, programs, shifts):
        assert len(prog.inputs) == len(part.reads) and len(prog.outputs) == len(part.writes)
        # (start, size, (the tensor's base, whether the part may write it))
        regions = [(d.offset, byte_size(d.type), (bases[w], False)) for d, w in zip(prog.inputs, part.reads)]
        at = part.at or (0,) * len(part.writes)
        regions += [(d.offset, byte_size(d.type), (bases[w] + a, True))
                    for d, w, a in zip(prog.outputs, part.writes, at)]
        items += _moved_items(target, prog.instructions, regions, shift, {})
        consts += [ConstData(c.offset + shift, c.data) for c in prog.consts]
    return Program(target=programs[0].target,
                   inputs=[TensorDecl(f"arg{i}", plan.types[i], bases[i]) for i in range(plan.n_inputs)],
                   outputs=[TensorDecl(f"out{k}", plan.types[w], bases[w]) for k, w in enumerate(plan.outputs)],
                   consts=consts, instructions=items)


def _moved_items(target: TargetDef, items, regions: list[tuple[int, int, tuple[int, bool]]], shift: int,
                 ranges: dict[str, tuple[int, int]]) -> list[Item]:
    out: list[Item] = []
    for it in items:
        if isinstance(it, Loop):
            inner = {**ranges, it.var: (it.start, max(it.start, it.stop - 1))}
            out.append(replace(it, body=tuple(_moved_items(target, it.body, regions, shift, inner))))
        else:
            out.append(_moved_one(target, it, regions, shift, ranges))
    return out


def _moved_one(target: TargetDef, ci: ConcreteInstr, regions, shift: int, ranges) -> ConcreteInstr:
    """The instruction with each HBM slice moved: into the whole tensor whose part
    tensor it lies in, or by ``shift`` (constants, scratch)."""
    corners = corner_slices(target, ci, ranges)
    where = None
    for _, found in corners:
        here = [(j, region_of(regions, lo, n)) for j, lo, n in found]
        if where is not None and here != where:
            raise NotTileable(f"{ci.name}: a slice moves between tensors across the iterations of its loops")
        where = here
    moves: list[tuple[int, int, Terms]] = []
    for j, region in where:
        if region is None:
            moves.append((j, shift, ()))
            continue
        start, (base, writable) = region
        if j == 0 and not writable:
            raise NotTileable(f"{ci.name}: a part writes over one of its inputs, which later parts read")
        moves.append((j, base - start, ()))
    return moved(target, ci, corners[0][0], [m for m in moves if m[1]])


def summed(all_stats: list[CompileStats]) -> CompileStats:
    total = CompileStats()
    for st in all_stats:
        for f in dataclasses.fields(CompileStats):
            a, b = getattr(total, f.name), getattr(st, f.name)
            setattr(total, f.name, {k: a.get(k, 0.0) + b.get(k, 0.0) for k in a | b} if isinstance(a, dict) else a + b)
    return total
