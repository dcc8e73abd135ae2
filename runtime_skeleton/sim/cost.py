"""Cost models for choosing among candidate programs (Act §8).

``latency_sum`` is the simplest: the sum of the instructions' latencies, as if
nothing overlapped. ``cycles`` is the timing model's makespan: engines run
concurrently and wait only for the data they need (timing.py), so it prefers the
program that overlaps loads, compute and stores better — the default. A loop
program that executes many instructions is timed with its loops of more than three
iterations cut to two, and with each in turn at three, and extrapolated (the
steady-state cost of one more iteration of each loop times its further iterations), so
ranking large tilings stays fast.
"""
from __future__ import annotations

from dataclasses import replace

from ..target import TargetDef
from ..program import Loop, Program
from .timing import time_program


def latency_sum(target: TargetDef, prog: Program) -> int:
    return sum(int(target.instructions[i.name].latency(i.attrs)) for i in prog.flat())


EXTRAPOLATE_ABOVE = 2000  # executed instructions


def cycles(target: TargetDef, prog: Program) -> int:
    if prog.executed() <= EXTRAPOLATE_ABOVE:
        return time_program(target, prog).cycles
    long = _long_loops(prog.instructions, ())
    if not long:
        return time_program(target, prog).cycles
    # One run with every loop of more than three iterations cut to two, and one per such loop
    # with it at three: the cost of one more iteration of each, in each of its runs there
    # (the product of its enclosing loops' iterations there), times its further iterations in
    # the whole program (n + 1 timing runs; a part per loop nest, nested loops alike)
    two = time_program(target, _cut(prog, long, None)).cycles
    total = float(two)
    for path, (runs_cut, runs_full, trips) in long.items():
        more = time_program(target, _cut(prog, long, path)).cycles - two
        total += (trips - 2) * runs_full * more / runs_cut
    return round(total)


Path = tuple[int, ...]  # indices of items, outermost first


def _long_loops(items, at: Path, cut: int = 1, full: int = 1) -> dict[Path, tuple[int, int, int]]:
    """Per loop of more than three iterations (its path): how often it runs once such loops
    are cut to two iterations, how often in the program, and its iterations."""
    found: dict[Path, tuple[int, int, int]] = {}
    for k, item in enumerate(items):
        if isinstance(item, Loop):
            here = at + (k,)
            if item.trips > 3:
                found[here] = (cut, full, item.trips)
            found.update(_long_loops(item.body, here, cut * (2 if item.trips > 3 else item.trips),
                                     full * item.trips))
    return found


def _cut(prog: Program, long: dict[Path, tuple[int, int, int]], longer: Path | None) -> Program:
    """``prog`` with the loops ``long`` run twice, ``longer`` three times."""
    def items(seq, at: Path) -> list:
        out = []
        for k, item in enumerate(seq):
            if isinstance(item, Loop):
                here = at + (k,)
                stop = item.start + (3 if here == longer else 2) if here in long else item.stop
                item = replace(item, stop=stop, body=tuple(items(item.body, here)))
            out.append(item)
        return out
    return replace(prog, instructions=items(prog.instructions, ()))
