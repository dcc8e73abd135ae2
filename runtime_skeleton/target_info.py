"""Facts derived from a target's description, computed once per target and only read after.

Like a TableGen backend's tables: the passes that measure a kernel against the
instructions (the tiled search, the capacity table, the fuzzer's profile) read these
instead of probing the instructions each time. Each instruction is probed once, with
its computing attributes at their largest and its addresses distinct (AMX's tile ops
take three different tiles); an instruction those attributes make invalid counts for
nothing. ``facts.facts_text`` prints them, with what phase 1 derives, for
``info --facts`` and for the ``facts.txt`` of every generated package.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .errors import ActgenError
from .ir.graph import Computation
from .ir.ops import CONTRACTIONS, DATA_MOVEMENT, PLUMBING
from .ir.types import TensorType
from .target import TargetDef

# operators that move or rearrange data: what computes a kernel is the rest
DATA_OPS = DATA_MOVEMENT | (PLUMBING - {"call"}) | {"constant", "iota", "convert"}
CONTRACTING = CONTRACTIONS | {"reduce"}

Op = tuple[str, str, bool]  # (operator, result element type, element-wise: no operand is a contraction's)


@dataclass(frozen=True)
class TargetInfo:
    target: str
    rows_per_write: Mapping[str, int]  # on-chip buffer -> the most rows one instruction writes there
    computes: Mapping[Op, Mapping[str, int]]  # operator -> buffers instructions computing it write, rows each
    contractions: Mapping[tuple[str, str], int]  # (buffer, "dot" | "reduce") -> the longest one instruction does

    def rows_written(self, buffer: str) -> int:
        return self.rows_per_write.get(buffer, 1)

    def longest_contraction(self, buffers: list[str], opcode: str) -> int:
        """The longest ``opcode`` contraction (a dot's contracted extent, a reduce's reduced one)
        one instruction performs into any of ``buffers``; 1 when none does."""
        return max([self.contractions.get((b, opcode), 1) for b in buffers] + [1])


_INFO: dict[int, tuple[TargetDef, TargetInfo]] = {}


def target_info(target: TargetDef) -> TargetInfo:
    """The target's facts (computed on first use, then cached with the target object)."""
    got = _INFO.get(id(target))
    if got is None or got[0] is not target:
        got = _INFO[id(target)] = (target, _build(target))
    return got[1]


def _build(target: TargetDef) -> TargetInfo:
    rows: dict[str, int] = {}
    computes: dict[Op, dict[str, int]] = {}
    contractions: dict[tuple[str, str], int] = {}
    for ins in target.instructions.values():
        buffer = ins.output.buffer
        if target.buffers[buffer].is_hbm:  # a store: its rows are bytes of memory
            continue
        written = _rows_written(ins)
        if written is None:
            continue
        rows[buffer] = max(rows.get(buffer, 1), written)
        comp = target.semantics(ins, {d.name: d.hi for d in ins.comp_attrs}).entry_computation
        for op in _instruction_ops(comp):
            for k in {op, (op[0], op[1], False)}:  # element-wise also counts as not (a dot's epilogue)
                at = computes.setdefault(k, {})
                at[buffer] = max(at.get(buffer, 1), written)
        for i in comp.instructions:
            if i.opcode in ("dot", "reduce"):
                x = comp[i.operands[0]].tensor_type
                dims = i.attrs.get("lhs_contracting_dims", ()) if i.opcode == "dot" else i.attrs["dimensions"]
                key = (buffer, i.opcode)
                contractions[key] = max(contractions.get(key, 1), math.prod(x.shape[d] for d in dims))
    return TargetInfo(target.name, MappingProxyType(dict(sorted(rows.items()))),
                      MappingProxyType({k: MappingProxyType(dict(sorted(v.items()))) for k, v in sorted(computes.items())}),
                      MappingProxyType(dict(sorted(contractions.items()))))


def _rows_written(ins) -> int | None:  # noqa: ANN001  (an InstructionDef class)
    """Rows of its output buffer the instruction writes, computing attributes at their
    largest and addresses distinct; None when those make no valid instruction (the
    checker proved h in bounds wherever e holds)."""
    a = {d.name: d.hi for d in ins.comp_attrs} | {d.name: min(d.lo + j, d.hi) for j, d in enumerate(ins.addr_attrs)}
    try:
        valid = ins.e(a)
    except ActgenError:  # e.g. a division by an attribute at 0
        return None
    return int(ins.h(a)[0][1][-1]) if valid else None


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
