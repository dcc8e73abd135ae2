"""Cost models for choosing among candidate programs (Act §8).

``latency_sum`` is the simplest: the sum of the instructions' latencies, as if
nothing overlapped. ``cycles`` is the timing model's makespan: engines run
concurrently and wait only for the data they need (timing.py), so it prefers the
program that overlaps loads, compute and stores better — the default. A loop
program that executes many instructions is timed with its heaviest outermost loop
cut to two and three iterations and extrapolated (the steady-state cost of one more
iteration times the rest), so ranking large tilings stays fast.
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
    loops = [k for k, item in enumerate(prog.instructions) if isinstance(item, Loop)]
    if not loops:
        return time_program(target, prog).cycles
    k = max(loops, key=lambda k: replace(prog, instructions=[prog.instructions[k]]).executed())  # the first of the heaviest
    loop = prog.instructions[k]
    if loop.trips <= 3:
        return time_program(target, prog).cycles

    def cut(trips: int) -> int:
        items = list(prog.instructions)
        items[k] = replace(loop, stop=loop.start + trips)
        return cycles(target, replace(prog, instructions=items))

    two, three = cut(2), cut(3)
    return two + (loop.trips - 2) * (three - two)
