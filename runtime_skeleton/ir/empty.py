"""Tensors with no elements, removed before compilation: a concatenation's empty
operands add nothing (XLA's algebraic simplifier drops them too), and what computed
only them is dead. An empty tensor anything else still reads is left in place; the
compiler refuses it (``empty_value``)."""
from __future__ import annotations

from dataclasses import replace

from .graph import Computation, Instruction, Module
from .types import TensorType


def is_empty(inst: Instruction) -> bool:
    return isinstance(inst.type, TensorType) and 0 in inst.type.shape


def drop_empty(module: Module) -> Module:
    """``module`` with its entry computation's concatenations rid of empty operands (a
    concatenation left with one operand becomes a copy of it) and dead code removed."""
    comp = module.entry_computation
    by_name = {i.name: i for i in comp.instructions}
    if not any(is_empty(i) for i in comp.instructions):
        return module
    body = []
    for inst in comp.instructions:
        if inst.opcode == "concatenate" and not is_empty(inst):
            kept = tuple(o for o in inst.operands if not is_empty(by_name[o]))
            if len(kept) == 1:
                inst = Instruction(inst.name, "copy", inst.type, kept, {}, inst.loc)
            elif kept != inst.operands:
                inst = replace(inst, operands=kept)
        body.append(inst)
    live, stack = set(), [comp.root]
    kept_by_name = {i.name: i for i in body}
    while stack:
        name = stack.pop()
        if name not in live:
            live.add(name)
            stack += kept_by_name[name].operands
    body = [i for i in body if i.name in live or i.opcode == "parameter"]
    entry = Computation(comp.name, body, comp.root, comp.loc)
    return replace(module, computations={**module.computations, comp.name: entry})


def empty_value(module: Module) -> Instruction | None:
    """The first value of the entry computation that has no elements, if any."""
    return next((i for i in module.entry_computation.instructions if is_empty(i)), None)
