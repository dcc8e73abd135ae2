"""Kernels with several outputs (a tuple root): one program per output, in sequence.

The whole kernel first gets ``direct_share`` of the time as straight-line code
(Act compiles a tuple root as one pii graph). When that fails, each output's cone
(the instructions it depends on, with the parameters it reads) is compiled as a
kernel of its own, straight-line or in loops (``compile_tiled``), and the programs
run one after the other: every HBM access of a part moves to the whole kernel's
tensor it lies in, and the part's constants and HBM scratch move past the earlier
parts'. On-chip data does not outlive a part, so parts need not avoid each other on
chip. A value two outputs depend on is computed by each part: the parts are
separate loop nests, not fused (Axon §4.5's fusion is not built).
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import replace

from ..compile import CompileError, CompileOptions, CompileResult, CompileStats, compile_direct
from ..errors import ActgenError
from ..ir.graph import Computation, Module
from ..ir.types import TensorType, TupleType
from ..layout import byte_size
from ..sim.program import ConcreteInstr, ConstData, Item, Loop, Program, TensorDecl
from ..target import TargetDef
from .addressing import Terms, corner_slices, hbm_end, moved, region_of
from .loops import check_program, page
from .strip import NotTileable


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
    found = []
    for k, out in enumerate(root.operands):
        needed = _cone(comp, out)
        params = [i for i in comp.parameters if i.name in needed]
        number = {p.name: n for n, p in enumerate(params)}
        body = [replace(i, attrs={**i.attrs, "parameter_number": number[i.name]}) if i.name in number else i
                for i in comp.instructions if i.name in needed]
        entry = Computation(comp.name, body, out, comp.loc)
        computations = {**module.computations, comp.name: entry}
        found.append((Module(f"{module.name}.out{k}", computations, module.entry, module.loc),
                      tuple(p.attrs["parameter_number"] for p in params)))
    return found


def _cone(comp: Computation, name: str) -> set[str]:
    seen, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo += comp[n].operands
    return seen


def compile_outputs(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    """The whole kernel as straight-line code within ``direct_share`` of the time, else
    its outputs one at a time (compile_parts)."""
    t0 = time.perf_counter()
    try:
        return compile_direct(target, module, opts, t0 + opts.direct_share * max(0.0, deadline - t0))
    except CompileError as err:
        try:
            return compile_parts(target, module, opts, deadline)
        except CompileError as why:
            raise CompileError(f"{err.message}\n  one output at a time: {why.message}", err.loc or why.loc) from None


def compile_parts(target: TargetDef, module: Module, opts: CompileOptions, deadline: float) -> CompileResult:
    """Each output compiled as a kernel of its own (the time left shared evenly), the
    programs in sequence."""
    from .tiled import compile_tiled

    t0 = time.perf_counter()
    try:
        pieces = parts(module)
    except NotTileable as err:
        raise CompileError(err.message) from None
    results = []
    for k, (part, _) in enumerate(pieces):
        now = time.perf_counter()
        try:
            results.append(compile_tiled(target, part, opts, now + (deadline - now) / (len(pieces) - k)))
        except ActgenError as err:
            raise CompileError(f"output {k}: {err.message}", err.loc) from None
    try:
        prog = sequenced(target, [r.program for r in results], [p for _, p in pieces],
                         [t for t in module.parameter_types if isinstance(t, TensorType)],
                         list(module.result_type.elements))
        check_program(target, prog)
    except NotTileable as err:
        raise CompileError(err.message) from None
    stats = _summed([r.stats for r in results])
    stats.seconds = time.perf_counter() - t0
    first = results[0]
    return CompileResult(prog, opts.cost(target, prog), first.pii_graph, first.allocation, stats, module,
                         parts=tuple(results))


def sequenced(target: TargetDef, programs: list[Program], params: list[tuple[int, ...]],
              input_types: list[TensorType], output_types: list[TensorType]) -> Program:
    """The programs one after the other as one program over the whole kernel's
    tensors: program k reads whole inputs ``params[k]`` and writes output k."""
    spans = [hbm_end(target, p) for p in programs]
    shifts, at = [], 0
    for top in spans:
        shifts.append(at)
        at += page(top)
    bases = []
    for t in input_types + output_types:
        bases.append(at)
        at += page(byte_size(t))
    if at > target.hbm.nbytes:
        raise NotTileable(f"the outputs' programs and the kernel's tensors need {at} bytes of HBM; "
                          f"{target.hbm.name} has {target.hbm.nbytes}")
    items: list[Item] = []
    consts: list[ConstData] = []
    for k, (prog, shift) in enumerate(zip(programs, shifts)):
        # (start, size, (whole tensor's base, whether the part may write it))
        regions = [(d.offset, byte_size(d.type), (bases[w], False)) for d, w in zip(prog.inputs, params[k])]
        regions += [(d.offset, byte_size(d.type), (bases[len(input_types) + k], True)) for d in prog.outputs]
        items += _moved_items(target, prog.instructions, regions, shift, {})
        consts += [ConstData(c.offset + shift, c.data) for c in prog.consts]
    n = len(input_types)
    return Program(target=programs[0].target,
                   inputs=[TensorDecl(f"arg{i}", t, bases[i]) for i, t in enumerate(input_types)],
                   outputs=[TensorDecl(f"out{k}", t, bases[n + k]) for k, t in enumerate(output_types)],
                   consts=consts, instructions=items)


def _moved_items(target: TargetDef, items, regions: list[tuple[int, int, tuple[int, bool]]], shift: int,
                 ranges: dict[str, tuple[int, int]]) -> list[Item]:
    out: list[Item] = []
    for it in items:
        if isinstance(it, Loop):
            inner = {**ranges, it.var: (it.start, max(it.start, it.stop - 1))}
            out.append(replace(it, body=tuple(_moved_items(target, it.body, regions, shift, inner))))
        else:
            out.append(_moved_one(target, it, regions, shift, ranges))
    return out


def _moved_one(target: TargetDef, ci: ConcreteInstr, regions, shift: int, ranges) -> ConcreteInstr:
    """The instruction with each HBM slice moved: into the whole tensor whose part
    tensor it lies in, or by ``shift`` (constants, scratch)."""
    corners = corner_slices(target, ci, ranges)
    where = None
    for _, found in corners:
        here = [(j, region_of(regions, lo, n)) for j, lo, n in found]
        if where is not None and here != where:
            raise NotTileable(f"{ci.name}: a slice moves between tensors across the iterations of its loops")
        where = here
    moves: list[tuple[int, int, Terms]] = []
    for j, region in where:
        if region is None:
            moves.append((j, shift, ()))
            continue
        start, (base, writable) = region
        if j == 0 and not writable:
            raise NotTileable(f"{ci.name}: a part writes over one of its inputs, which later parts read")
        moves.append((j, base - start, ()))
    return moved(target, ci, corners[0][0], [m for m in moves if m[1]])


def _summed(all_stats: list[CompileStats]) -> CompileStats:
    total = CompileStats()
    for st in all_stats:
        for f in dataclasses.fields(CompileStats):
            a, b = getattr(total, f.name), getattr(st, f.name)
            setattr(total, f.name, a + b)
    return total
