"""Nodes that do nothing, removed before compilation (a part of XLA's algebraic simplifier).

JAX writes ``broadcast_to(sum(x, axis=1, keepdims=True), s)`` as a reshape of the sums to
[m, 1], a broadcast of that onto its own shape, a reshape back to [m] and the broadcast
that widens it. The e-graph has the same identities (``broadcast-noop``, ``reshape-reshape``),
but each is a round of phase 1 over the whole kernel; a rule that reads the sums through the
broadcast (``broadcast-sums-dot``) fires only after them, when the other rules have grown the
e-graph severalfold. Here:

- a reshape of a reshape reads the inner reshape's operand;
- a broadcast onto its operand's own shape along every dimension in order, and a reshape to
  its operand's own shape, are their operand;
- so are a negation of a negation, a maximum or minimum of a value with itself or with the
  same operator's result on it (max(max(x, y), y)), and, for integers, a maximum of a value
  with a minimum of it (max(x, min(x, y)) = x) and the reverse (random kernels of Act's
  operators are full of them; the rules know the first ones, not the lattice's absorption).

The kernel's root stays, as a copy.

The values are the same bit for bit; programs are still checked against the kernel as written.
"""
from __future__ import annotations

import dataclasses

from .graph import Instruction, Module
from .types import TensorType


def simplified(module: Module) -> Module:
    """``module`` with its entry computation's nodes that do nothing removed (the module itself
    when it has none)."""
    comp = module.entry_computation
    alias: dict[str, str] = {}
    made: dict[str, Instruction] = {}
    for name in comp.operands_first():
        inst = comp[name]
        ops = tuple(alias.get(o, o) for o in inst.operands)
        if inst.opcode == "reshape" and made[ops[0]].opcode == "reshape":
            ops = made[ops[0]].operands
        if ops != inst.operands:
            inst = dataclasses.replace(inst, operands=ops)
        same = _same_as(inst, made)
        if same is not None:
            if inst.name != comp.root:
                alias[inst.name] = same
                continue
            inst = Instruction(inst.name, "copy", inst.type, (same,), {}, inst.loc)
        made[inst.name] = inst
    if not alias and all(made[n] is comp[n] for n in made):
        return module
    return module.with_entry([made[i.name] for i in comp.instructions if i.name in made], comp.root)


def _same_as(inst: Instruction, made: dict[str, Instruction]) -> str | None:
    """The operand (or one below it) whose value ``inst`` has, if one of the identities holds."""
    ops = inst.operands
    if inst.opcode in ("reshape", "broadcast") and made[ops[0]].type == inst.type and \
            (inst.opcode == "reshape" or tuple(inst.attrs["dimensions"]) == tuple(range(inst.type.rank))):
        return ops[0]
    if inst.opcode == "negate" and made[ops[0]].opcode == "negate":
        return made[ops[0]].operands[0]
    if inst.opcode not in ("maximum", "minimum"):
        return None
    if ops[0] == ops[1]:
        return ops[0]
    dual = "minimum" if inst.opcode == "maximum" else "maximum"
    ints = isinstance(inst.type, TensorType) and inst.type.dtype.is_int
    for k in (0, 1):
        inner, other = made[ops[k]], ops[1 - k]
        if inner.opcode == inst.opcode and other in inner.operands:
            return ops[k]  # max(max(x, y), y) = max(x, y)
        if ints and inner.opcode == dual and other in inner.operands:
            return other  # max(x, min(x, y)) = x
    return None
