"""Wall-clock seconds by activity, so that a compilation's statistics account for all of its
time, every attempt included (the tiling search compiles many tile kernels; the program
kept comes from one of them). The totals are per process; ``compile_module`` reports how
much each grew during one compilation. Only statistics read them: no decision does."""
from __future__ import annotations

_TOTALS: dict[str, float] = {}


def add(activity: str, seconds: float) -> None:
    _TOTALS[activity] = _TOTALS.get(activity, 0.0) + seconds


def totals() -> dict[str, float]:
    return dict(_TOTALS)


def since(before: dict[str, float]) -> dict[str, float]:
    """Seconds each activity took since ``totals()`` returned ``before``."""
    return {k: v - before.get(k, 0.0) for k, v in _TOTALS.items() if v > before.get(k, 0.0)}
