"""Call inlining (XLA's CallInliner): the entry computation with each tensor-valued
``call`` replaced by its callee's instructions, so passes that look at the graph
(strip-mining, stages) see through the calls JAX emits for jax.nn.relu, clip, ...

A callee's instructions are renamed ``<call>.<name>`` and its root takes the call's
name (and type), so the call's users read it unchanged. Calls whose result is a
tuple, or whose callee returns a parameter, stay calls.
"""
from __future__ import annotations

from dataclasses import replace

from .graph import Computation, Instruction, Module, fresh_name
from .types import TensorType


def inline_calls(module: Module) -> Module:
    entry = module.entry_computation
    if not any(_inlinable(module, i) for i in entry.instructions):
        return module
    body = _inlined(module, entry, {i.name for i in entry.instructions})
    computations = {**module.computations, entry.name: Computation(entry.name, body, entry.root, entry.loc)}
    return replace(module, computations=computations)


def _inlinable(module: Module, inst: Instruction) -> bool:
    if inst.opcode != "call" or not isinstance(inst.type, TensorType):
        return False
    callee = module.computations[inst.attrs["to_apply"]]
    return callee.root_instruction.opcode != "parameter"


def _inlined(module: Module, comp: Computation, taken: set[str]) -> list[Instruction]:
    out: list[Instruction] = []
    for inst in comp.instructions:
        if not _inlinable(module, inst):
            out.append(inst)
            continue
        callee = module.computations[inst.attrs["to_apply"]]
        names: dict[str, str] = {}
        for c in callee.instructions:
            if c.opcode == "parameter":
                names[c.name] = inst.operands[c.attrs["parameter_number"]]
            elif c.name == callee.root:
                names[c.name] = inst.name
            else:
                names[c.name] = fresh_name(f"{inst.name}.{c.name}", taken)
        renamed = [replace(c, name=names[c.name], operands=tuple(names[o] for o in c.operands),
                           type=inst.type if c.name == callee.root else c.type)
                   for c in callee.instructions if c.opcode != "parameter"]
        out += _inlined(module, Computation(callee.name, renamed, inst.name, callee.loc), taken)
    return out
