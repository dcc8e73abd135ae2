"""The loop nest's program passes: named Program -> Program rewrites, run in order.

A tiled kernel's program is assembled as a loop nest (``loops.looped_programs``: the tile
programs relocated into it), then each pass of ``LOOP_PASSES`` rewrites the previous
stage's program. Every stage that changed something is a candidate: the cheapest that
passes the program verifier wins (``loops.cheapest_checked``), so a pass never has to
be right about whether it pays, only about what the program computes. Each run's time is
recorded under the pass's name (``PASS_SECONDS``), and a compile result keeps the stages
of the loop nest it chose, which ``compile --dump-after PASS`` prints.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from .. import stopwatch
from ..program import Program
from ..target import TargetDef
from .double_buffer import double_buffered
from .reuse import reused

ASSEMBLED = "loop-nest"  # the name of the first stage: the loop nest as assembled, before any pass


@dataclass(frozen=True)
class ProgramPass:
    name: str
    run: Callable[[TargetDef, Program], Program]
    doc: str


def _items_pass(name: str, fn, doc: str) -> ProgramPass:  # noqa: ANN001
    """A pass over a program's instruction list (the transforms work on items)."""
    return ProgramPass(name, lambda target, prog: replace(prog, instructions=fn(target, list(prog.instructions))), doc)


LOOP_PASSES: tuple[ProgramPass, ...] = (
    _items_pass("double-buffer", double_buffered,
                "each loop whose loads can overlap the previous iteration's compute gets two copies of its "
                "on-chip tiles, used in turn (superopt.double_buffer)"),
    _items_pass("hoist-loads", reused,
                "loads that read the same bytes in every iteration of a loop move out of it (superopt.reuse)"),
)
PASS_NAMES = (ASSEMBLED,) + tuple(p.name for p in LOOP_PASSES)

PASS_SECONDS = stopwatch.Totals()  # each pass's seconds in this process, by name (a compile's stats take differences)


@dataclass(frozen=True)
class Stage:
    """The program after a pass (``ASSEMBLED``: before any)."""

    name: str
    program: Program
    seconds: float = 0.0


def run_passes(target: TargetDef, prog: Program, passes: tuple[ProgramPass, ...] = LOOP_PASSES) -> list[Stage]:
    """The assembled program and, after each pass that changed it, the program then."""
    stages = [Stage(ASSEMBLED, prog)]
    for p in passes:
        t0 = time.perf_counter()
        out = p.run(target, stages[-1].program)
        seconds = time.perf_counter() - t0
        PASS_SECONDS.add(p.name, seconds)
        stopwatch.add("loops", seconds)
        if out.instructions != stages[-1].program.instructions:
            stages.append(Stage(p.name, out, seconds))
    return stages
