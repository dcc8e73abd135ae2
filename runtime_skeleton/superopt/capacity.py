"""How many rows of its output one instruction computes, per operator of a kernel.

The tiled search (superopt.tiled) measures a kernel in blocks of what one
instruction does, to skip a straight-line attempt that phase 1 cannot finish. A
block is Q on-chip rows, where Q is the most rows an instruction that computes the
kernel's operators writes at once: 16 for AMX's tile dot ops and Gemmini's
accumulator, 1 for a vector register. A reduce combines element by element, so
only instructions whose combining operator is element-wise count for it: AMX's
``tdpbf16ps`` adds f32 values too, but into a dot's result, and an f32 row sum is
work for ``vaddps``, a register row at a time.
"""
from __future__ import annotations

import math

from ..ir.graph import Instruction, Module
from ..ir.types import TensorType
from ..isel.phase1 import target_facts
from ..isel.tiles import instruction_dot_reads
from ..target import TargetDef
from ..target_info import CONTRACTING, DATA_OPS, Op, target_info


def kernel_rows(target: TargetDef, module: Module) -> int | None:
    """The most rows one instruction writes among those computing the kernel's operators
    (None when no instruction computes any of them as it is: rewrites decide then)."""
    table = target_info(target).computes
    rows = [n for op in _ops(module) for n in table.get(op, {}).values()]
    return max(rows) if rows else None


def combining_buffers(target: TargetDef, module: Module, reduce: Instruction) -> frozenset[str]:
    """The buffers into which an instruction combines values as ``reduce`` does, element
    by element at its element type (AMX's s32 row sum: ``vpaddd`` into zmm; a tile dot
    adds s32 values into tmm, but a dot's)."""
    return frozenset(target_info(target).computes.get(_combine(module, reduce), {}))


def _combine(module: Module, reduce: Instruction) -> Op | None:
    combine = module.computations.get(reduce.attrs.get("to_apply"))
    return None if combine is None else (combine.root_instruction.opcode, reduce.type.dtype.name, True)


def _ops(module: Module) -> set[Op]:
    out: set[Op] = set()
    for ins in module.entry_computation.instructions:
        if ins.opcode in DATA_OPS or not isinstance(ins.type, TensorType):
            continue
        if ins.opcode == "clamp":  # a maximum and a minimum
            out |= {(m, ins.type.dtype.name, True) for m in ("maximum", "minimum")}
            continue
        op = _combine(module, ins) if ins.opcode == "reduce" else \
            (ins.opcode, ins.type.dtype.name, ins.opcode not in CONTRACTING)
        if op is not None:
            out.add(op)
    return out


def outer_products(target: TargetDef, module: Module, dot: Instruction) -> bool:
    """Whether ``dot`` (an instruction of ``module``) contracts more than one element and no
    instruction's dot reads its operand types, an operand's type before a convert included
    (as ``isel.pretile`` reads them: AMX's int8 dot reads convert(s8) operands of an s32 dot,
    but no instruction reads f32, its tile dot reading bf16): the rules then make it outer
    products, one multiply-add per row and contracted element."""
    comp = module.entry_computation
    dims = dot.attrs.get("lhs_contracting_dims", ())
    length = math.prod(comp[dot.operands[0]].tensor_type.shape[d] for d in dims)
    return length > 1 and not instruction_dot_reads(comp, dot, target_facts(target).dots)


def multiply_add_buffers(target: TargetDef, dtype: str) -> list[str]:
    """The on-chip buffers into which instructions multiply and add ``dtype`` values element
    by element: where a dot made outer products (``outer_products``) accumulates (AMX's s32
    matmul: ``vpmulld`` and ``vpaddd`` into zmm, though its tile dot writes s32 into tmm)."""
    table = target_info(target).computes
    return sorted(set(table.get(("multiply", dtype, True), {})) & set(table.get(("add", dtype, True), {})))
