"""The simplest cost model (Act §8): the sum of the instructions' latencies."""
from __future__ import annotations

from ..target import TargetDef
from .program import Program


def latency_sum(target: TargetDef, prog: Program) -> int:
    return sum(int(target.instructions[i.name].latency(i.attrs)) for i in prog.instructions)
