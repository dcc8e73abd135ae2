"""Kernels cut into stages at their contractions: several loop nests in sequence.

A kernel whose contractions feed further contractions (an MLP's second layer reading
the first layer's activations, A·B·C) is one loop nest only if phase 1 can select
instructions for all of it at once. When the whole kernel does not compile within
``direct_share`` of the time, it is cut into stages: stage k holds the contractions
(``dot``, ``convolution``) with k of them on the longest path from the inputs; any
other instruction joins the stage of the last contraction it depends on (element-wise
epilogues stay with their contraction, and the narrowed result crosses to the next
stage) or, when it depends on none, the earliest stage that uses it (a prologue). Values that cross stages go through HBM; instructions that read no parameter
(constants and their broadcasts) are copied into every stage that uses them. Each
stage is compiled as a kernel of its own, straight-line or in loops, and the
programs run in sequence (superopt.sequence). Fusing stages over equal strip
dimensions, so intermediates stay on chip (Axon §4.5), is not built: on Gemmini and
AMX a contraction's result reaches another contraction's operand buffer only through
memory (mvout and tilestored write memory), so it would save no traffic there.

A kernel that is neither one program nor stages is cut into pieces: trees of values
used once, each ending at a value used more than once, at a computed value a
broadcast widens, or at the root. They are
compiled and sequenced the same way. On Gemmini a value in the accumulator that two
instructions read has to leave through memory anyway (nothing reads the accumulator
but mvout), and a tree is what phase 1 selects instructions for fastest.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from ..compile import CompileError, CompileOptions, CompileResult
from ..ir.graph import Computation, Instruction, Module
from ..ir.types import TensorType, TupleType
from ..target import TargetDef
from .blocks import block_plan
from .reduction import chained
from .sequence import Part, Plan, compile_plan

CONTRACTIONS = frozenset({"dot", "convolution"})
PIECE_SHARE = 0.75  # of a piece's time, for its straight-line attempt (before loops)
# Of the time, what the whole kernel (straight-line, then loops) gets before it is cut into
# pieces, when it has no stages: loops of row tiles often need most of it (AMX), and a
# kernel that needs pieces (an accumulator value used twice on Gemmini) compiles in the rest.
WHOLE_BEFORE_PIECES = 0.75


def stage_numbers(comp: Computation, contractions: frozenset[str] = CONTRACTIONS) -> dict[str, int]:
    """Stage (1, 2, ...) of each instruction the root depends on; parameters and
    instructions that read no parameter have none (every stage may read them)."""
    order = _topological(comp)
    reads_input: dict[str, bool] = {}
    depth: dict[str, int] = {}
    for n in order:
        ins = comp[n]
        reads_input[n] = ins.opcode == "parameter" or any(reads_input[o] for o in ins.operands)
        d = max([depth.get(o, 0) for o in ins.operands], default=0)
        depth[n] = d + 1 if ins.opcode in contractions and reads_input[n] else d
    users: dict[str, list[str]] = {n: [] for n in order}
    for n in order:
        for o in comp[n].operands:
            users[o].append(n)
    stage: dict[str, int] = {}
    for n in reversed(order):
        ins = comp[n]
        if ins.opcode == "parameter" or not reads_input[n]:
            continue
        if depth[n] or n == comp.root:
            stage[n] = max(1, depth[n])  # with the last contraction it depends on (an epilogue)
        else:  # reads only parameters: with its first use (a prologue)
            stage[n] = min(stage[u] for u in users[n])
    return stage


def piece_numbers(comp: Computation) -> dict[str, int]:
    """Piece (1, 2, ...) of each instruction the root depends on: a piece is a tree of
    values used once, ending at a value used more than once, or broadcast to a larger
    tensor (each of its elements is read many times: ``replicated``), or at the root;
    numbered in program order. Parameters and instructions that read no parameter have
    none."""
    order = _topological(comp)
    reads_input: dict[str, bool] = {}
    users: dict[str, set[str]] = {n: set() for n in order}
    for n in order:
        ins = comp[n]
        reads_input[n] = ins.opcode == "parameter" or any(reads_input[o] for o in ins.operands)
        for o in ins.operands:
            users[o].add(n)
    computed = [n for n in order if reads_input[n] and comp[n].opcode != "parameter"]
    widened = replicated(comp)
    ends = [n for n in computed if n == comp.root or len(users[n]) > 1 or n in widened]
    piece = {n: k for k, n in enumerate(ends, start=1)}
    for n in reversed(computed):
        if n not in piece:
            (u,) = users[n]
            piece[n] = piece[u]
    return piece


def replicated(comp: Computation) -> set[str]:
    """Computed values (not parameters) that a broadcast makes larger. Strips of the
    broadcast's result would each compute them again, so such a value ends a piece
    (``compile_staged`` compares the pieces with such loops)."""
    return {ins.operands[0] for ins in comp.instructions
            if ins.opcode == "broadcast" and comp[ins.operands[0]].opcode != "parameter"
            and isinstance(ins.type, TensorType) and ins.type.size > comp[ins.operands[0]].type.size}


def stage_plan(module: Module) -> Plan | None:
    """The kernel as stages in sequence, or None when it has one stage (or a tuple root,
    or parameters that are not tensors)."""
    return grouped_plan(module, "stage", stage_numbers)


def reduce_stage_plan(module: Module) -> Plan | None:
    """The kernel with its reduces over several dimensions cut in two (``reduction.chained``),
    in stages at its contractions and reduces, or None when no reduce is cut."""
    cut = chained(module)
    if cut is None:
        return None
    return grouped_plan(cut, "stage", lambda comp: stage_numbers(comp, CONTRACTIONS | {"reduce"}))


def piece_plan(module: Module) -> Plan | None:
    """The kernel as pieces in sequence (``piece_numbers``), or None when it is one piece."""
    return grouped_plan(module, "piece", piece_numbers)


def grouped_plan(module: Module, kind: str, numbers: Callable[[Computation], dict[str, int]]) -> Plan | None:
    """The kernel as parts 1, 2, ... in sequence, part k holding the instructions
    ``numbers`` puts in k (parts read only earlier parts); None when there is one part."""
    comp = module.entry_computation
    params = sorted(comp.parameters, key=lambda p: p.attrs["parameter_number"])
    if not isinstance(module.result_type, TensorType) or \
            any(not isinstance(p.type, TensorType) for p in params):
        return None
    stage = numbers(comp)
    last = max(stage.values(), default=1)
    if last <= 1:
        return None
    order = _topological(comp)
    types: list[TensorType] = [p.type for p in params] + [module.result_type]
    tensor_of: dict[str, int] = {p.name: p.attrs["parameter_number"] for p in params}
    tensor_of[comp.root] = len(params)
    parts = []
    for k in range(1, last + 1):
        members = [n for n in order if stage.get(n) == k]
        outputs = [n for n in members if n == comp.root or any(stage.get(u, 0) > k for u in _users(comp, n))]
        for n in outputs:
            if n not in tensor_of:
                tensor_of[n] = len(types)
                types.append(comp[n].type)
        module_k, reads = _stage_module(module, comp, k, members, outputs, stage, order)
        parts.append(Part(module_k, tuple(tensor_of[n] for n in reads), tuple(tensor_of[n] for n in outputs)))
    return Plan(kind, tuple(parts), tuple(types), len(params), (len(params),))


def _stage_module(module: Module, comp: Computation, k: int, members: list[str], outputs: list[str],
                  stage: dict[str, int], order: list[str]) -> tuple[Module, list[str]]:
    """Stage k as a kernel, and the values its parameters are (in parameter order):
    the kernel's parameters it reads, then the earlier stages' values."""
    inside = set(members)
    todo = [o for n in members for o in comp[n].operands if o not in inside]
    kernel_params, earlier = set(), set()
    while todo:  # what the stage reads: parameters, earlier values, and the constants it copies
        n = todo.pop()
        if n in inside:
            continue
        if comp[n].opcode == "parameter":
            kernel_params.add(n)
        elif n in stage:
            earlier.add(n)
        else:
            inside.add(n)
            todo += comp[n].operands
    reads = sorted(kernel_params, key=lambda n: comp[n].attrs["parameter_number"])
    reads += [n for n in order if n in earlier]
    body = [Instruction(n, "parameter", comp[n].type, (), {"parameter_number": j}, comp[n].loc)
            for j, n in enumerate(reads)]
    body += [comp[n] for n in order if n in inside]
    root = outputs[0]
    if len(outputs) > 1:
        root = f"stage{k}.outputs"
        body.append(Instruction(root, "tuple", TupleType(tuple(comp[n].type for n in outputs)), tuple(outputs)))
    entry = Computation(comp.name, body, root, comp.loc)
    computations = {**module.computations, comp.name: entry}
    return Module(f"{module.name}.stage{k - 1}", computations, module.entry, module.loc, output_written=True), reads


def _users(comp: Computation, name: str) -> list[str]:
    return [u.name for u in comp.users(name)]


def _topological(comp: Computation) -> list[str]:
    """The instructions the root depends on, operands first."""
    order: list[str] = []
    seen: set[str] = set()
    stack: list[tuple[str, bool]] = [(comp.root, False)]
    while stack:
        n, done = stack.pop()
        if done:
            order.append(n)
            continue
        if n in seen:
            continue
        seen.add(n)
        stack.append((n, True))
        stack += [(o, False) for o in reversed(comp[n].operands) if o not in seen]
    return order


def compile_staged(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    """The whole kernel (straight-line or in loops) within ``direct_share`` of the time
    when it has blocks or stages (``WHOLE_BEFORE_PIECES`` when it has only pieces), else
    the blocks of its root concatenation (superopt.blocks), else its stages in sequence,
    else its pieces (each plan tried gets an even share of the time left). The blocks of a
    root pad come first, with ``direct_share``: its padding rows cut every strip of the
    whole kernel.
    When the whole kernel compiles only as loops over strips of a broadcast of a computed
    value, each iteration computes that value again: its pieces, which compute it once,
    are then tried in the time left, and the cheaper program is kept."""
    from .tiled import compile_tiled

    plans = [p for p in (block_plan(module), stage_plan(module), reduce_stage_plan(module), piece_plan(module))
             if p is not None]
    if not plans:
        return compile_tiled(target, module, opts, deadline)
    t0 = time.perf_counter()
    why = []
    if plans[0].kind == "block" and module.entry_computation.root_instruction.opcode == "pad":
        # a pad's padding rows cut every strip of the whole kernel: its blocks come first
        try:
            return _compile_plan(target, module, plans[0], opts, t0 + opts.direct_share * max(0.0, deadline - t0))
        except CompileError as no:
            why.append(f"in {plans[0].kind}s: {no.message}")
            plans = plans[1:]
    share = WHOLE_BEFORE_PIECES if plans and plans[0].kind == "piece" else opts.direct_share
    t1 = time.perf_counter()
    try:
        whole = compile_tiled(target, module, opts, t1 + share * max(0.0, deadline - t1))
    except CompileError as err:
        why.insert(0, err.message)
        for k, plan in enumerate(plans):
            now = time.perf_counter()
            try:
                return _compile_plan(target, module, plan, opts, now + (deadline - now) / (len(plans) - k))
            except CompileError as no:
                why.append(f"in {plan.kind}s: {no.message}")
        raise CompileError("\n  ".join(why), err.loc) from None
    comp = module.entry_computation
    if whole.tiling is None or not plans or plans[-1].kind != "piece" or \
            not replicated(comp) & piece_numbers(comp).keys():
        return whole
    try:
        pieces = _compile_plan(target, module, plans[-1], opts, deadline)
    except CompileError:
        return whole
    return pieces if pieces.cost < whole.cost else whole


def _compile_plan(target: TargetDef, module: Module, plan: Plan, opts: CompileOptions,
                  deadline: float) -> CompileResult:
    # pieces are small: straight-line code is the likely program, so it gets most of the time
    part_opts = dataclasses.replace(opts, direct_share=PIECE_SHARE) if plan.kind == "piece" else opts
    # a block is a kernel like any other: it may have blocks, stages or pieces itself
    return compile_plan(target, module, plan, compile_staged if plan.kind == "block" else _compile_stage,
                        part_opts, deadline)


def _compile_stage(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    from .outputs import compile_outputs, several_outputs
    from .tiled import compile_tiled

    if several_outputs(module):
        return compile_outputs(target, module, opts, deadline)
    return compile_tiled(target, module, opts, deadline)
