"""Wall-clock seconds by activity, so that a compilation's statistics account for all of its
time, every attempt included (the tiling search compiles many tile kernels; the program
kept comes from one of them). The totals are per process; a compilation reports how much
each grew while it ran (``since``). Only statistics read them: no decision does.

``add``, ``totals`` and ``since`` keep the activities of ``CompileStats.spent`` (phase 1,
phase 2, emit, loops); other statistics keep totals of their own (``Totals``: the loop
passes by name)."""
from __future__ import annotations


class Totals:
    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}

    def add(self, activity: str, seconds: float) -> None:
        self._seconds[activity] = self._seconds.get(activity, 0.0) + seconds

    def totals(self) -> dict[str, float]:
        return dict(self._seconds)

    def since(self, before: dict[str, float]) -> dict[str, float]:
        """Seconds each activity took since ``totals()`` returned ``before``."""
        return {k: v - before.get(k, 0.0) for k, v in self._seconds.items() if v > before.get(k, 0.0)}


_ACTIVITIES = Totals()
add, totals, since = _ACTIVITIES.add, _ACTIVITIES.totals, _ACTIVITIES.since
