"""The direct compiler: one kernel as one straight-line program (Act §4.2.3, §8 and Fig. 14).

``candidates`` is Act's enumeration: phase 1 yields pii graphs, phase 2 orders
and allocates each (falling back to the next pii graph when no order can be
allocated), and the emitter turns each success into a program. ``compile_direct``
keeps the cheapest candidate under a cost model and stops when no candidate has
improved for ``patience`` times the time it took to find the best one, or at the
global timeout. Every such time is read on the work clock (``budget``), which counts
work done, not seconds, so the same input gives the same program on every machine and
under any load (as long as the wall-clock cap is not reached: then an error).
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from . import budget, memo, progress, stopwatch
from .alloc.allocate import Allocation, AllocationFailed, SolveOptions, phase2
from .alloc.remat import rematerialized
from .alloc.share import shared_in_place
from .alloc.views import simplified
from .emit import emit_program, program_json
from .errors import ActgenError, SourceLoc
from .refusal import ALLOCATION, NO_PII_GRAPH, TIMEOUT, Refusal
from .ir.graph import Module
from .isel.extract import PiiGraph
from .isel.phase1 import InstructionSelector, Limits, NoPiiGraph, Room
from .layout import byte_size
from .sim.cost import cycles
from .program import Program, print_program
from .superopt.reduction import Split
from .superopt.schedule import scheduled
from .superopt.strip import Tiling
from .target import TargetDef


CostModel = Callable[[TargetDef, Program], float]


class CompileError(ActgenError):
    """The target cannot run the kernel (within the limits); the message says why, and
    ``refusal`` (when known) the same as data."""

    def __init__(self, message: str, loc: SourceLoc | None = None, refusal: Refusal | None = None):
        super().__init__(message, loc)
        self.refusal = refusal


@dataclass
class CompileOptions:
    timeout: float = 60.0  # work-seconds for the whole compilation (runtime_skeleton.budget; the wall
    # clock stops it at budget.WALL_FACTOR times that)
    deterministic: bool = False  # every compilation is deterministic but with jobs > 1; this one ignores jobs
    patience: float = 2.0  # n of Fig. 14
    phase1: Limits = field(default_factory=lambda: Limits(timeout=math.inf))  # phase 1 may use all of timeout
    solve: SolveOptions = field(default_factory=SolveOptions)
    cost: CostModel = cycles
    tiling: bool = True  # when the kernel does not compile as straight-line code, strip-mine it into loops
    # of the time left, what the straight-line attempt may use before tiling is tried: half, since a
    # kernel that fits on chip is best as Act's straight-line program (AMX K1's phase 1 takes 16 s of
    # the default 60; a quarter gave a loop nest) and tiling needs far less than the rest
    direct_share: float = 0.5
    jobs: int = 1  # processes evaluating the tiled search's options of the whole kernel: faster, but which
    # option wins then depends on the machine (the only choice the work clock does not decide)
    tiles_first: bool | None = None  # phase 1's Limits.tiles_first (None: its default), for every kernel
    # the compile runs phase 1 on

    def __post_init__(self) -> None:
        if self.tiles_first is not None:
            self.phase1 = dataclasses.replace(self.phase1, tiles_first=self.tiles_first)


@dataclass
class CompileStats:
    pii_graphs: int = 0
    candidates: int = 0
    best_index: int = 0  # 1-based candidate number of the chosen program
    phase1_seconds: float = 0.0
    phase2_seconds: float = 0.0
    emit_seconds: float = 0.0
    # the phases by step (Act Fig. 21): phase 1 = saturation + extraction, phase 2 = ordering + allocation
    saturation_seconds: float = 0.0
    extraction_seconds: float = 0.0
    ordering_seconds: float = 0.0
    allocation_seconds: float = 0.0  # constraint generation and CP-SAT
    seconds: float = 0.0
    orders_tried: int = 0
    failures: list[str] = field(default_factory=list)  # why pii graphs did not allocate
    failure_core: list[tuple[str, str]] = field(default_factory=list)  # the last failure's (family, what) groups
    # wall seconds of the whole compilation by activity, every attempt included (stopwatch; set by
    # compile_module): phase 1, phase 2, emit, loops (passes and checks of loop nests), other
    spent: dict[str, float] = field(default_factory=dict)
    pass_seconds: dict[str, float] = field(default_factory=dict)  # the loop nests' passes, by name, every run


@dataclass
class Candidate:
    pii_graph: PiiGraph
    allocation: Allocation
    program: Program
    found_at: float  # budget.now() when it was found


@dataclass
class CompileResult:
    program: Program
    cost: float
    pii_graph: PiiGraph
    allocation: Allocation
    stats: CompileStats
    module: Module
    tiling: Tiling | None = None  # the loop nest, when the program is a tile program in loops
    split: Split | None = None  # the reduction loop inside it, when the contraction is cut
    # a kernel compiled as several programs in sequence (superopt.sequence): each part's
    # compilation, in program order (pii_graph and allocation are then the first part's)
    parts: tuple[CompileResult, ...] = ()
    part_kind: str = ""  # what a part is: "output" or "stage"
    # a loop nest's program as assembled and after each pass that changed it, up to the one kept
    # (superopt.passes.Stage: name, program, seconds); empty for straight-line code
    stages: tuple = ()
    target: TargetDef | None = field(default=None, repr=False)  # set by compile_module

    def native(self) -> Callable[..., list]:
        """The program as a Python function running natively on this CPU: arrays in, arrays out
        (``emit.native``; a NativeError when the target or the CPU cannot run it)."""
        from .emit.native import NativeError, native_function

        if self.target is None:
            raise NativeError("this result does not know its target (it did not come from compile_module)")
        return native_function(self.target, self.program)

    def describe_loops(self) -> str:
        """The loop structure, for people ('' for straight-line code)."""
        if self.parts:
            return "; ".join(f"{self.part_kind} {k}: {p.describe_loops() or 'straight-line'}"
                             for k, p in enumerate(self.parts))
        if self.tiling is None:
            return ""
        if self.split is None:
            return self.tiling.describe()
        return f"{self.tiling.describe()}, each a reduction loop {self.split.describe()}"

    @property
    def text(self) -> str:
        return print_program(self.program)

    def json(self) -> dict:
        return {**program_json(self.program), "cost": self.cost,
                "stats": {k: v for k, v in dataclasses.asdict(self.stats).items()}}


def candidates(target: TargetDef, module: Module, opts: CompileOptions, stats: CompileStats,
               deadline: float, stop: Callable[[], bool] | None = None,
               room: Callable[[], Room] | None = None) -> Iterator[Candidate]:
    """Act's act_enum (Fig. 14b): every program phase 1 and 2 can produce, in order."""
    if budget.now() >= deadline:  # seeding the e-graph alone is work (a large stage: a second), and none is left
        raise CompileError("no program found: the time limit", refusal=Refusal(TIMEOUT, limited=True))
    limits = dataclasses.replace(opts.phase1, timeout=max(0.0, min(opts.phase1.timeout, deadline - budget.now())))
    try:
        sel = InstructionSelector(target, module, limits)
    except ActgenError as err:  # the kernel uses something phase 1 cannot represent
        raise CompileError(err.message, err.loc) from None
    graphs = sel.pii_graphs(None if stop is None else lambda k: stop(), room)
    times: dict[str, float] = {}
    try:
        yield from _candidates(target, opts, stats, deadline, sel, graphs, times, stop)
    finally:
        stats.saturation_seconds, stats.extraction_seconds = sel.stats.saturation.seconds, sel.stats.extraction_seconds
        stats.ordering_seconds, stats.allocation_seconds = times.get("ordering", 0.0), times.get("allocation", 0.0)
    if stats.pii_graphs == 0:
        text, refusal = sel.explained()
        raise CompileError(text, refusal=refusal)


def _candidates(target: TargetDef, opts: CompileOptions, stats: CompileStats, deadline: float,
                sel: InstructionSelector, graphs: Iterator[PiiGraph], times: dict[str, float],
                stop: Callable[[], bool] | None) -> Iterator[Candidate]:
    while True:
        t = time.perf_counter()
        g = next(graphs, None)
        dt = time.perf_counter() - t
        stats.phase1_seconds += dt
        stopwatch.add("phase 1", dt)
        if g is None:
            break
        stats.pii_graphs += 1
        t = time.perf_counter()
        try:
            left = max(0.1, deadline - budget.now())
            solve = dataclasses.replace(opts.solve, timeout=min(opts.solve.timeout, left),
                                        budget=min(opts.solve.budget, left))
            g, alloc = _allocated(target, simplified(g), solve, times)
        except AllocationFailed as err:
            stats.failures.append(f"pii graph {stats.pii_graphs} ({g.num_instructions} instructions): {err.message}")
            stats.failure_core = list(err.core)
            # patience also runs out on pii graphs that do not allocate
            if budget.now() > deadline or (stop is not None and stop()):
                break
            continue
        finally:
            dt = time.perf_counter() - t
            stats.phase2_seconds += dt
            stopwatch.add("phase 2", dt)
        stats.orders_tried += alloc.orders_tried
        t = time.perf_counter()
        prog = scheduled(target, place_unread_inputs(target, emit_program(target.name, g, alloc, sel.input_types,
                                                                          sel.output_types)))
        dt = time.perf_counter() - t
        stats.emit_seconds += dt
        stopwatch.add("emit", dt)
        yield Candidate(g, alloc, prog, budget.now())
        if budget.now() > deadline:
            break


def _allocated(target: TargetDef, g: PiiGraph, solve: SolveOptions,
               times: dict[str, float]) -> tuple[PiiGraph, Allocation]:
    """Phase 2 of ``g`` with each value it computes twice, once to be overwritten in place,
    computed once (``alloc.share``), else of ``g`` itself; the graph it allocated with it."""
    shared = shared_in_place(target, g)
    if shared is not None:
        try:
            return _allocated_or_recomputed(target, shared, solve, times)
        except AllocationFailed:
            pass
    return _allocated_or_recomputed(target, g, solve, times)


def _allocated_or_recomputed(target: TargetDef, g: PiiGraph, solve: SolveOptions,
                             times: dict[str, float]) -> tuple[PiiGraph, Allocation]:
    """Phase 2 of ``g``; when a buffer overflows in every order, phase 2 of ``g`` with that
    buffer's values recomputed for each user (``alloc.remat``), the graph it allocated with it.
    Where some buffer's values can be recomputed, ``g`` first gets an eighth of its orders:
    searching all of them for one where a shared value fits took seconds (each order checked
    against the interference graphs of those that failed), and then the copies are tried;
    ``g``'s other orders come last."""
    again = {b: h for b in target.buffers if (h := rematerialized(target, g, b)) is not None}
    if not again:
        return g, phase2(target, g, solve, times)
    try:
        return g, phase2(target, g, dataclasses.replace(solve, max_orders=max(1, solve.max_orders // 8)), times)
    except AllocationFailed as err:
        for buf in dict.fromkeys(b for family, b in err.core if family == "CSP4" and b in again):
            try:
                return again[buf], phase2(target, again[buf], solve, times)
            except AllocationFailed:
                pass
    return g, phase2(target, g, solve, times)


def place_unread_inputs(target: TargetDef, prog: Program) -> Program:
    """Inputs the program never reads (the allocator gave them no region) placed above
    everything it touches in HBM, so that every kernel parameter has its .input."""
    from .superopt.addressing import hbm_end

    if all(d.offset >= 0 for d in prog.inputs):
        return prog
    at = _aligned(hbm_end(target, prog))
    inputs = []
    for d in prog.inputs:
        if d.offset < 0:
            d, at = dataclasses.replace(d, offset=at), _aligned(at + byte_size(d.type))
        inputs.append(d)
    return dataclasses.replace(prog, inputs=inputs)


def _aligned(n: int, to: int = 64) -> int:
    return -(-n // to) * to


def compile_direct(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    """Act's compiler on the whole kernel: one straight-line program. Within a compilation an
    equal kernel is compiled once (``memo``): its program reused, its failure raised again
    when this attempt has no more time, or the failure did not depend on time."""
    name = memo.key(module, (target.name, opts))
    left = deadline - budget.now()
    got = memo.recalled(name, left)
    if isinstance(got, CompileError):
        raise CompileError(got.message, got.loc, got.refusal)
    if got is not None:
        return dataclasses.replace(got, module=module)
    try:
        res = _compile_direct(target, module, opts, deadline)
    except CompileError as err:
        # phase 1 saturated and extracted in full: no pii graph with any time
        permanent = err.refusal is not None and err.refusal.kind == NO_PII_GRAPH and not err.refusal.limited
        memo.keep(name, err, math.inf if permanent else left)
        raise
    memo.keep(name, res, left)
    return res


def _compile_direct(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    stats = CompileStats()
    t0, w0 = time.perf_counter(), budget.now()
    best: tuple[float, Candidate] | None = None
    when_best = 0.0  # work-seconds from the start to the best candidate

    def stop() -> bool:  # asked by phase 1 before each round
        return best is not None and budget.now() - w0 > opts.patience * when_best

    def room() -> Room:  # asked before each saturation step: the rest of the patience
        return (None, None) if best is None else (None, w0 + opts.patience * when_best)

    try:
        # closing: the per-step times are recorded when the enumeration stops, also early
        with contextlib.closing(candidates(target, module, opts, stats, deadline, stop, room)) as cands:
            for i, cand in enumerate(cands, start=1):
                stats.candidates = i
                cost = opts.cost(target, cand.program)
                progress.note(f"candidate {i}, cost {cost:g}" + (f" (best {min(cost, best[0]):g})" if best else ""),
                              step=True)
                if best is None or cost < best[0]:
                    best, when_best, stats.best_index = (cost, cand), cand.found_at - w0, i
                elif cand.found_at - w0 > opts.patience * when_best:
                    break
    except NoPiiGraph as err:
        raise CompileError(err.message, refusal=err.refusal) from None
    stats.seconds = time.perf_counter() - t0
    if best is None:
        reasons = "\n  ".join(stats.failures[-3:])
        family, buf = stats.failure_core[0] if stats.failure_core else ("", "")
        raise CompileError(f"no pii graph of the {stats.pii_graphs} found could be allocated on {target.name}; "
                           f"the last failures:\n  {reasons}",
                           refusal=Refusal(ALLOCATION, (family,) if family else (), buf if buf in target.buffers else "",
                                           limited=budget.now() > deadline))
    cost, cand = best
    return CompileResult(cand.program, cost, cand.pii_graph, cand.allocation, stats, module)


