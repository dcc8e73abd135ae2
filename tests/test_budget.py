"""The work clock: a compilation's choices depend on the work done, not on the wall clock."""
from __future__ import annotations

import pathlib
import time

import pytest

from runtime_skeleton import budget
from runtime_skeleton.compile import CompileError, CompileOptions, compile_hlo

from generated.gemmini import TARGET as GEMMINI

KERNELS = pathlib.Path(__file__).resolve().parent.parent / "examples" / "kernels"


def test_the_work_clock_counts_events_and_deadlines_are_work():
    w0, n0 = budget.now(), budget.counts()["apply"]
    budget.spend("apply", 10)
    assert budget.now() == pytest.approx(w0 + 10 * budget.COST["apply"])
    assert budget.counts()["apply"] == n0 + 10
    assert budget.after(1.0) == pytest.approx(budget.now() + 1.0)


def test_a_slow_machine_gives_the_same_program(monkeypatch):
    """The same kernel compiled with a wall clock that runs 50 times faster than the work (a
    loaded or slow machine, as the compiler sees it) comes out byte for byte the same: no
    limit inside a compilation reads the wall clock (only the outer cap, set far here)."""
    kernel = KERNELS / "gemmini_add3.hlo"
    opts = CompileOptions(timeout=20)
    normal = compile_hlo(GEMMINI, kernel, opts).text
    real = time.perf_counter
    start = real()
    monkeypatch.setattr(time, "perf_counter", lambda: start + 50 * (real() - start))
    monkeypatch.setattr(budget, "WALL_FACTOR", 1e6)
    assert compile_hlo(GEMMINI, kernel, opts).text == normal


def test_past_the_wall_clock_cap_the_compilation_stops_with_its_own_error(monkeypatch):
    monkeypatch.setattr(budget, "WALL_FACTOR", 1e-9)
    with pytest.raises(CompileError, match="wall-clock limit"):
        compile_hlo(GEMMINI, KERNELS / "gemmini_abc.hlo", CompileOptions(timeout=5))


def test_wall_limits_nest_and_unwind():
    assert budget.wall_left() == float("inf")
    with budget.wall_limit(100):
        with budget.wall_limit(5):
            assert budget.wall_left() <= 5
        assert 5 < budget.wall_left() <= 100
    assert budget.wall_left() == float("inf")
