"""List scheduling of a straight-line program under the timing model.

Phase 2 orders a pii graph's instructions for their buffers' sake (Sethi–Ullman: the
least live at once), not for the engines: a load that could run while the previous
tile is stored waits behind it in issue order. Here the allocated program is reordered
as a list scheduler does: the dependences are the slices (an instruction after every
earlier write of what it reads or writes, and after every earlier read of what it
overwrites; the timing model's RAW, WAW and WAR), so every order they allow computes the
same results, and of the instructions ready, the one that can start first issues next
(ties: the longest path of latencies still behind it, then the old position). Each
instruction starts exactly when the timing model will start it, so the schedule's
makespan is the reordered program's cycles; the old order is kept when it is no slower.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .. import budget
from ..program import ConcreteInstr, Program
from ..sim.timing import Access, cell_grids, instruction_accesses, time_program
from ..target import TargetDef

MAX_INSTRUCTIONS = 2048  # longer programs keep their order (each step scans the ready set: 0.7 s at 2048)


def scheduled(target: TargetDef, prog: Program) -> Program:
    """``prog`` with its instructions in list-scheduled order when that takes fewer cycles
    (programs with loops, and longer ones than MAX_INSTRUCTIONS, are returned as they are)."""
    items = prog.instructions
    if len(items) < 2 or len(items) > MAX_INSTRUCTIONS or not all(isinstance(i, ConcreteInstr) for i in items):
        return prog
    budget.spend("schedule", len(items))
    accs = instruction_accesses(target, tuple(items))
    order, cycles = _list_schedule(accs, _dependences(target, accs))
    if order == list(range(len(items))) or cycles >= time_program(target, prog).cycles:
        return prog
    return dataclasses.replace(prog, instructions=[items[i] for i in order])


def _dependences(target: TargetDef, accs: list[Access]) -> list[set[int]]:
    """Per instruction, the earlier ones it must follow: the last writer of every cell it
    reads or writes, and every reader of a cell it writes since that cell's last write."""
    grids = cell_grids(target, accs)
    writer = {b: np.full(g.written.shape, -1, np.int64) for b, g in grids.items()}
    readers = {b: _lists(g.written.shape) for b, g in grids.items()}
    preds: list[set[int]] = []
    for i, (_, _, slices) in enumerate(accs):
        (dst, wrect), reads = slices[0], slices[1:]
        p: set[int] = set()
        for buf, r in slices:
            w = writer[buf][grids[buf].cells(r)]
            p.update(w[w >= 0].tolist())
        wcells = grids[dst].cells(wrect)
        for lst in readers[dst][wcells].flat:
            p.update(lst)
        p.discard(i)
        preds.append(p)
        for buf, r in reads:
            for lst in readers[buf][grids[buf].cells(r)].flat:
                lst.append(i)
        writer[dst][wcells] = i
        cleared = readers[dst][wcells]
        for k in range(cleared.size):
            cleared.flat[k] = []
    return preds


def _lists(shape: tuple[int, ...]) -> np.ndarray:
    out = np.empty(shape, object)
    for k in range(out.size):
        out.flat[k] = []
    return out


def _list_schedule(accs: list[Access], preds: list[set[int]]) -> tuple[list[int], int]:
    """The order in which the instruction that can start earliest issues first, and its
    makespan (every dependence waits for its predecessor to finish, as in the timing model)."""
    n = len(accs)
    succs: list[list[int]] = [[] for _ in range(n)]
    for i, ps in enumerate(preds):
        for p in ps:
            succs[p].append(i)
    latency = [lat for _, lat, _ in accs]
    height = [0] * n  # the longest path of latencies from the instruction's start to the end
    for i in range(n - 1, -1, -1):
        height[i] = latency[i] + max((height[s] for s in succs[i]), default=0)
    engine_free: dict[str, int] = {}
    finish = [0] * n
    waiting = [len(ps) for ps in preds]
    ready = {i for i in range(n) if waiting[i] == 0}
    order: list[int] = []

    def start(i: int) -> int:
        return max([engine_free.get(accs[i][0].engine, 0)] + [finish[p] for p in preds[i]])

    while ready:
        budget.spend("ready", len(ready))
        i = min(ready, key=lambda i: (start(i), -height[i], i))
        ready.discard(i)
        finish[i] = start(i) + latency[i]
        engine_free[accs[i][0].engine] = finish[i]
        order.append(i)
        for s in succs[i]:
            waiting[s] -= 1
            if waiting[s] == 0:
                ready.add(s)
    return order, max(finish, default=0)
