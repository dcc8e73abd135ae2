"""Kernels with several outputs (a tuple root): one program per output, in sequence.

The whole kernel first gets ``direct_share`` of the time as straight-line code
(Act compiles a tuple root as one pii graph). When that fails, each output's cone
(the instructions it depends on, with the parameters it reads) is compiled as a
kernel of its own, straight-line, in stages or in loops (``compile_staged``), and the
programs run one after the other (superopt.sequence). A value two outputs depend on
is computed by each part: the parts are separate loop nests, not fused (Axon §4.5's
fusion is not built).
"""
from __future__ import annotations

import time
from dataclasses import replace

from ..compile import CompileError, CompileOptions, CompileResult, compile_direct
from ..ir.graph import Computation, Module
from ..ir.types import TensorType, TupleType
from ..target import TargetDef
from .sequence import Part, Plan, compile_plan
from .strip import NotTileable


LARGE_TUPLE_NODES_DIVISOR = 8  # a tuple over MAX_DIRECT_BLOCKS gets this share of phase 1's e-nodes whole


def several_outputs(module: Module) -> bool:
    t = module.result_type
    return isinstance(t, TupleType) and len(t.elements) > 1


def parts(module: Module) -> list[tuple[Module, tuple[int, ...]]]:
    """Per element of the root tuple: the kernel computing it, and the whole kernel's
    parameter number of each of its parameters."""
    comp = module.entry_computation
    root = comp.root_instruction
    if root.opcode != "tuple" or any(not isinstance(comp[o].type, TensorType) for o in root.operands):
        raise NotTileable("the kernel's outputs are not a flat tuple of tensors")
    return [cone_kernel(module, out, f"out{k}") for k, out in enumerate(root.operands)]


def cone_kernel(module: Module, out: str, suffix: str) -> tuple[Module, tuple[int, ...]]:
    """The kernel computing the entry's value ``out`` (the instructions it depends on),
    its output written apart from its inputs (a part of a sequence), and the whole
    kernel's parameter number of each of its parameters."""
    comp = module.entry_computation
    needed = _cone(comp, out)
    params = [i for i in comp.parameters if i.name in needed]
    number = {p.name: n for n, p in enumerate(params)}
    body = [replace(i, attrs={**i.attrs, "parameter_number": number[i.name]}) if i.name in number else i
            for i in comp.instructions if i.name in needed]
    entry = Computation(comp.name, body, out, comp.loc)
    computations = {**module.computations, comp.name: entry}
    return (Module(f"{module.name}.{suffix}", computations, module.entry, module.loc, output_written=True),
            tuple(p.attrs["parameter_number"] for p in params))


def _cone(comp: Computation, name: str) -> set[str]:
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo += comp[n].operands
    return seen


def compile_outputs(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    """The whole kernel as straight-line code within ``direct_share`` of the time divided
    by its number of outputs, else its outputs one at a time (compile_parts). A tuple of
    outputs that compiles whole is found early; one that does not would otherwise hold
    half of the time that its outputs' loop nests need (reductions: 5 outputs). A tuple
    whose outputs measure more than ``MAX_DIRECT_BLOCKS`` together (``tiled.blocks``) is
    tried whole in an e-graph of an eighth of phase 1's e-nodes (a bound on work, not on
    time), then goes to its outputs."""
    from .tiled import MAX_DIRECT_BLOCKS, blocks

    t0 = time.perf_counter()
    share = opts.direct_share / len(module.result_type.elements)
    whole = opts
    try:
        size = sum(blocks(target, m) for m, _ in parts(module))
        if size > MAX_DIRECT_BLOCKS:  # as for one output (superopt.tiled): phase 1 would not finish in
            # time, so the whole kernel only gets a small e-graph (values the outputs share are then
            # computed once where it suffices; strided loads make small kernels look large here)
            small = max(1, opts.phase1.max_nodes // LARGE_TUPLE_NODES_DIVISOR)
            whole = replace(opts, phase1=replace(opts.phase1, max_nodes=small))
    except NotTileable:
        pass
    try:
        return compile_direct(target, module, whole, t0 + share * max(0.0, deadline - t0))
    except CompileError as err:
        try:
            return compile_parts(target, module, opts, deadline)
        except CompileError as why:
            raise CompileError(f"{err.message}\n  one output at a time: {why.message}", err.loc or why.loc) from None


def compile_parts(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    """Each output compiled as a kernel of its own (the time left shared evenly), the
    programs in sequence."""
    from .stages import compile_staged

    try:
        pieces = parts(module)
    except NotTileable as err:
        raise CompileError(err.message) from None
    inputs = [t for t in module.parameter_types if isinstance(t, TensorType)]
    plan = Plan("output", tuple(Part(m, params, (len(inputs) + k,)) for k, (m, params) in enumerate(pieces)),
                tuple(inputs) + tuple(module.result_type.elements), len(inputs),
                tuple(range(len(inputs), len(inputs) + len(pieces))))
    return compile_plan(target, module, plan, compile_staged, opts, deadline)
