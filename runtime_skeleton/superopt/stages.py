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

from collections.abc import Callable

from ..ir.graph import Computation, Instruction, Module
from ..ir.ops import CONTRACTIONS
from ..ir.types import TensorType, TupleType
from ..isel.phase1 import target_facts
from ..target import TargetDef
from .reduction import chained
from .sequence import Part, Plan

REPLAYED = frozenset({"reshape", "bitcast-convert", "broadcast"})  # computed in each operator part that reads them


def stage_numbers(comp: Computation, contractions: frozenset[str] = CONTRACTIONS) -> dict[str, int]:
    """Stage (1, 2, ...) of each instruction the root depends on; parameters and
    instructions that read no parameter have none (every stage may read them)."""
    order = comp.operands_first()
    reads_input, users = _reads_input(comp, order), _users_of(comp, order)
    depth: dict[str, int] = {}
    for n in order:
        ins = comp[n]
        d = max([depth.get(o, 0) for o in ins.operands], default=0)
        depth[n] = d + 1 if ins.opcode in contractions and reads_input[n] else d
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
    order = comp.operands_first()
    reads_input, users = _reads_input(comp, order), _users_of(comp, order)
    computed = [n for n in order if reads_input[n] and comp[n].opcode != "parameter"]
    widened = replicated(comp)
    ends = [n for n in computed if n == comp.root or len(users[n]) > 1 or n in widened]
    piece = {n: k for k, n in enumerate(ends, start=1)}
    for n in reversed(computed):
        if n not in piece:
            (u,) = users[n]
            piece[n] = piece[u]
    return piece


def operator_numbers(comp: Computation) -> dict[str, int]:
    """Part (1, 2, ...) of each instruction that reads an input and computes, one each in
    program order: every operator but a reshape, bitcast or broadcast (``REPLAYED``), which
    have none unless they are the root: each part that reads one computes it (a broadcast
    of a computed value is then read at its own size)."""
    order = comp.operands_first()
    reads = _reads_input(comp, order)
    computed = [n for n in order if reads[n] and comp[n].opcode != "parameter"
                and (n == comp.root or comp[n].opcode not in REPLAYED)]
    return {n: k for k, n in enumerate(computed, start=1)}


def isolated_numbers(comp: Computation, ops: frozenset[str]) -> dict[str, int]:
    """Part (1, 2, ...) of each instruction the root depends on, each instruction whose
    operator is in ``ops`` (and that depends on an input) in a part of its own: such an
    instruction's level is the first odd one above its operands', any other's the first
    even one at or above them, and then the last even one below its users' (as late as
    it can be: a value crosses between parts only where it must). The parts, in order:
    per level in use, its other instructions, or each of its isolated ones (those of one
    level read none of each other; equal ones are then equal kernels, compiled once,
    ``sequence.compile_plan``)."""
    order = comp.operands_first()
    reads_input, users = _reads_input(comp, order), _users_of(comp, order)
    level: dict[str, int] = {}
    for n in order:
        ins = comp[n]
        if ins.opcode == "parameter" or not reads_input[n]:
            continue
        top = max([level[o] for o in ins.operands if o in level], default=0)
        level[n] = top + 1 + top % 2 if ins.opcode in ops else top + top % 2
    for n in reversed(order):  # users of a value that reads an input read one too: all have levels
        if n in level and users[n] and comp[n].opcode not in ops:
            level[n] = min(level[u] - level[u] % 2 for u in users[n])
    key = {n: (lv, n if lv % 2 else "") for n, lv in level.items()}
    number = {k: j for j, k in enumerate(sorted(set(key.values())), start=1)}
    return {n: number[k] for n, k in key.items()}


def _reads_input(comp: Computation, order: list[str]) -> dict[str, bool]:
    """Per instruction of ``order`` (operands first): whether it is or depends on a kernel input."""
    reads: dict[str, bool] = {}
    for n in order:
        ins = comp[n]
        reads[n] = ins.opcode == "parameter" or any(reads[o] for o in ins.operands)
    return reads


def _users_of(comp: Computation, order: list[str]) -> dict[str, set[str]]:
    """Per instruction of ``order``: the instructions of ``order`` that read it."""
    users: dict[str, set[str]] = {n: set() for n in order}
    for n in order:
        for o in comp[n].operands:
            users[o].add(n)
    return users


def replicated(comp: Computation) -> set[str]:
    """Computed values (not parameters) that a broadcast makes larger. Strips of the
    broadcast's result would each compute them again, so such a value ends a piece
    (``driver.compile_staged`` compares the pieces with such loops)."""
    return {ins.operands[0] for ins in comp.instructions
            if ins.opcode == "broadcast" and comp[ins.operands[0]].opcode != "parameter"
            and isinstance(ins.type, TensorType) and ins.type.size > comp[ins.operands[0]].type.size}


def stage_plan(module: Module) -> Plan | None:
    """The kernel as stages in sequence, or None when it has one stage (or a tuple root,
    or parameters that are not tensors)."""
    return grouped_plan(module, "stage", stage_numbers)


def reduce_stage_plan(module: Module) -> Plan | None:
    """The kernel with its reduces over several dimensions cut in two (``reduction.chained``),
    in stages at its contractions and reduces; or, when no reduce is cut, in such stages when
    a contraction reads a reduce's result (each needs a loop nest of its own: a reduction loop,
    then the contraction's); None otherwise."""
    cut = chained(module)
    if cut is None and not _reduce_feeds_contraction(module.entry_computation):
        return None
    return grouped_plan(cut or module, "stage", lambda comp: stage_numbers(comp, CONTRACTIONS | {"reduce"}))


def _reduce_feeds_contraction(comp: Computation) -> bool:
    """Whether some contraction's operand depends on a reduce."""
    after: set[str] = set()  # values that depend on a reduce
    for n in comp.operands_first():
        ins = comp[n]
        if ins.opcode in CONTRACTIONS and any(o in after for o in ins.operands):
            return True
        if ins.opcode == "reduce" or any(o in after for o in ins.operands):
            after.add(n)
    return False


def moved_apart(target: TargetDef, module: Module) -> frozenset[str]:
    """Operators no instruction of ``target`` computes that phase 1 reaches only as moves
    of single rows, columns or elements (``isel.pretile``): a reverse. Each is compiled
    as a stage of its own (``isolated_plan``), HBM to HBM, after moving it toward the
    inputs (``ir.reverses``), as a loop of those moves (``tiled._reversal_moves``); inside
    a larger kernel the rules push the other operators into its pieces and the e-graph
    grows with them. None when every reverse of ``module`` is a matmul by a reversed
    identity where it stands (``_reversed_by_dot``)."""
    if "reverse" in target_facts(target).ops:
        return frozenset()
    comp = module.entry_computation
    if all(_reversed_by_dot(target, comp, i) for i in comp.instructions if i.opcode == "reverse"):
        return frozenset()
    return frozenset({"reverse"})


def _reversed_by_dot(target: TargetDef, comp: Computation, rev: Instruction) -> bool:
    """Whether ``rev`` reverses the conversion of a value an instruction's dot reads into that
    dot's result type (Gemmini: s32 values of int8 ones) along its innermost dimension only:
    ``reverse-as-dot`` makes it one matmul by a reversed identity, which that instruction
    computes, so it is best left where it is, before the conversion that sinking would move it
    through. Not so along an outer dimension, whose moves are of whole rows (a loop of them), nor
    along both (J . x . J: the first product would have to be narrowed again; phase 1 finds no
    program)."""
    src = comp[rev.operands[0]]
    if src.opcode != "convert" or not isinstance(rev.type, TensorType) or rev.type.rank != 2:
        return False
    reversed_dims = [d for d in rev.attrs["dimensions"] if rev.type.shape[d] > 1]
    if reversed_dims != [rev.type.effective_layout.minor_to_major[0]]:
        return False
    narrow = comp[src.operands[0]].type
    if not isinstance(narrow, TensorType) or not narrow.dtype.is_int:
        return False
    d, r = narrow.dtype.name, rev.type.dtype.name
    return (d, d, r) in target_facts(target).dots


def isolated_plan(module: Module, ops: frozenset[str]) -> Plan | None:
    """The kernel with its instructions of operators ``ops`` in parts of their own
    (``isolated_numbers``), or None when it has none that depends on an input."""
    comp = module.entry_computation
    if not any(i.opcode in ops for i in comp.instructions):
        return None
    return grouped_plan(module, "isolated stage", lambda c: isolated_numbers(c, ops))


def operator_plan(module: Module) -> Plan | None:
    """The kernel one operator at a time (``operator_numbers``), or None when it has one."""
    return grouped_plan(module, "operator", operator_numbers)


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
    order = comp.operands_first()
    types: list[TensorType] = [p.type for p in params] + [module.result_type]
    tensor_of: dict[str, int] = {p.name: p.attrs["parameter_number"] for p in params}
    tensor_of[comp.root] = len(params)
    parts = []
    for k in range(1, last + 1):
        members = [n for n in order if stage.get(n) == k]
        outputs = [n for n in members if n == comp.root or any(stage[u] > k for u in _readers(comp, n, stage))]
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


def _readers(comp: Computation, name: str, stage: dict[str, int]) -> set[str]:
    """The numbered instructions that read ``name``, directly or through instructions
    without a number (which each part that reads them computes)."""
    found: set[str] = set()
    seen: set[str] = set()
    todo = [u.name for u in comp.users(name)]
    while todo:
        u = todo.pop()
        if u in stage:
            found.add(u)
        elif u not in seen:
            seen.add(u)
            todo += [v.name for v in comp.users(u)]
    return found
