"""Cost models for choosing among candidate programs (Act §8).

``latency_sum`` is the simplest: the sum of the instructions' latencies, as if
nothing overlapped. ``cycles`` is the timing model's makespan: engines run
concurrently and wait only for the data they need (timing.py), so it prefers the
program that overlaps loads, compute and stores better — the default. A loop
program that executes many instructions is timed with its heaviest outermost loop
cut to two and three iterations and extrapolated (the steady-state cost of one more
iteration times the rest, each outermost loop's alike), so ranking large tilings stays fast.
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
    loops = [k for k, item in enumerate(prog.instructions) if isinstance(item, Loop) and item.trips > 3]
    if not loops:
        return time_program(target, prog).cycles

    def cut(longer: int | None) -> int:  # every outermost loop run twice, ``longer`` three times
        items = list(prog.instructions)
        for k in loops:
            loop = items[k]
            items[k] = replace(loop, stop=loop.start + (3 if k == longer else 2))
        return cycles(target, replace(prog, instructions=items))

    # one run with every loop cut to two iterations, and one per loop with it at three: the
    # steady-state cost of each loop's further iterations (a program in several parts has a
    # loop nest per part; cutting them one within the other took 2^n runs)
    two = cut(None)
    return two + sum((prog.instructions[k].trips - 2) * (cut(k) - two) for k in loops)
