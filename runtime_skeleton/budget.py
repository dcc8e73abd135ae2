"""The compiler's clock: work done, not seconds elapsed.

Every limit inside a compilation (the strategies' shares of the time, the patience,
phase 1's and phase 2's budgets) is read on this clock, so the program that comes out
is the same on any machine and under any load. The clock advances only when the
compiler does counted work (``spend``): rules applied and e-nodes added in phase 1,
e-classes explored by extraction, orders and allocations in phase 2, CP-SAT's own
deterministic time, instructions simulated to check loop programs. Its unit is the
work-second: the counted work a 2-core AMD EPYC does in about a second
(``COST``, fitted by ``bench/work_clock.py``), so ``--timeout 60`` still means about a
minute there.

The wall clock is only an outer cap (``wall_limit``): once it passes, the next
``spend`` raises ``OutOfTime``, whatever the work clock says. Only that error, and
nothing the compiler chooses, depends on the machine's speed.
"""
from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator

# work-seconds per event: fitted by bench/work_clock.py on a 2-core AMD EPYC (commit 4f5c2f4+,
# 30 kernels, median error 18%); where the fit gave 0 (events that grow with others), a small
# cost of their own, so that no loop of them runs free
COST = {
    "apply": 23e-6,  # one rule tried at one e-node
    "term": 2e-6,  # one term node looked up or added to the e-graph
    "egraph": 10e-3,  # one e-graph made: egglog declares its relations and load rules (measured: 10.5 ms)
    "node": 60e-6,  # one e-node sent to egglog
    "snapshot": 10e-6,  # one e-node read back from egglog after a flush
    "explore": 40e-6,  # one requirement visited by extraction's bounds, its options built (measured)
    "realize": 4e-6,  # one choice tried by extraction's enumeration
    "graph": 1e-3,  # one pii graph extracted
    "order": 7e-6,  # per instruction of an order whose live ranges are computed
    "pair": 0.8e-6,  # one pair of values live together in an order's interference graph (measured: 0.76 us)
    "alloc": 10e-6,  # per instruction placed by first fit
    "step": 35e-6,  # one instruction checked in a loop program
    "schedule": 30e-6,  # one instruction of a straight-line program list-scheduled (its dependences)
    "ready": 0.6e-6,  # one ready instruction the list scheduler compares (measured: 0.55 us)
    "query": 8e-3,  # one z3 query over a loop instruction's iterations (program/verify.py)
}
WALL_FACTOR = 3.0  # the wall-clock cap of a compilation, in multiples of its work budget


class OutOfTime(BaseException):
    """The wall clock passed the compilation's outer cap. Not an Exception, like
    KeyboardInterrupt: the strategies' fallbacks catch errors to try another way, and this
    one must end the whole compilation (``compile_module`` turns it into a CompileError)."""

    @property
    def message(self) -> str:
        return str(self)

    loc = None


class _Clock:
    def __init__(self) -> None:
        self.work = 0.0  # work-seconds done in this process
        self.counts: dict[str, int] = dict.fromkeys(COST, 0)
        self.walls: list[float] = []  # perf_counter caps, innermost last
        self.cap = math.inf


_CLOCK = _Clock()


def now() -> float:
    """Work-seconds done in this process: deadlines are ``now() + budget``."""
    return _CLOCK.work


def after(seconds: float) -> float:
    """The deadline ``seconds`` of work from now."""
    return _CLOCK.work + seconds


def spend(event: str, n: float = 1) -> None:
    """Count ``n`` events of a kind of work; OutOfTime once the wall-clock cap has passed."""
    _CLOCK.counts[event] += int(n)
    spend_seconds(COST[event] * n)


def spend_seconds(seconds: float) -> None:
    """Work measured in work-seconds already (CP-SAT's deterministic time); OutOfTime once
    the wall-clock cap has passed."""
    _CLOCK.work += seconds
    if time.perf_counter() > _CLOCK.cap:
        raise OutOfTime(f"the wall-clock limit of the compilation passed ({WALL_FACTOR:g} times its time budget)")


def counts() -> dict[str, int]:
    """Events counted so far in this process (for calibration and stats)."""
    return dict(_CLOCK.counts)


def wall_left() -> float:
    """Seconds of wall clock before the cap (inf without one)."""
    return _CLOCK.cap - time.perf_counter()


@contextlib.contextmanager
def wall_limit(seconds: float) -> Iterator[None]:
    """Cap the wall clock at ``seconds`` from now for the work inside (nested caps: the nearest)."""
    _CLOCK.walls.append(time.perf_counter() + seconds)
    _CLOCK.cap = min(_CLOCK.walls)
    try:
        yield
    finally:
        _CLOCK.walls.pop()
        _CLOCK.cap = min(_CLOCK.walls, default=math.inf)
