"""Operands an instruction does not read at a given α.

A store that writes whole rows of a region still names the region's old bytes as an
operand (it keeps those between its rows; with the stride equal to the row, none).
Bound to whatever the kernel holds there, such an operand ties the instruction to a
value it never reads: a constant, overwritten in place, has no allocation. Where no
byte of the result comes from parameter j, the IR-to-ISA rules give it ``undef``.

Decided exactly, not by sampling: only a parameter whose every use on the way to the
root only moves elements (``DATA_MOVEMENT``) is considered, and then each byte of the
result is a byte of that parameter or comes from elsewhere whatever the parameter
holds, so evaluating the semantics with the parameter all zero bits and all one bits
(the other operands fixed) differs exactly where the result reads it.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Module
from ..ir.ops import DATA_MOVEMENT
from ..ir.types import TensorType
from ..target import InstructionDef, TargetDef


_KNOWN: dict[tuple, frozenset[int]] = {}  # (instruction, its symbols at α) -> the answer


def unread_parameters(target: TargetDef, ins: type[InstructionDef], alpha: dict[str, int]) -> frozenset[int]:
    """The parameters of ``ins``'s semantics at α that no byte of its result comes from."""
    key = (ins, tuple(sorted({**target.constants, **alpha}.items())))
    if key not in _KNOWN:
        sem = target.semantics(ins, alpha)
        _KNOWN[key] = frozenset(j for j in _only_moved(sem) if not _reads(sem, j))
    return _KNOWN[key]


def _only_moved(sem: Module) -> list[int]:
    comp = sem.entry_computation
    users: dict[str, list[str]] = {i.name: [] for i in comp.instructions}
    for i in comp.instructions:
        for o in i.operands:
            users[o].append(i.name)
    out = []
    for p in comp.parameters:
        stack, seen, moved = list(users[p.name]), set(), True
        while stack and moved:
            name = stack.pop()
            if name not in seen:
                seen.add(name)
                moved = comp[name].opcode in DATA_MOVEMENT
                stack += users[name]
        if moved and isinstance(p.type, TensorType):
            out.append(p.attrs["parameter_number"])
    return out


def _reads(sem: Module, j: int) -> bool:
    from ..reference import evaluate  # the interpreter: imported only when a rule asks

    types = sem.parameter_types
    args = [_filled(t, 0x5A) for t in types]
    zeros, ones = list(args), list(args)
    zeros[j], ones[j] = _filled(types[j], 0x00), _filled(types[j], 0xFF)
    a, b = evaluate(sem, zeros), evaluate(sem, ones)
    return any(x.tobytes() != y.tobytes() for x, y in zip(a, b))


def _filled(t: TensorType, byte: int) -> np.ndarray:
    if t.dtype.is_pred:
        return np.full(t.shape, bool(byte))
    return np.full(t.nbytes, byte, dtype=np.uint8).view(t.dtype.np).reshape(t.shape)
