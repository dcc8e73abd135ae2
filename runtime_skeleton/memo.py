"""Straight-line compiles of equal kernels within one compilation, done once.

The tiled search, the plans of parts and the operator fallback meet the same tile kernel
again and again (a row of a kernel under several nestings of its strips; AMX fuzz kernels:
150 distinct kernels among 430 straight-line attempts, a third of the work-seconds spent on
repeats). Within one ``compile_module`` (``scope``), ``compile_direct`` keeps each outcome by
the kernel's text (its names aside) and the options: a program found is reused; a failure is
raised again at once for an attempt with no more time than the one that failed had (the work
clock counts work, so it would fail the same way); with more time the kernel is compiled again.
Which kernels repeat depends only on the compilation's input, so the same input still gives
the same program.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from .hlo.printer import print_module
from .ir.graph import Module

_SCOPE: ContextVar[dict[str, tuple[Any, float]] | None] = ContextVar("actgen_memo", default=None)


@contextlib.contextmanager
def scope() -> Iterator[None]:
    """Outcomes kept until the end of this block (one compilation)."""
    token = _SCOPE.set({})
    try:
        yield
    finally:
        _SCOPE.reset(token)


def key(module: Module, options: Any) -> str | None:
    """What names an attempt: the kernel as text, its names aside, with what the text does not
    say (output alias, on-chip values, written output) and the options; None outside a scope."""
    if _SCOPE.get() is None:
        return None
    return "\n".join((print_module(module.anonymous()), repr((module.output_alias, module.resident,
                                                              module.output_written, options))))


def recalled(name: str | None, time_left: float) -> Any:
    """The outcome kept for ``name`` (a result, or an error to raise again) when it holds for an
    attempt with ``time_left`` work-seconds; None: compile."""
    memo = _SCOPE.get()
    if name is None or memo is None or name not in memo:
        return None
    outcome, had = memo[name]
    return outcome if not isinstance(outcome, Exception) or time_left <= had else None


def keep(name: str | None, outcome: Any, had: float) -> None:
    """Keep ``outcome`` of an attempt that had ``had`` work-seconds."""
    memo = _SCOPE.get()
    if name is not None and memo is not None:
        memo[name] = (outcome, had)
