"""What a long compilation is doing, for a person watching: the compiler writes notes
here and never reads them, so a display changes nothing it decides.

``note(text)`` costs one test when nothing listens; ``shown(label)`` listens and keeps a
one-line status on standard error (rich) while the block runs, when standard error is a
terminal. ``decided(text)`` says how a strategy ended (found, or why not); ``logged()``
(``compile -v``) prints every note and decision as a line of its own, with the work clock."""
from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from . import budget

_listener: Callable[[str], None] | None = None
_logger: Callable[[str], None] | None = None
_context = ""
MAX_LOGGED = 300  # characters of a decision's text in the log (a refusal can list many reasons)


def note(text: str, step: bool = False) -> None:
    """Say what the compiler is doing now: a strategy or a part of the kernel, or with
    ``step`` a step inside it (a candidate), shown after the last strategy's note."""
    global _context
    if _listener is not None:
        if not step:
            _context = text
        _listener(f"{_context}, {text}" if step and _context else text)
    if _logger is not None and not step:
        _logger(text)


def decided(text: str) -> None:
    """Say how a strategy or an option ended: only the log (``logged``) shows it."""
    if _logger is not None:
        _logger(text)


@contextmanager
def logged(enabled: bool = True) -> Iterator[None]:
    """While the block runs, every note (not the steps) and every decision is a line on
    standard error: ``[work-seconds] text``, the text's first line cut at MAX_LOGGED."""
    global _logger
    if not enabled:
        yield
        return
    start = budget.now()

    def write(text: str) -> None:
        line = text.split("\n", 1)[0]
        line = line if len(line) <= MAX_LOGGED else line[:MAX_LOGGED] + "..."
        print(f"[{budget.now() - start:7.2f}] {line}", file=sys.stderr, flush=True)

    _logger = write
    try:
        yield
    finally:
        _logger = None


@contextmanager
def shown(label: str, enabled: bool | None = None) -> Iterator[None]:
    """A status line ``label: <the latest note> (<work-seconds>, <seconds>)`` on standard
    error while the block runs; by default only when standard error is a terminal."""
    global _listener, _context
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        yield
        return
    from rich.console import Console

    start, work = time.monotonic(), budget.now()
    with Console(stderr=True).status(label) as status:
        def listen(text: str) -> None:
            status.update(f"{label}: {text} (work {budget.now() - work:.1f} s, {time.monotonic() - start:.0f} s)")

        _listener = listen
        try:
            yield
        finally:
            _listener = None
            _context = ""
