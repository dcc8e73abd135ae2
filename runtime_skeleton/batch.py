"""Many kernels compiled at once: ``compile A.hlo B.hlo ... -o DIR``.

Each kernel is one job (``executor.map_jobs``: here, local worker processes, or Ray
tasks); a job gets the kernel's bytes and returns its program text and a summary row,
so workers need no access to the caller's files. Every compilation counts work, not
seconds, so the programs are the same whichever executor ran them.
"""
from __future__ import annotations

import dataclasses
import pathlib
import time

from .direct import CompileError, CompileOptions
from .errors import ActgenError
from .executor import map_jobs
from .superopt.parallel import TargetRef, package_name
from .target import TargetDef


@dataclasses.dataclass(frozen=True)
class BatchRow:
    kernel: str
    program: str | None  # the assembly text; None when the kernel did not compile
    instructions: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    error: str = ""  # why it did not compile, or what a verification found
    verified: bool | None = None  # None: not asked
    mismatch: bool = False  # compiled, but the simulator disagrees with the reference (a bug)
    not_run_natively: bool = False  # asked to run natively, and the CPU or the C compiler could not


def compile_batch(target: TargetDef, kernels: list[pathlib.Path], opts: CompileOptions, *, jobs: int = 1,
                  executor: str = "local", address: str | None = None, check: bool = False,
                  native: bool = False) -> list[BatchRow]:
    """One row per kernel, in the order given. ``check``: each program also runs on the
    simulator against the reference interpreter, and with ``native`` natively on this CPU too
    (``emit.native``; the worker builds it)."""
    name = package_name(target)
    if name is None and (jobs > 1 or executor != "local"):
        raise ActgenError(f"compiling in other processes carries the target by its package, and {target.name} was "
                          "not imported from one")
    ref = TargetRef(name) if name else target
    work = [(ref, str(k), k.read_bytes(), opts, check, native) for k in kernels]
    return list(map_jobs(_compile_one, work, jobs if executor == "local" else max(jobs, 2), executor, address))


def _compile_one(job: tuple) -> BatchRow:
    from .compile import compile_module, verify
    from .fuzz.profile import resolve_target
    from .hlo import kernel_module

    target_ref, label, data, opts, check, native = job
    target = resolve_target(target_ref)
    t0 = time.perf_counter()
    try:
        res = compile_module(target, kernel_module(data, label), opts)
    except ActgenError as err:  # a refusal, no program found, or bad input: said in the row
        why = err.message if isinstance(err, CompileError) else str(err)
        return BatchRow(label, None, seconds=time.perf_counter() - t0, error=why.split("\n")[0])
    seconds = time.perf_counter() - t0
    row = BatchRow(label, res.text, res.program.executed(), res.cost, seconds)
    if check:
        problems = verify(target, res)
        if native and not problems:
            try:
                problems = [f"native: {p}" for p in verify(target, res, native=True)]
            except ActgenError as err:  # the CPU or the C compiler cannot run it: said, not a mismatch
                return dataclasses.replace(row, verified=False, not_run_natively=True, error=f"native: {err}"[:300])
        row = dataclasses.replace(row, verified=not problems, mismatch=bool(problems),
                                  error="; ".join(problems)[:300])
    return row
