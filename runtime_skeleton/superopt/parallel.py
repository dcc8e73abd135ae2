"""Evaluating independent candidates in worker processes (``--jobs N``).

Workers are spawned, not forked: egglog's and CP-SAT's thread pools do not
survive a fork (a forked child waits forever on threads it does not have). A
job is a module-level function and picklable arguments; a target travels as the
module path of its generated package. Results arrive in completion order; when the
caller stops asking, the workers are terminated, so candidates still running do
not outlive the search.
"""
from __future__ import annotations

import importlib
import multiprocessing
from dataclasses import dataclass
import queue
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..target import TargetDef


def package_name(t: TargetDef) -> str | None:
    """The module that imports ``t`` (``generated.gemmini``, or wherever ``actgen -o`` put
    it); None when ``t`` was not imported from a package (workers could not load it)."""
    if not t.package:
        return None
    try:
        return t.package if target_named(t.package) is t else None
    except ImportError:
        return None


def target_named(name: str) -> TargetDef:
    """The target of the generated package at module path ``name`` (``generated.gemmini``,
    ``mytgt``): exactly that module, as ``package_name`` gave it."""
    return importlib.import_module(name).TARGET


@dataclass(frozen=True)
class TargetRef:
    """A target as jobs carry it to other processes: the module path of its package."""

    module: str

    def load(self) -> TargetDef:
        return target_named(self.module)


def can_start_workers() -> bool:
    """Whether this process may start workers (a pool's own workers may not)."""
    return not multiprocessing.current_process().daemon


def unordered(fn: Callable[..., Any], jobs: Sequence[tuple], workers: int,
              poll: float = 0.1) -> Iterator[tuple[int, Any] | None]:
    """(index, fn(*jobs[index])) as they finish, in ``workers`` processes, started
    in index order; None every ``poll`` seconds that nothing finishes, so the
    caller can stop waiting (closing the generator terminates the workers)."""
    done: queue.SimpleQueue = queue.SimpleQueue()
    pool = multiprocessing.get_context("spawn").Pool(min(workers, len(jobs)))
    try:
        for i, job in enumerate(jobs):
            pool.apply_async(_indexed, (fn, i, job), callback=done.put, error_callback=done.put)
        left = len(jobs)
        while left:
            try:
                got = done.get(timeout=poll)
            except queue.Empty:
                yield None
                continue
            if isinstance(got, BaseException):  # fn raised what it should have returned
                raise got
            left -= 1
            yield got
    finally:
        pool.terminate()


def _indexed(fn: Callable[..., Any], index: int, job: tuple) -> tuple[int, Any]:
    return index, fn(*job)
