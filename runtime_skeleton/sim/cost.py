"""Cost models for choosing among candidate programs (Act §8).

``latency_sum`` is the simplest: the sum of the instructions' latencies, as if
nothing overlapped. ``cycles`` is the timing model's makespan: engines run
concurrently and wait only for the data they need (timing.py), so it prefers the
program that overlaps loads, compute and stores better — the default.
"""
from __future__ import annotations

from ..target import TargetDef
from .program import Program
from .timing import time_program


def latency_sum(target: TargetDef, prog: Program) -> int:
    return sum(int(target.instructions[i.name].latency(i.attrs)) for i in prog.flat())


def cycles(target: TargetDef, prog: Program) -> int:
    return time_program(target, prog).cycles
