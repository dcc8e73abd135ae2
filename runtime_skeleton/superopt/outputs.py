"""Kernels with several outputs (a tuple root): one program per output, in sequence.

The whole kernel first gets ``direct_share`` of the time as straight-line code
(Act compiles a tuple root as one pii graph; superopt.driver). When that fails, each
output's cone (the instructions it depends on, with the parameters it reads) is a
kernel of its own (``output_plan``), compiled straight-line, in stages or in loops, and
the programs run one after the other (superopt.sequence). A value two outputs depend on
is computed by each part: the parts are separate loop nests, not fused (Axon §4.5's
fusion is not built).
"""
from __future__ import annotations

from dataclasses import replace

from ..ir.graph import Computation, Module
from ..ir.types import TensorType, TupleType
from .sequence import Part, Plan
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


def output_plan(module: Module) -> Plan:
    """The kernel as its outputs in sequence, each the cone of one element of the root tuple."""
    pieces = parts(module)
    inputs = [t for t in module.parameter_types if isinstance(t, TensorType)]
    return Plan("output", tuple(Part(m, params, (len(inputs) + k,)) for k, (m, params) in enumerate(pieces)),
                tuple(inputs) + tuple(module.result_type.elements), len(inputs),
                tuple(range(len(inputs), len(inputs) + len(pieces))))
