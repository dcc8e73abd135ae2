"""Which errors of a fuzz job are refusals, and how a target travels to workers (the jobs run
through ``executor.map_jobs``)."""
from __future__ import annotations

from ..errors import ActgenError
from ..superopt.parallel import TargetRef, package_name
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


def for_workers(t: TargetDef, jobs: int) -> tuple[TargetDef | TargetRef, int]:
    """The target as jobs carry it, and how many worker processes to use: workers import
    the generated package by its module path; a TargetDef built elsewhere is checked here,
    in one process."""
    name = package_name(t) if jobs > 1 else None
    return (TargetRef(name) if name else t), (jobs if name else 1)
