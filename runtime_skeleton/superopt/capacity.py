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

from ..errors import ActgenError
from ..ir.graph import Computation, Instruction, Module
from ..ir.types import TensorType
from ..target import TargetDef

# operators that move or rearrange data: what computes a kernel is the rest
DATA_OPS = frozenset({"parameter", "constant", "reshape", "bitcast-convert", "transpose", "slice", "concatenate",
                      "pad", "broadcast", "copy", "tuple", "get-tuple-element", "reverse", "iota", "convert"})
CONTRACTING = frozenset({"dot", "convolution", "reduce"})

Op = tuple[str, str, bool]  # (operator, result element type, element-wise: no operand is a contraction's)
_TABLES: dict[tuple[str, str], dict[Op, dict[str, int]]] = {}  # per target (name, description)


def kernel_rows(target: TargetDef, module: Module) -> int | None:
    """The most rows one instruction writes among those computing the kernel's operators
    (None when no instruction computes any of them as it is: rewrites decide then)."""
    table = _table(target)
    rows = [n for op in _ops(module) for n in table.get(op, {}).values()]
    return max(rows) if rows else None


def combining_buffers(target: TargetDef, module: Module, reduce: Instruction) -> frozenset[str]:
    """The buffers into which an instruction combines values as ``reduce`` does, element
    by element at its element type (AMX's s32 row sum: ``vpaddd`` into zmm; a tile dot
    adds s32 values into tmm, but a dot's)."""
    return frozenset(_table(target).get(_combine(module, reduce), {}))


def _combine(module: Module, reduce: Instruction) -> Op | None:
    combine = module.computations.get(reduce.attrs.get("to_apply"))
    return None if combine is None else (combine.root_instruction.opcode, reduce.type.dtype.name, True)


def _ops(module: Module) -> set[Op]:
    out: set[Op] = set()
    for ins in module.entry_computation.instructions:
        if ins.opcode in DATA_OPS or not isinstance(ins.type, TensorType):
            continue
        op = _combine(module, ins) if ins.opcode == "reduce" else \
            (ins.opcode, ins.type.dtype.name, ins.opcode not in CONTRACTING)
        if op is not None:
            out.add(op)
    return out


def _table(target: TargetDef) -> dict[Op, dict[str, int]]:
    """Per (operator, element type, element-wise), the buffers instructions computing it
    write, and the most rows one writes there (attributes at their largest). An
    element-wise operator also counts as not element-wise (a dot's epilogue may use a
    vector add)."""
    key = (target.name, target.source)
    if key not in _TABLES:
        table: dict[Op, dict[str, int]] = {}
        for ins in target.instructions.values():
            buffer = ins.output.buffer
            if target.buffers[buffer].is_hbm:  # a store: its rows are bytes of memory
                continue
            rows = _rows_written(ins)
            if rows is None:
                continue
            try:
                comp = target.semantics(ins, {d.name: d.hi for d in ins.comp_attrs}).entry_computation
            except ActgenError:
                continue
            for op in _instruction_ops(comp):
                for k in {op, (op[0], op[1], False)}:
                    at = table.setdefault(k, {})
                    at[buffer] = max(at.get(buffer, 1), rows)
        _TABLES[key] = table
    return _TABLES[key]


def _instruction_ops(comp: Computation) -> set[Op]:
    """The computing operators of an instruction's semantics; one is element-wise when
    none of its operands (seen through data movement) comes from a contraction."""
    def source(name: str) -> str:
        ins = comp[name]
        while ins.opcode in DATA_OPS and ins.operands:
            ins = comp[ins.operands[0]]
        return ins.opcode

    return {(i.opcode, i.type.dtype.name, all(source(o) not in CONTRACTING for o in i.operands))
            for i in comp.instructions if i.opcode not in DATA_OPS and isinstance(i.type, TensorType)}


def _rows_written(ins) -> int | None:  # noqa: ANN001  (an InstructionDef class)
    """Rows of its output buffer the instruction writes, computing attributes at their
    largest and addresses distinct (AMX's tile ops take three different tiles); None
    when those make no valid instruction."""
    a = {d.name: d.hi for d in ins.comp_attrs} | {d.name: min(d.lo + j, d.hi) for j, d in enumerate(ins.addr_attrs)}
    try:
        return int(ins.h(a)[0][1][-1]) if ins.e(a) else None
    except Exception:  # noqa: BLE001  (attributes at their bounds may not make a valid instruction)
        return None
