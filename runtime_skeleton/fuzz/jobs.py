"""How fuzz jobs run: here or in worker processes, and which errors of a job are refusals."""
from __future__ import annotations

from collections.abc import Callable, Iterator

from ..errors import ActgenError
from ..superopt.parallel import package_name
from ..target import TargetDef


def is_refusal(err: BaseException) -> bool:
    """A reasoned 'cannot' from the compiler, as opposed to a bug."""
    from ..alloc.allocate import AllocationFailed
    from ..compile import CompileError
    from ..isel.phase1 import NoPiiGraph

    if isinstance(err, (CompileError, NoPiiGraph, AllocationFailed)):
        return True
    # the base class is what instruction selection raises for what it does not handle;
    # a message owning up to a bug, and the specific classes (HLO, interpreter,
    # simulator, program) are failures
    return type(err) is ActgenError and "bug" not in err.message


def for_workers(t: TargetDef, jobs: int) -> tuple[TargetDef | str, int]:
    """The target as jobs carry it, and how many worker processes to use: workers import
    the generated package by name; a TargetDef built elsewhere is checked here, in one process."""
    name = package_name(t) if jobs > 1 else None
    return (name or t), (jobs if name else 1)


def map_jobs(fn: Callable, jobs: list[tuple], workers: int) -> Iterator:
    """``fn`` over ``jobs`` in order: here, or in ``workers`` processes (each compiles one
    kernel at a time, so per-kernel time limits mean the same as in one process).
    ``fn`` is a module-level function; in workers a target is passed by package name."""
    if workers <= 1:
        yield from map(fn, jobs)
        return
    import concurrent.futures
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # no fork of a process that holds egglog and CP-SAT threads
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        yield from pool.map(fn, jobs)
