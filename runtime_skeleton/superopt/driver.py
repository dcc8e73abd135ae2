"""The compile driver: which strategy a kernel is compiled by, in what order, with what
share of the time. Each strategy's module says how it cuts a kernel; this one tries them.

- ``compile_kernel``: a kernel of several outputs goes to ``compile_outputs``, any other
  to ``compile_or_operators``: ``compile_staged``, else the kernel one operator at a time
  in the time kept for it (``OPERATORS_RESERVE``).
- ``compile_outputs``: the whole tuple straight-line (``direct``) within its share, else
  each output's cone as a kernel of its own (``compile_parts``, each by ``compile_or_operators``),
  in sequence.
- ``compile_staged``: the whole kernel straight-line or in loops (``tiled``), else the
  blocks of its root (``blocks``), its stages, its reduction stages or its pieces
  (``stages``), each a plan of parts compiled in sequence (``sequence.compile_plan``).

The strategies' modules import none of each other's compilers: each part of a plan is
compiled by the function the driver hands to ``compile_plan``.
"""
from __future__ import annotations

import dataclasses

from .. import budget, progress
from ..direct import CompileError, CompileOptions, CompileResult, compile_direct
from ..ir.graph import Module
from ..ir.reverses import sunk
from ..ir.widen import reverses_widened, widened
from ..isel.phase1 import target_facts
from ..target import TargetDef
from .blocks import block_plan
from .capacity import outer_products
from .outputs import output_plan, parts, several_outputs
from .sequence import Plan, compile_plan
from .stages import (isolated_plan, moved_apart, operator_plan, piece_numbers, piece_plan, reduce_stage_plan,
                     replicated, stage_plan)
from .strip import NotTileable
from .tiled import MAX_DIRECT_BLOCKS, blocks, compile_tiled

PIECE_SHARE = 0.75  # of a piece's time, for its straight-line attempt (before loops)
# Of the time, what the whole kernel (straight-line, then loops) gets before it is cut into
# pieces, when it has no stages: loops of row tiles often need most of it (AMX), and a
# kernel that needs pieces (an accumulator value used twice on Gemmini) compiles in the rest.
WHOLE_BEFORE_PIECES = 0.75
# Of the time, what the stages of a chain of outer-product contractions get before the whole
# kernel is tried (``_outer_product_chain``); each stage needs its own loop nest
STAGES_FIRST = 0.75
# Of the time, what a kernel's isolated stages get before the whole kernel is tried: their last
# stage is the kernel with its reverses read as inputs, which needs about what the whole kernel
# would, and the whole kernel with its reverses cut to elements mostly does not compile at all
ISOLATED_FIRST = 0.85
# Of the time, what is kept for the kernel one operator at a time when nothing else compiled it
# (``compile_or_operators``): its operators compile in loops of rows in a tenth of a second or so each
OPERATORS_RESERVE = 0.4
LARGE_TUPLE_NODES_DIVISOR = 8  # a tuple over MAX_DIRECT_BLOCKS gets this share of phase 1's e-nodes whole


def compile_kernel(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    """A kernel by the strategies above (its calls inlined, its empty values dropped)."""
    if several_outputs(module):
        return compile_outputs(target, module, opts, deadline)
    return compile_or_operators(target, module, opts, deadline)


def compile_or_operators(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    """``compile_staged`` within all but ``OPERATORS_RESERVE`` of the time, else, in the rest,
    the kernel one operator at a time (``stages.operator_plan``), each operator with the
    views it reads a kernel of its own (widened, its reverses sunk: ``compile_staged``)
    and its result in HBM. The fuzzer draws operators that compile alone, so a kernel of
    such operators compiles this way, if not as cheaply as fused."""
    plan = operator_plan(module)
    if plan is None:
        return compile_staged(target, module, opts, deadline)
    t0 = budget.now()
    try:
        return compile_staged(target, module, opts, t0 + (1 - OPERATORS_RESERVE) * max(0.0, deadline - t0))
    except CompileError as err:
        progress.decided(f"the kernel: none ({err.message})")
        progress.note(f"one operator at a time: {len(plan.parts)} operators")
        try:
            return compile_plan(target, module, plan, compile_staged, opts, deadline)
        except CompileError as no:
            raise CompileError(f"{err.message}\n  one operator at a time: {no.message}", err.loc or no.loc,
                               err.refusal or no.refusal) from None


def compile_staged(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    """The whole kernel (straight-line or in loops) within ``direct_share`` of the time
    when it has blocks or stages (``WHOLE_BEFORE_PIECES`` when it has only pieces), else
    the blocks of its root concatenation (superopt.blocks), else its stages in sequence,
    else its pieces (each plan tried gets an even share of the time left). The blocks of a
    root pad come first, with ``direct_share``: its padding rows cut every strip of the
    whole kernel; so do the stages of a kernel with a dot the rules make outer products,
    with ``STAGES_FIRST`` (``_outer_product_chain``).
    When the whole kernel compiles only as loops over strips of a broadcast of a computed
    value, each iteration computes that value again: its pieces, which compute it once,
    are then tried in the time left, and the cheaper program is kept."""
    facts = target_facts(target)
    module = widened(module, facts.narrow_arithmetic)  # the same values (ir.widen)
    moved = moved_apart(target, module)
    if moved:  # the same bits (ir.reverses); compile_module checks the program against the kernel as written
        module = reverses_widened(sunk(module), facts.widened_reverses)  # after sinking, which undoes it
    plans = [p for p in (block_plan(module), isolated_plan(module, moved), stage_plan(module),
                         reduce_stage_plan(module), piece_plan(module)) if p is not None]
    if not plans:
        return compile_tiled(target, module, opts, deadline)
    t0 = budget.now()
    why = []
    first = None
    if plans[0].kind == "block" and module.entry_computation.root_instruction.opcode == "pad":
        first = opts.direct_share  # a pad's padding rows cut every strip of the whole kernel: its blocks first
    elif plans[0].kind == "isolated stage":
        first = ISOLATED_FIRST
    elif plans[0].kind == "stage" and _outer_product_chain(target, module):
        first = STAGES_FIRST
    if first is not None:
        progress.decided(f"in {plans[0].kind}s first, until work-second {t0 + first * max(0.0, deadline - t0):.2f}")
        try:
            return _compile_plan(target, module, plans[0], opts, t0 + first * max(0.0, deadline - t0))
        except CompileError as no:
            progress.decided(f"in {plans[0].kind}s: none ({no.message})")
            why.append(f"in {plans[0].kind}s: {no.message}")
            plans = plans[1:]
    share = WHOLE_BEFORE_PIECES if plans and plans[0].kind == "piece" else opts.direct_share
    t1 = budget.now()
    progress.decided(f"the whole kernel first, straight-line or in loops, until work-second "
                     f"{t1 + share * max(0.0, deadline - t1):.2f}; then {', '.join(p.kind + 's' for p in plans)}")
    try:
        whole = compile_tiled(target, module, opts, t1 + share * max(0.0, deadline - t1))
    except CompileError as err:
        why.insert(0, err.message)
        progress.decided(f"the whole kernel: none ({err.message})")
        for k, plan in enumerate(plans):
            now = budget.now()
            progress.note(f"in {len(plan.parts)} {plan.kind}s")
            try:
                return _compile_plan(target, module, plan, opts, now + (deadline - now) / (len(plans) - k))
            except CompileError as no:
                progress.decided(f"in {plan.kind}s: none ({no.message})")
                why.append(f"in {plan.kind}s: {no.message}")
        raise CompileError("\n  ".join(why), err.loc, err.refusal) from None
    comp = module.entry_computation
    if whole.tiling is None or not plans or plans[-1].kind != "piece" or \
            not replicated(comp) & piece_numbers(comp).keys():
        return whole
    try:
        pieces = _compile_plan(target, module, plans[-1], opts, deadline)
    except CompileError:
        return whole
    return pieces if pieces.cost < whole.cost else whole


def _outer_product_chain(target: TargetDef, module: Module) -> bool:
    """Whether a kernel with stages (contractions feeding contractions) has a dot that the
    rules make outer products (``capacity.outer_products``): the whole kernel is then an
    unrolled program far beyond phase 1, or a loop nest computing the first contraction
    again in every step of the second, and its stages are its natural program."""
    return any(i.opcode == "dot" and outer_products(target, module, i) for i in module.entry_computation.instructions)


def _compile_plan(target: TargetDef, module: Module, plan: Plan, opts: CompileOptions,
                  deadline: float) -> CompileResult:
    # pieces are small: straight-line code is the likely program, so it gets most of the time
    part_opts = dataclasses.replace(opts, direct_share=PIECE_SHARE) if plan.kind == "piece" else opts
    # a block or an isolated stage is a kernel like any other: it may have blocks, stages or pieces itself
    return compile_plan(target, module, plan, compile_staged if plan.kind in ("block", "isolated stage")
                        else compile_stage,
                        part_opts, deadline)


def compile_stage(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    """A stage or a piece: whole, in loops, or one output at a time (it is not cut again)."""
    if several_outputs(module):
        return compile_outputs(target, module, opts, deadline)
    return compile_tiled(target, module, opts, deadline)


def compile_outputs(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    """The whole kernel as straight-line code within ``direct_share`` of the time divided
    by its number of outputs, else its outputs one at a time (compile_parts). A tuple of
    outputs that compiles whole is found early; one that does not would otherwise hold
    half of the time that its outputs' loop nests need (reductions: 5 outputs). A tuple
    whose outputs measure more than ``MAX_DIRECT_BLOCKS`` together (``tiled.blocks``) is
    tried whole in an e-graph of an eighth of phase 1's e-nodes (a bound on work, not on
    time), then goes to its outputs."""
    t0 = budget.now()
    share = opts.direct_share / len(module.result_type.elements)
    whole = opts
    try:
        size = sum(blocks(target, m) for m, _ in parts(module))
        if size > MAX_DIRECT_BLOCKS:  # as for one output (superopt.tiled): phase 1 would not finish in
            # time, so the whole kernel only gets a small e-graph (values the outputs share are then
            # computed once where it suffices; strided loads make small kernels look large here)
            small = max(1, opts.phase1.max_nodes // LARGE_TUPLE_NODES_DIVISOR)
            whole = dataclasses.replace(opts, phase1=dataclasses.replace(opts.phase1, max_nodes=small))
    except NotTileable:
        pass
    try:
        progress.note(f"the {len(module.result_type.elements)} outputs together, straight-line")
        return compile_direct(target, module, whole, t0 + share * max(0.0, deadline - t0))
    except CompileError as err:
        progress.decided(f"the outputs together: none ({err.message})")
        try:
            progress.note("one output at a time")
            return compile_parts(target, module, opts, deadline)
        except CompileError as why:
            raise CompileError(f"{err.message}\n  one output at a time: {why.message}", err.loc or why.loc,
                               err.refusal or why.refusal) from None


def compile_parts(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    """Each output compiled as a kernel of its own (the time left shared evenly), the
    programs in sequence."""
    try:
        plan = output_plan(module)
    except NotTileable as err:
        raise CompileError(err.message) from None
    return compile_plan(target, module, plan, compile_or_operators, opts, deadline)
