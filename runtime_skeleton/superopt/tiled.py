"""Compiling through loop nests (the compile path for kernels that do not fit
one straight-line program).

First the whole kernel gets ``direct_share`` of the time as straight-line code
(Act), unless it is too large to try (``MAX_DIRECT_BLOCKS``); when a cut is nearer a
natural on-chip shape than the kernel as it is (``_preferred``), that cut comes first,
for a first program, with ``FIRST_PROGRAM`` of the time. If that fails, its
natural blocks come next: the output cut at once into blocks of Q x R (below), each
block's kernel compiled as straight-line code, in a loop nest (``_natural_blocks``; a
kernel of a few such blocks whose whole e-graph grows too large maps block by block).
Otherwise, or if that fails too, the kernel is cut: strips along one of its output's dimensions
(tile sizes from the divisors of its extent; ``strip``) or a reduction loop over
its longest contraction with the accumulator on chip (``reduction``). Each tile
kernel is handled the same way, so a tile that is still too large is cut again
(a loop nest); inside loops, compiling the tile kernel as it is ranks among the
cuts. Cuts are tried nearest a natural on-chip shape first (``_preferred``): the
tile kernel's largest tensor one on-chip row (element-wise work), or its output
a block of Q x R (R elements a row, Q the rows one instruction writes in the
accumulator's buffer) with a contraction of Q, or of what one instruction
contracts when that is longer (``_natural_contraction``: AMX's int8 tile op
takes 64 bytes of A a row). Those are the
tiles phase 1 maps with the fewest splits. Every tile program comes from phases 1-2, so every
candidate is allocatable; the looped programs are ranked by the cost model.
After the first success the next options are tried, each with ``patience``
times the time the first took, while they keep getting cheaper and until one
comes within ``NEAR_ROOFLINE`` of the kernel's roofline bound.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

from .. import budget, progress
from ..errors import ActgenError
from ..direct import CompileError, CompileOptions, CompileResult, compile_direct
from ..ir.graph import Instruction, Module
from ..ir.types import TensorType
from ..layout import byte_size
from ..program import Program
from ..sim.roofline import roofline
from ..target import TargetDef
from ..isel.isa_rules import store_writes
from ..isel.phase1 import target_facts
from ..target_info import target_info
from . import parallel
from .capacity import combining_buffers, kernel_rows, multiply_add_buffers, outer_products
from .loops import Piece, cheapest_checked, looped_programs
from .passes import PASS_SECONDS, Stage
from .reduction import Split, accumulator_buffers, contraction, split
from .stages import moved_apart
from .strip import OUTPUT, NotTileable, Tiling, cut_dimensions, identity, strip, tile_sizes
from .windows import windowed

MAX_DEPTH = 3  # loop nest depth
DIRECT = None  # the option of compiling a tile kernel as it is
NEAR_ROOFLINE = 0.8  # a program reaching this fraction of the roofline ends the search
ASSEMBLY_SHARE = 0.03  # of the time, kept for assembling and costing the chosen program
MAX_DIRECT_BLOCKS = 32  # larger kernels skip the straight-line attempt when they can be tiled (blocks)
# Of what the whole kernel's straight-line attempt left, what its natural blocks get (``_natural_blocks``):
# a block's straight-line program took 1-3 work-seconds on Gemmini fuzz kernels whose whole kernel had
# no pii graph in 5; the cuts, each searched further inside, keep the rest (and, after a success, the patience)
BLOCKS_SHARE = 0.75
# Before a success, the first (preferred) option of a search gets this share of the time left, the
# others but the last half of it: options nest (rows, then columns, then a reduction loop's steps),
# and halving at every level left the innermost preferred option an eighth
FIRST_OPTION = 0.75
# A whole kernel's preferred cut comes first, for a first program: a loop over natural tiles
# mostly maps in a fraction of a second where straight-line code of the whole kernel can take
# all of its share and find nothing (64 rows of s8 -> s32 on AMX: 5 s for no pii graph, the
# loop of rows 0.02 s). It gets this share of the time; straight-line code comes next, with its
# ``direct_share`` whether the loop was found or not, and wins when it is no costlier.
FIRST_PROGRAM = 0.2


@dataclass(frozen=True)
class _Blocks:
    """The kernel cut at once into its natural output blocks (``_natural_blocks``), each block
    compiled as straight-line code, in a loop nest: no search inside."""

    tiling: Tiling


@dataclass
class _Found:
    tiling: Tiling | None  # None: straight-line
    tile: CompileResult  # the innermost (straight-line) compilation (a reduction: its body's)
    program: Program  # the whole kernel's
    cost: float
    split: Split | None = None
    stages: tuple[Stage, ...] = ()  # the loop nest as assembled and after each pass; program is one of them


def compile_tiled(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    t0, w0, p0 = time.perf_counter(), budget.now(), PASS_SECONDS.totals()
    try:
        start = identity(module)
    except NotTileable:
        return compile_direct(target, module, opts, deadline)
    # the final program is assembled and costed after the search: leave it a little time
    found = _search(target, start, opts, deadline - ASSEMBLY_SHARE * max(0.0, deadline - w0), 0, module)
    res = found.tile
    if found.tiling is None:
        return res
    stats = dataclasses.replace(res.stats, seconds=time.perf_counter() - t0, pass_seconds=PASS_SECONDS.since(p0))
    return CompileResult(found.program, found.cost, res.pii_graph, res.allocation, stats, module, found.tiling,
                         found.split, stages=found.stages)


def _piece(target: TargetDef, tiling: Tiling, opts: CompileOptions, deadline: float,
           loop: tuple[str, int, int] | None = None) -> tuple[CompileResult, Piece]:
    """The tile kernel compiled by phases 1-2, strided tiles unpacked in it."""
    module, places = windowed(tiling)
    res = compile_direct(target, module, opts, deadline)
    out = None if module.resident_in(OUTPUT) else tiling.output
    return res, Piece(res.program, places, out, loop)


def _whole(target: TargetDef, tiling: Tiling, pieces: list[Piece],
           opts: CompileOptions) -> tuple[Program, float, tuple[Stage, ...]]:
    """The whole kernel's program and its cost: the cheapest of the loop nest as it is
    and after each of its passes (ties to the simpler), and the stages up to that one."""
    stages = looped_programs(target, tiling.loops, pieces, list(tiling.whole_inputs), tiling.whole_output)
    n, cost = cheapest_checked(target, stages, opts.cost)
    return stages[n].program, cost, tuple(stages[:n + 1])


def _options(target: TargetDef, ctx: Tiling, depth: int) -> tuple[list[Tiling | Split], list[str]]:
    """Ways to cut the tile kernel further (unordered): strips of its output, and splits
    of its longest contraction with the accumulator in each buffer that can hold it."""
    module = ctx.tile
    if depth >= MAX_DEPTH:
        return [], []
    var = f"i{depth}"
    out: list = []
    why: list[str] = []
    narrowest = target_facts(target).narrowest_stores
    for d in cut_dimensions(module):
        for t in tile_sizes(module, d):
            try:
                option = strip(ctx, t, var, d)
            except NotTileable as err:
                why.append(f"tiles of {t} along dimension {d}: {err.message}")
                continue
            row = _partial_row(module.result_type, option.tile.result_type)
            if row is None or store_writes(narrowest, module.result_type.dtype.nbytes, row):
                out.append(option)  # (a narrower one no store writes, isa_rules.narrowest_stores: not an option)
    found = contraction(module)
    if found is not None:
        dot, k = found
        for t in (t for t in range(1, k) if k % t == 0):
            for b in _accumulators(target, module, found, dot.tensor_type):
                try:
                    out.append(split(ctx, t, f"k{depth}", _row_elements(target, b, dot.tensor_type)).on(b))
                except NotTileable as err:
                    why.append(f"steps of {t} along the contraction: {err.message}")
                    break
    return out, why


def _partial_row(whole, tile) -> int | None:  # noqa: ANN001  (Types)
    """Bytes of one row of ``tile``'s result when it is part of a row of ``whole`` (its
    minor dimension cut, row-major layouts), else None."""
    if not (isinstance(whole, TensorType) and isinstance(tile, TensorType) and whole.rank and
            whole.effective_layout.is_default() and tile.shape[-1] < whole.shape[-1]):
        return None
    return tile.shape[-1] * tile.dtype.nbytes


def _search(target: TargetDef, ctx: Tiling, opts: CompileOptions, deadline: float, depth: int,
            kernel: Module) -> _Found:
    """The cheapest program for ``ctx``: its tile kernel compiled as it is (DIRECT)
    or cut further, in order of ``_preferred`` (a whole kernel tries straight-line
    code first, with ``direct_share`` of the time, then its natural blocks each as
    straight-line code, with ``BLOCKS_SHARE`` of the rest)."""
    options, why = _options(target, ctx, depth)
    if not options:
        return _direct(target, ctx, opts, deadline)
    size = blocks(target, ctx.tile)
    direct = [] if size > MAX_DIRECT_BLOCKS else [DIRECT]
    if not direct:
        why.append(f"straight-line code: too large, its tensors are {size} blocks of on-chip rows "
                   f"(at most {MAX_DIRECT_BLOCKS} are tried directly)")
    # a whole kernel tries straight-line code first (Act), but after a reduction loop that
    # is its natural program (_loop_first); inside loops it ranks with the cuts
    moves = _reversal_moves(target, ctx.tile, options)
    quick = False  # the first option is a whole kernel's first cut, tried for a first program only
    if moves is not None:  # a reversal's natural program: its loop of moves, each move straight-line
        options = moves + [o for o in _preferred(target, ctx.tile, options + direct) if o not in moves]
    elif ctx.loops:
        options = _preferred(target, ctx.tile, options + direct)
    else:  # straight-line code (after the first cut when that is nearer a natural shape), its
        # natural blocks, the other cuts
        ranked = _preferred(target, ctx.tile, options + direct)
        cuts = [o for o in ranked if o is not DIRECT]
        if _loop_first(target, ctx.tile, cuts[0]):
            options = cuts[:1] + direct + cuts[1:]
        else:
            quick = ranked[0] is not DIRECT and bool(direct)
            natural = _natural_blocks(target, ctx) if direct else None
            options = cuts[:int(quick)] + direct + ([natural] if natural is not None else []) + cuts[int(quick):]
    if depth == 0 and opts.jobs > 1 and len(options) > 1 and not opts.deterministic and \
            parallel.can_start_workers() and parallel.package_name(target):
        return _search_parallel(target, ctx, options, opts, deadline, kernel, why, quick)
    best: _Found | None = None
    spent = 0.0  # work-seconds the first successful option took: later ones get patience times that
    direct_error: ActgenError | None = None
    start = budget.now()
    for n, option in enumerate(options):
        now = budget.now()
        if now >= deadline:
            why.append("the time limit")
            break
        until = _until(options, n, opts, now, deadline, quick) if best is None else \
            min(deadline, now + opts.patience * spent)
        # after a loop that came first, straight-line code gets its share of the search's time,
        # unless no patience is asked (compile_plan's first pass wants a first program only)
        if option is DIRECT and best is not None and not ctx.loops and opts.patience > 0 and moves is None:
            until = max(until, min(deadline, now + opts.direct_share * (deadline - start)))
        what = "straight-line" if option is DIRECT else _option_text(option)
        indent = "  " * depth  # the log shows options inside options indented
        # the status line shows the whole kernel's options; the log (-v) every option
        (progress.note if depth == 0 else progress.decided)(
            f"{indent}{what} (option {n + 1} of {len(options)}, until work-second {until:.2f})")
        try:
            found = _evaluate(target, ctx, option, _first_only(opts) if n == 0 and quick else opts, until, depth,
                              kernel)
        except (NotTileable, CompileError) as err:
            progress.decided(f"{indent}{what}: none ({err.message})")
            if option is DIRECT:
                direct_error = err
            else:
                why.append(f"{_option_text(option)}: {err.message}")
            if best is not None and isinstance(err, CompileError):
                break
            continue
        progress.decided(f"{indent}{what}: cost {found.cost:g}" + (f" (best so far {best.cost:g})" if best else ""))
        if option is DIRECT and not ctx.loops:  # a kernel that fits takes the direct path (Act's program)
            return found if best is None or found.cost <= best.cost else best
        if best is None:
            spent = budget.now() - now
        elif found.cost >= best.cost:
            break
        best = found
        if _near_roofline(target, found, kernel):
            break
    if best is None:
        raise _nothing(direct_error, why)
    return best


def _reversal_moves(target: TargetDef, module: Module, options: list) -> list | None:
    """When the kernel is a reverse and no instruction of ``target`` reverses: the strips
    of one row, column or element along a reversed dimension, the last first. Phase 1
    reaches such a reverse only as moves of those (``isel.pretile``), one instruction
    pair each, and the loop of them compiles its body once; its straight-line program,
    that loop unrolled, ranks with the other cuts (and gets no extra share of the time
    once the loop is found). None for any other kernel, and for a reverse whose reversed
    dimensions have one element (a move: a column of 64 rows is then tiled as any copy)."""
    root = module.entry_computation.root_instruction
    if root.opcode != "reverse" or "reverse" not in moved_apart(target, module):
        return None
    dims = [d for d in root.attrs["dimensions"] if root.type.shape[d] > 1]
    if not dims:
        return None
    moves = [o for o in options if isinstance(o, Tiling) and o.dims[-1][0] in dims and o.dims[-1][2] == 1]
    return sorted(moves, key=lambda o: -o.dims[-1][0])


def _loop_first(target: TargetDef, module: Module, option: Tiling | Split) -> bool:
    """Whether the kernel's natural program is a loop over its contraction, so that
    ``option``, the first cut, comes before the straight-line attempt, which then gets
    ``direct_share`` of the search's time (or ``patience`` times what the loop took, if more)
    and wins if it is found (a dot of a broadcast row has rows all alike):

    - ``option`` is a reduce's loop accumulating where an instruction combines
      element-wise, on a kernel whose operators instructions compute a row at a time
      (``capacity.kernel_rows``): straight-line code would be that loop unrolled, and
      phase 1 rarely finds it for more than a few rows (a reduce over the lanes of a
      row gathers columns through memory);
    - the contraction is a dot over more than one element that no instruction's dot
      reads in its operand types (an f32 GEMM on AMX): the rules make it outer products,
      one multiply-add per row and contracted element, as many instructions as the loop
      of those steps would run: phase 1 maps one step quickly, and the unrolled program
      outgrows its e-node limit but for the smallest GEMMs."""
    found = contraction(module)
    if found is None:
        return False
    ins, _ = found
    if ins.opcode == "dot":
        return outer_products(target, module, ins)
    return isinstance(option, Split) and ins.opcode == "reduce" and \
        option.buffer in combining_buffers(target, module, ins) and kernel_rows(target, module) == 1


def _until(options: list, n: int, opts: CompileOptions, now: float, deadline: float, quick: bool = False) -> float:
    """Before a success, the first option gets ``FIRST_OPTION`` of what is left (``FIRST_PROGRAM``
    when it is ``quick``), the others at most half (the last all); a whole kernel's
    straight-line attempt gets ``direct_share``, its natural blocks ``BLOCKS_SHARE``."""
    if n == 0 and quick:
        return now + FIRST_PROGRAM * max(0.0, deadline - now)
    if options[n] is DIRECT and (n == 0 or quick):
        return now + opts.direct_share * max(0.0, deadline - now)
    if isinstance(options[n], _Blocks):
        return now + BLOCKS_SHARE * (deadline - now)
    return deadline if n == len(options) - 1 else now + (FIRST_OPTION if n == 0 else 0.5) * (deadline - now)


def _evaluate(target: TargetDef, ctx: Tiling, option, opts: CompileOptions, until: float, depth: int,
              kernel: Module) -> _Found:
    if option is DIRECT:
        return _direct(target, ctx, opts, until)
    if isinstance(option, _Blocks):
        return _direct(target, option.tiling, opts, until)
    if isinstance(option, Split):
        return _split(target, option, opts, until)
    return _search(target, option, opts, until, depth + 1, kernel)


def _first_only(opts: CompileOptions) -> CompileOptions:
    """``opts`` for a quick first cut: its first program, not improved (straight-line code and
    the other cuts come after it)."""
    return dataclasses.replace(opts, patience=0.0)


def _nothing(direct_error: ActgenError | None, why: list[str]) -> CompileError:
    head = direct_error.message + "\n  strip-mining did not help either: " if direct_error else "no program found: "
    return CompileError(head + "; ".join(why[-3:]), direct_error.loc if direct_error else None,
                        getattr(direct_error, "refusal", None))


def _search_parallel(target: TargetDef, ctx: Tiling, options: list, opts: CompileOptions, deadline: float,
                     kernel: Module, why: list[str], quick: bool) -> _Found:
    """The options of the whole kernel evaluated by ``opts.jobs`` worker processes
    (``--jobs``), started in the same order and with the same time rules as in one
    process. After the first success the others get ``patience`` times the time it
    took; the cheapest wins, ties going to the earlier option, except that the whole
    kernel's straight-line program, once found, ends the search (and wins unless
    costlier). Each worker has a work clock of its own: this process, which waits, counts
    that time on the wall clock, so which option wins here depends on the machine."""
    name = parallel.package_name(target)
    left = max(0.0, deadline - budget.now())
    jobs = [(name, ctx, options, n, opts, left, kernel, quick) for n in range(len(options))]
    t0 = time.perf_counter()
    deadline = stop = t0 + left
    best: tuple[float, int, _Found] | None = None
    direct_error: ActgenError | None = None
    results = parallel.unordered(_option_job, jobs, opts.jobs)
    # a kernel that fits takes the direct path, as in one process: wait for that attempt
    direct_pending = DIRECT in options and not ctx.loops
    try:
        for got in results:
            now = time.perf_counter()
            if got is not None:
                n, found = got
                if options[n] is DIRECT:
                    direct_pending = False
                if isinstance(found, tuple):
                    if options[n] is DIRECT:
                        direct_error = CompileError(*found)
                    else:
                        why.append(f"{_option_text(options[n])}: {found[0]}")
                    continue
                if options[n] is DIRECT and not ctx.loops:
                    if best is None or found.cost <= best[0]:
                        best = (found.cost, n, found)
                    break
                if best is None:
                    stop = min(deadline, now + opts.patience * (now - t0))
                if best is None or (found.cost, n) < best[:2]:
                    best = (found.cost, n, found)
                if _near_roofline(target, found, kernel) and not direct_pending:
                    break
            if now >= stop and not (direct_pending and now < deadline):
                if best is None:
                    why.append("the time limit")
                break
    finally:
        results.close()
    if best is None:
        raise _nothing(direct_error, why)
    return best[2]


def _option_job(name: str, ctx: Tiling, options: list, n: int, opts: CompileOptions, left: float,
                kernel: Module, quick: bool) -> _Found | tuple[str, object, object]:
    """One option in a worker, with ``left`` work-seconds of this worker's clock: its program,
    or why not (message, location, refusal)."""
    try:
        with budget.wall_limit(left * budget.WALL_FACTOR):
            now = budget.now()
            first = _first_only(opts) if n == 0 and quick else opts
            return _evaluate(parallel.target_named(name), ctx, options[n], first,
                             _until(options, n, opts, now, now + left, quick), 0, kernel)
    except (NotTileable, CompileError, budget.OutOfTime) as err:
        return err.message, err.loc, getattr(err, "refusal", None)


def _near_roofline(target: TargetDef, found: _Found, kernel: Module) -> bool:
    """Whether the program is within NEAR_ROOFLINE of the kernel's roofline bound (no
    other cut can gain much: the search stops)."""
    r = roofline(target, found.program, kernel)
    return r.t_peak is not None and found.cost <= r.t_peak / NEAR_ROOFLINE


def _direct(target: TargetDef, ctx: Tiling, opts: CompileOptions, deadline: float) -> _Found:
    """The tile kernel as straight-line code (the whole kernel, when there are no loops)."""
    if not ctx.loops:
        return _straight(compile_direct(target, ctx.tile, opts, deadline))
    res, piece = _piece(target, ctx, opts, deadline)
    prog, cost, stages = _whole(target, ctx, [piece], opts)
    return _Found(ctx, res, prog, cost, stages=stages)


def _split(target: TargetDef, s: Split, opts: CompileOptions, deadline: float) -> _Found:
    """The reduction loop: prologue, body in its own loop, epilogue. The body comes first,
    with half of the time (it runs ``trips`` times, and each piece may use all the time
    it is given before its patience stops it), the prologue with half of the rest, the
    epilogue with the rest. A prologue not found gives way to the accumulator's start
    value (``Split.start``) with the body run once more: the prologue is the body's first
    step, but without an accumulator to add to, and it may map no sooner than the body."""
    res, body = _piece(target, s.body, opts, _half(deadline), (s.var, 1, s.trips))
    try:
        _, first = _piece(target, s.prologue, opts, _half(deadline))
    except CompileError:
        if s.start is None:
            raise
        _, first = _piece(target, s.start, opts, _half(deadline))
        body = dataclasses.replace(body, loop=(s.var, 0, s.trips))
    _, last = _piece(target, s.epilogue, opts, deadline)
    prog, cost, stages = _whole(target, s.epilogue, [first, body, last], opts)
    return _Found(s.epilogue, res, prog, cost, s, stages)


def _half(deadline: float) -> float:
    """Half of the time from now to ``deadline``."""
    now = budget.now()
    return now + 0.5 * max(0.0, deadline - now)


def blocks(target: TargetDef, module: Module) -> int:
    """The kernel's inputs and output in blocks of Q on-chip rows: a measure of how many
    instructions straight-line code needs. Q is the most rows an instruction computing
    the kernel's operators writes (``capacity.kernel_rows``: 16 for a tile dot, 1 for a
    vector add), or R when none computes them as they are (R elements a row of the
    output's type: a square block). Phase 1 maps a few dozen at most within the limits,
    so larger kernels go straight to tiling instead of spending time on a direct attempt."""
    root = module.result_type
    if not isinstance(root, TensorType):
        return 0
    row = _row_bytes(target, root)
    block = row * (kernel_rows(target, module) or max(1, row // root.dtype.nbytes))
    types = [t for t in list(module.parameter_types) + [root] if isinstance(t, TensorType)]
    return sum(-(-byte_size(t) // block) for t in types)


def _straight(res: CompileResult) -> _Found:
    return _Found(None, res, res.program, res.cost)


def _natural_blocks(target: TargetDef, ctx: Tiling) -> _Blocks | None:
    """The kernel's output cut into blocks of Q x R (R elements a row of an on-chip buffer,
    Q the rows one instruction writes: ``_preferred``'s natural shape) along every dimension
    that such blocks divide, when that makes several blocks; else None."""
    root = ctx.tile.result_type
    if not isinstance(root, TensorType) or not root.rank:
        return None
    rows = _natural_rows(target, _accumulators(target, ctx.tile, contraction(ctx.tile), root))
    want = _natural_shape(target, root, rows)
    tiling = ctx
    try:
        for d in cut_dimensions(ctx.tile):
            if want[d] < root.shape[d] and root.shape[d] % want[d] == 0:
                tiling = strip(tiling, want[d], f"b{len(tiling.loops) - len(ctx.loops)}", d)
    except NotTileable:
        return None
    return _Blocks(tiling) if tiling is not ctx else None


def _natural_shape(target: TargetDef, root: TensorType, rows: int) -> list[int]:
    """Extents of a natural output block per dimension: Q x R in the last two (R elements a
    row of an on-chip buffer, Q = ``rows``, the rows one instruction writes), 1 in the others."""
    r = max(1, _row_bytes(target, root) // root.dtype.nbytes)
    return [1] * max(0, root.rank - 2) + [rows, r][-root.rank:] if root.rank else []


def _option_text(option: Tiling | Split | _Blocks) -> str:
    if isinstance(option, _Blocks):
        return f"blocks of {option.tiling.tile.result_type}, each straight-line"
    if isinstance(option, Split):
        return f"steps of {option.prologue.tile.result_type} accumulating in {option.buffer}"
    d, _, t = option.dims[-1]
    return f"tiles of {t} along dimension {d}"


def _row_elements(target: TargetDef, buffer: str, t: TensorType) -> int:
    """Elements of t's type in one row of ``buffer`` (1 when they do not divide it)."""
    row = target.buffers[buffer].row_nbytes
    return row // t.dtype.nbytes if row % t.dtype.nbytes == 0 else 1


def _row_bytes(target: TargetDef, t: TensorType) -> int:
    """Bytes of one row of the on-chip buffers that hold the element type (any, if none does)."""
    rows = [b for b in target.buffers.values() if not b.is_hbm]
    same = [b for b in rows if b.dtype == t.dtype] or rows
    return min(b.row_nbytes for b in same) if same else 1


def _natural_rows(target: TargetDef, buffers: list[str]) -> int:
    """Rows of a natural output block: the most one instruction writes into any of
    ``buffers`` (those holding its values, ``_accumulators``; 1 when there are none)."""
    info = target_info(target)
    return max([info.rows_written(b) for b in buffers] + [1])


def _accumulators(target: TargetDef, module: Module, found: tuple[Instruction, int] | None,
                  t: TensorType) -> list[str]:
    """The buffers that can hold t's values as ``module`` computes them (``found``: its
    ``contraction``): for a dot the rules make outer products, those into which instructions
    multiply and add its element type (AMX's s32 matmul accumulates in zmm, a register row at
    a time, not in the tiles its int8 dot writes s32 into); else every buffer that holds t's
    values."""
    if found is not None and found[0].opcode == "dot" and outer_products(target, module, found[0]):
        fma = multiply_add_buffers(target, found[0].tensor_type.dtype.name)
        if fma:
            return fma
    return accumulator_buffers(target, t)


def _natural_contraction(target: TargetDef, buffers: list[str], opcode: str = "dot") -> int:
    """The longest contraction one instruction performs into any of ``buffers`` (those
    holding its values, ``_accumulators``; its semantics' dot or reduce, as ``opcode``
    asks, attributes at their largest): Gemmini's DIM, 64 bytes of A a row for AMX's int8
    tile op, 1 for a vector FMA (no dot) or a vector add (no reduce: a reduction loop adds a
    row a step)."""
    return target_info(target).longest_contraction(buffers, opcode)


def _widest(module: Module) -> TensorType:
    """The kernel's result type with the widest element type of its values."""
    root = module.result_type
    types = [i.type for i in module.entry_computation if isinstance(i.type, TensorType) and i.type.rank]
    wide = max((t.dtype for t in types), key=lambda d: d.nbytes, default=root.dtype)
    return root.with_dtype(wide) if wide.nbytes > root.dtype.nbytes else root


def _preferred(target: TargetDef, module: Module, options: list) -> list:
    """Nearest a natural on-chip shape first: the tile kernel's largest tensor one
    on-chip row (no contraction), or its output a block of rows (Q x R: R elements a row, Q rows one
    instruction writes at most) with a natural contraction (a strip's contraction is
    still split further down, a split's pieces are not cut further: a split counts
    its output's distance twice); then the kernel as it is before strips before
    splits, element-wise tiles whose largest tensor is nearest one row's bytes first
    (a column of 16 rows before single elements), major dimensions first; a reduce's
    accumulator first in a buffer where an instruction combines element-wise as it does.
    Shapes are natural for the widest element type the kernel computes in (a byte negate
    widened to s32, ``ir.widen``, computes rows of s32), Q of element-wise work for the
    instructions that compute its operators (``capacity.kernel_rows``: one register row for
    a vector clamp, though AMX's tile dot writes 16 rows of s32)."""
    root = _widest(module)
    row = _row_bytes(target, root)
    found = contraction(module)
    # element-wise work: the rows its instructions write (a dot's rows are the accumulator's:
    # AMX's f32 dot is outer products into one register row, though tdpbf16ps writes 16)
    buffers = _accumulators(target, module, found, root)
    q = (None if found else kernel_rows(target, module)) or _natural_rows(target, buffers)
    k_full = found[1] if found else None
    kind = found[0].opcode if found else "dot"
    k_nat = _natural_contraction(target, buffers, kind)
    if kind == "dot":  # a vector FMA's steps of Q rows
        k_nat = max(q, k_nat)
    order = cut_dimensions(module)
    want = _natural_shape(target, root, q)

    def block(shape, k: int | None) -> float:  # noqa: ANN001
        d = sum(abs(math.log2(n / min(w, full))) for n, w, full in zip(shape, want, root.shape))
        return d + (abs(math.log2(k / min(k_nat, k_full))) if k else 0.0)

    # a reduce accumulates best where an instruction combines as it does, element-wise
    combining = combining_buffers(target, module, found[0]) if kind == "reduce" else frozenset()

    def fill(tile: Module) -> float:  # how far its largest tensor is from one row's bytes
        largest = max(i.type.nbytes for i in tile.entry_computation if isinstance(i.type, TensorType))
        return abs(math.log2(max(largest, 1) / row))

    def key(option: Tiling | Split | None) -> tuple:
        if option is DIRECT:  # element-wise work of about one row's bytes is natural as it is
            return (block(root.shape, k_full) if k_full else min(block(root.shape, None), fill(module)), -1, 0.0,
                    0, 0, "")
        if isinstance(option, Split):  # its pieces are compiled as they are: only for small output tiles
            k = k_full // option.trips
            return (block(root.shape, None) * 2 + block(root.shape, k), 1, 0.0, int(option.buffer not in combining), k,
                    option.buffer)
        tile = option.tile
        d, _, t = option.dims[-1]
        dist = block(tile.result_type.shape, None)  # its contraction can still be split below
        width = tile.result_type.shape[-1] if tile.result_type.rank else 1
        partial = width < root.shape[-1] and width * root.dtype.nbytes < row  # each of its rows part of one
        bytes_off = fill(tile) if k_full is None else 0.0
        if k_full is None and not partial:  # element-wise work: a row at a time is natural too
            dist = min(dist, bytes_off)
        return (dist, 0, bytes_off, order.index(d), t, "")

    return sorted(options, key=key)
