"""The timing model (Act §9.3 and App. D): how long a program takes, from the .isa facts alone.

Each instruction occupies its engine for its latency expression. Engines run
concurrently; each takes its instructions in issue order, one at a time, the way
Gemmini's load, execute and store queues do. An instruction starts once

- its engine has finished the engine's previous instruction,
- every earlier write to a slice it reads has finished (RAW),
- every earlier reader of the slice it overwrites has finished (WAR: a reader
  needs its data until it completes), and every earlier write to it has finished (WAW).

Slices are the rectangles h gives (one [start, start + length) range per access
dimension of the buffer), so two accesses conflict exactly when their rectangles
intersect. The program's inputs and constants are in HBM at time 0. Validity (e)
is the functional simulator's business; attributes and bounds are checked here
too, with the simulator's own checks, so a bad program is reported, not timed.

Speed: each buffer is cut into cells at every slice boundary the program uses,
so two slices meet exactly when they share a cell, and each cell keeps when its
latest write and its latest read finish. An instruction is then a few numpy max
operations over the cells of its slices, whatever the pattern of slices: a
program is timed in time linear in its length (times the cells a slice spans).
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ..target import InstructionDef, TargetDef
from .machine import SimError, _attributes, check_slice
from ..program import ConcreteInstr, Program, instr_text

Rect = tuple[tuple[int, int], ...]  # [lo, hi) per access dimension


@dataclass(frozen=True)
class InstrTiming:
    start: int
    end: int
    engine: str


@dataclass(frozen=True)
class Timing:
    """What the timing model reports for one program (times in cycles from 0)."""

    cycles: int  # makespan
    instrs: tuple[InstrTiming, ...]  # in program order
    busy: dict[str, int]  # cycles each engine of the target is occupied (0 if idle)
    bytes_moved: dict[tuple[str, str], int]  # (src buffer, dst buffer) -> bytes, src != dst
    ops: tuple[ConcreteInstr, ...] = field(default=(), repr=False, compare=False)
    clock_hz: float | None = None

    def utilization(self, engine: str) -> float:
        return self.busy.get(engine, 0) / self.cycles if self.cycles else 0.0

    def trace_json(self) -> str:
        """Chrome-trace / Perfetto JSON (Trace Event Format): one track (thread) per engine,
        one complete ("X") event per instruction; ``ts`` and ``dur`` in microseconds of the
        target's clock, as the format defines them, and in cycles among the event's args."""
        us = 1e6 / self.clock_hz if self.clock_hz else 1e-3  # a target without a clock: 1 GHz
        tids = {e: i for i, e in enumerate(self.busy, start=1)}
        events: list[dict] = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "engines"}}]
        events += [{"name": "thread_name", "ph": "M", "pid": 1, "tid": t, "args": {"name": e}} for e, t in tids.items()]
        events += [{"name": "thread_sort_index", "ph": "M", "pid": 1, "tid": t, "args": {"sort_index": t}}
                   for t in tids.values()]
        for i, (t, ci) in enumerate(zip(self.instrs, self.ops)):
            events.append({"name": ci.name, "cat": t.engine, "ph": "X", "pid": 1, "tid": tids[t.engine],
                           "ts": t.start * us, "dur": (t.end - t.start) * us,
                           "args": {"index": i, "text": instr_text(ci), "start_cycle": t.start,
                                    "cycles": t.end - t.start}})
        return json.dumps({"traceEvents": events, "displayTimeUnit": "ns",
                           "otherData": {"time_unit": "microseconds", "cycles": self.cycles,
                                         "clock_hz": self.clock_hz or 1e9}})


def time_program(target: TargetDef, prog: Program) -> Timing:
    """When each instruction runs under the rules of the module docstring."""
    engines = list(dict.fromkeys(ins.engine for ins in target.instructions.values()))
    engine_free = dict.fromkeys(engines, 0)
    busy = dict.fromkeys(engines, 0)
    moved: dict[tuple[str, str], int] = defaultdict(int)
    row_bytes = {name: b.row_nbytes for name, b in target.buffers.items()}
    ops = tuple(prog.flat())
    accesses = instruction_accesses(target, ops)
    grids = cell_grids(target, accesses)
    out: list[InstrTiming] = []
    for ins, latency, slices in accesses:
        (dst, wrect), reads = slices[0], slices[1:]
        g = grids[dst]
        w = g.cells(wrect)
        ready = max([engine_free[ins.engine], int(g.written[w].max()), int(g.read[w].max())]
                    + [int(grids[buf].written[grids[buf].cells(r)].max()) for buf, r in reads])
        end = ready + latency
        engine_free[ins.engine] = end
        busy[ins.engine] += latency
        for buf, r in reads:
            cells = grids[buf].read[grids[buf].cells(r)]
            np.maximum(cells, end, out=cells)
            if buf != dst:
                moved[buf, dst] += math.prod(hi - lo for lo, hi in r) * row_bytes[buf]
        g.written[w] = end  # every earlier write of these cells finished by `ready`
        out.append(InstrTiming(ready, end, ins.engine))
    return Timing(max((t.end for t in out), default=0), tuple(out), busy, dict(moved),
                  ops, target.clock_hz)


Access = tuple[type[InstructionDef], int, list[tuple[str, Rect]]]  # instruction, latency, [output, inputs...]


def instruction_accesses(target: TargetDef, ops: tuple[ConcreteInstr, ...]) -> list[Access]:
    """Each instruction's latency and slices, checked as the simulator checks them."""
    shapes = {name: b.access_shape for name, b in target.buffers.items()}
    found = []
    for ci in ops:
        ins = target.instructions.get(ci.name)
        if ins is None:
            raise SimError(f"unknown instruction '{ci.name}' for target {target.name}", ci.loc)
        a = _attributes(ins, ci)
        slices = []
        for s, (starts, lengths) in zip((ins.output,) + ins.inputs, ins.h(a)):
            r = tuple((lo, lo + n) for lo, n in zip(starts, lengths))
            if not all(0 <= lo < hi <= dim for (lo, hi), dim in zip(r, shapes[s.buffer])):
                check_slice(target, s.buffer, (starts, lengths), ci)  # raises the simulator's error
            slices.append((s.buffer, r))
        found.append((ins, int(ins.latency(a)), slices))
    return found


@dataclass
class CellGrid:
    """A buffer cut at every slice boundary, per access dimension; per cell, when its
    latest write and its latest read finish (0: never, the state at time 0)."""

    cuts: list[dict[int, int]]  # per dimension: boundary -> index of the cell starting there
    written: np.ndarray
    read: np.ndarray

    def cells(self, r: Rect) -> tuple[slice, ...]:
        return tuple(slice(c[lo], c[hi]) for c, (lo, hi) in zip(self.cuts, r))


def cell_grids(target: TargetDef, accesses: list[Access]) -> dict[str, CellGrid]:
    bounds: dict[str, list[set[int]]] = {name: [set() for _ in b.access_shape] for name, b in target.buffers.items()}
    for _, _, slices in accesses:
        for buf, r in slices:
            for cut, (lo, hi) in zip(bounds[buf], r):
                cut.update((lo, hi))
    grids = {}
    for name, dims in bounds.items():
        cuts = [{x: i for i, x in enumerate(sorted(d))} for d in dims]
        shape = tuple(max(0, len(c) - 1) for c in cuts)
        grids[name] = CellGrid(cuts, np.zeros(shape, np.int64), np.zeros(shape, np.int64))
    return grids
