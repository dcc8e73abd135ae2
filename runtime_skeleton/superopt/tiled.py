"""Compiling through strip-mining (the compile path for kernels that do not fit
one straight-line program).

First the whole kernel gets ``direct_share`` of the time as straight-line code
(Act). If that fails, the kernel is strip-mined along its output's outer
dimension, with tile sizes from the divisors of its extent; each tile kernel is
compiled the same way, so a tile that is still too large is strip-mined again
along its next dimension (a loop nest). Tile sizes are tried in order of how
close the tile kernel's largest tensor comes to one row of an on-chip buffer of
the output's element type (a zmm register, a Gemmini accumulator row):
instructions work on such rows, so those tiles are the ones phase 1 maps with the
fewest splits. Every tile program comes from phases 1-2, so every candidate is
allocatable; the looped programs are ranked by the cost model, and
after the first success the next sizes are tried, each with ``patience`` times
the time the first took, while they keep getting cheaper.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

from ..compile import CompileError, CompileOptions, CompileResult, compile_direct
from ..ir.graph import Module
from ..ir.types import TensorType
from ..sim.program import Program
from ..target import TargetDef
from .loops import looped_program
from .strip import NotTileable, Tiling, nest, strip, tile_sizes

MAX_DEPTH = 3  # loop nest depth


@dataclass
class _Found:
    tiling: Tiling | None  # None: straight-line
    tile: CompileResult  # the innermost (straight-line) compilation
    program: Program  # the whole kernel's: tile.program in the loops of tiling
    cost: float


def compile_tiled(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    t0 = time.perf_counter()
    found = _search(target, module, opts, deadline, 0)
    res = found.tile
    if found.tiling is None:
        return res
    stats = dataclasses.replace(res.stats, seconds=time.perf_counter() - t0)
    return CompileResult(found.program, found.cost, res.pii_graph, res.allocation, stats, module, found.tiling)


def _straight(res: CompileResult) -> _Found:
    return _Found(None, res, res.program, res.cost)


def _search(target: TargetDef, module: Module, opts: CompileOptions, deadline: float, depth: int) -> _Found:
    sizes = tile_sizes(module) if depth < MAX_DEPTH else []
    if not sizes:
        return _straight(compile_direct(target, module, opts, deadline))
    t0 = time.perf_counter()
    try:
        return _straight(compile_direct(target, module, opts, t0 + opts.direct_share * max(0.0, deadline - t0)))
    except CompileError as err:
        direct_error = err
    tilings, why = _preferred(target, module, sizes, f"i{depth}")
    best: _Found | None = None
    spent = 0.0  # seconds the first successful tiling took: later sizes get patience times that
    for tiling in tilings:
        now = time.perf_counter()
        if now >= deadline:
            why.append("the time limit")
            break
        until = deadline if best is None else min(deadline, now + opts.patience * spent)
        try:
            found = _tiled(target, module, opts, until, depth, tiling)
        except (NotTileable, CompileError) as err:
            why.append(f"tiles of {tiling.dims[0][2]}: {err.message}")
            if best is not None and isinstance(err, CompileError):
                break
            continue
        if best is None:
            spent = time.perf_counter() - now
        elif found.cost >= best.cost:
            break
        best = found
    if best is None:
        raise CompileError(f"{direct_error.message}\n  strip-mining did not help either: " + "; ".join(why[-3:]),
                           direct_error.loc)
    return best


def _row_bytes(target: TargetDef, t: TensorType) -> int:
    """Bytes of one row of the on-chip buffers that hold the element type (any, if none does)."""
    rows = [b for b in target.buffers.values() if not b.is_hbm]
    same = [b for b in rows if b.dtype == t.dtype] or rows
    return min(math.prod(b.unit_shape or (1,)) * b.dtype.nbytes for b in same) if same else 1


def _preferred(target: TargetDef, module: Module, sizes: list[int], var: str) -> tuple[list[Tiling], list[str]]:
    """The strip-minings of the kernel, nearest an on-chip row first, and why the other sizes cannot be."""
    want = _row_bytes(target, module.result_type)
    tilings, why = [], []
    for t in sizes:
        try:
            tilings.append(strip(module, t, var))
        except NotTileable as err:
            why.append(f"tiles of {t}: {err.message}")

    def distance(tiling: Tiling) -> float:
        largest = max(i.type.nbytes for i in tiling.tile.entry_computation if isinstance(i.type, TensorType))
        return abs(math.log2(max(largest, 1) / want))

    return sorted(tilings, key=lambda tiling: (distance(tiling), tiling.dims[0][2])), why


def _tiled(target: TargetDef, module: Module, opts: CompileOptions, deadline: float, depth: int,
           tiling: Tiling) -> _Found:
    inner = _search(target, tiling.tile, opts, deadline, depth + 1)
    full = tiling if inner.tiling is None else nest(tiling, inner.tiling)
    types = [t for t in module.parameter_types if isinstance(t, TensorType)]
    prog = looped_program(target, full, inner.tile.program, types, module.result_type)
    return _Found(full, inner.tile, prog, opts.cost(target, prog))
