"""The compiler's entry point: ``compile_hlo`` and ``compile_module``.

A kernel is checked for what the target can never compute (``isel.obstacles``), then
compiled by the strategies of ``superopt.driver``: straight-line (``direct``), in loops
over tiles, block by block, stage by stage, one output at a time. The types of a
compilation (options, results, errors) live in ``direct`` and are named here too.
"""
from __future__ import annotations

import dataclasses
import pathlib
import time
from typing import Any

from . import budget, memo, stopwatch
from .refusal import EMPTY, TIMEOUT, UNSUPPORTED, Refusal
from .direct import CompileError, CompileOptions, CompileResult, compile_direct
from .errors import HloError
from .hlo import jax_module, kernel_module
from .ir.empty import drop_empty, empty_value
from .ir.graph import Module
from .ir.inline import inline_calls
from .ir.simplify import simplified
from .isel.obstacles import kernel_obstacles, refusal
from .isel.phase1 import reads_float_bits
from .target import TargetDef


def compile_module(target: TargetDef, module: Module, opts: CompileOptions | None = None) -> CompileResult:
    """The cheapest program found (Fig. 14a); CompileError says why there is none.

    A kernel that does not compile as straight-line code within its share of the
    time is strip-mined into loops over tiles (superopt.tiled) when it can be, a
    kernel with several outputs is compiled one output at a time (superopt.outputs),
    and one whose contractions feed contractions stage by stage (superopt.stages): the
    order and the shares of time are superopt.driver's."""
    opts = opts or CompileOptions()
    deadline = budget.after(opts.timeout)
    inlined = simplified(drop_empty(inline_calls(module)))
    empty = empty_value(inlined)
    if empty is not None:
        raise CompileError(f"'{empty.name}' ({empty.type}) has no elements: {target.name} programs compute no "
                           "empty tensors (only a concatenation's empty operands are dropped)", empty.loc,
                           Refusal(EMPTY, node=empty.name))
    found = kernel_obstacles(target, inlined)
    if found:
        raise CompileError(refusal(target, found), found[0].loc,
                           Refusal(UNSUPPORTED, tuple(sorted({o.opcode for o in found})),
                                   ", ".join(sorted({o.type.dtype.name for o in found})), found[0].name))
    if reads_float_bits(inlined):  # every piece, stage and tile of it: only bit-exact rules
        opts = dataclasses.replace(opts, phase1=dataclasses.replace(opts.phase1, exact_only=True))
    from .superopt.driver import compile_kernel

    compile_one = compile_kernel if opts.tiling else compile_direct
    t0, before = time.perf_counter(), stopwatch.totals()
    try:
        with budget.wall_limit(opts.timeout * budget.WALL_FACTOR), memo.scope():
            res = compile_one(target, inlined, opts, deadline)
    except budget.OutOfTime as err:
        raise CompileError(f"no program found within the time limit: {err.message}",
                           refusal=Refusal(TIMEOUT, limited=True)) from None
    seconds = time.perf_counter() - t0
    spent = stopwatch.since(before)
    spent["other"] = max(0.0, seconds - sum(spent.values()))  # the driver, costing candidates, ...
    stats = dataclasses.replace(res.stats, seconds=seconds, spent=spent)
    return dataclasses.replace(res, module=module, target=target, stats=stats)  # checked against the kernel as written


def load_kernel(source: Any) -> Module:
    """A kernel from a path (``pathlib.Path``), text, bytes, a Module, a
    ``jax.stages.Lowered`` or an ``XlaComputation`` (``hlo.kernel_module``). A ``str`` is
    always text, never a file name."""
    try:
        return kernel_module(source)
    except HloError as err:
        if isinstance(source, str) and "\n" not in source.strip() and pathlib.Path(source.strip()).is_file():
            raise HloError(f"{err.message} (a str is HLO text: to read the file '{source.strip()}', pass "
                           f"pathlib.Path('{source.strip()}'))", err.loc) from None
        raise


def compile_hlo(target: TargetDef, source: Any, opts: CompileOptions | None = None, **options) -> CompileResult:
    """Compile a kernel for the target: a path (``pathlib.Path``), HLO or StableHLO text,
    a serialized HloModuleProto (bytes), or a ``jax.stages.Lowered`` (``load_kernel``).

    Keyword options override fields of CompileOptions (timeout, deterministic, patience)."""
    opts = dataclasses.replace(opts or CompileOptions(), **options)
    return compile_module(target, load_kernel(source), opts)


def compile_jax(target: TargetDef, fn: Any, *args: Any, opts: CompileOptions | None = None,
                **options) -> CompileResult:
    """Compile the kernel JAX traces from ``fn`` on example arguments ``args`` (arrays or
    ``jax.ShapeDtypeStruct``s) for the target; needs jax (``pip install 'actgen[jax]'``)."""
    opts = dataclasses.replace(opts or CompileOptions(), **options)
    return compile_module(target, jax_module(fn, *args), opts)


def verify(target: TargetDef, result: CompileResult, seeds: tuple[int, ...] = (0, 1),
           native: bool = False) -> list[str]:
    """Run the program on the functional simulator (natively on this CPU with ``native``)
    against the reference interpreter on random inputs; the problems found (empty when it
    matches). Floats match within a few ulps of the magnitudes summed on the way
    (``reference.magnitudes``); where the kernel is exact on inputs of small integers, it
    also runs on such inputs, and must match bit for bit."""
    from .reference import evaluate
    from .reference.compare import compare_outputs
    from .reference.magnitudes import magnitudes
    from .reference.npz_io import integer_inputs, random_inputs
    from .sim import run_program

    if native:
        from .emit.native import native_function

        fn = native_function(target, result.program)

    def run(x: list) -> list:
        return fn(*x) if native else run_program(target, result.program, x)

    types = [d.type for d in result.program.inputs]
    problems = []
    for seed in seeds:
        x = random_inputs(types, seed)
        problems += [f"seed {seed}: {p}"
                     for p in compare_outputs(run(x), evaluate(result.module, x), magnitudes(result.module, x).outputs)]
    x = integer_inputs(types, seeds[0] if seeds else 0)
    if any(t.dtype.is_float for t in types) and magnitudes(result.module, x).exact:
        problems += [f"integer-valued inputs: {p}" for p in compare_outputs(run(x), evaluate(result.module, x), exact=True)]
    return problems
