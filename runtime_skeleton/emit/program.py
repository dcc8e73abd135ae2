"""The code emitter (Act §6.3, Appendix C.6): the concrete instruction stream in
issue order, identity instructions dropped (they move no data), the constants
concatenated into one constant section, and the HBM regions of the kernel's
inputs and outputs as directives — the assembly format of ``program.text``."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..alloc.allocate import Allocation
from ..ir.types import TensorType
from ..isel.convert import to_module
from ..isel.extract import PiiGraph
from ..layout import bflat
from ..reference import evaluate
from ..program import ConcreteInstr, ConstData, Loop, Program, TensorDecl


def constant_bytes(g: PiiGraph, v: int) -> bytes:
    """The value of a constant node, as the bytes it occupies in its buffer."""
    n = g.nodes[v]
    (value,) = evaluate(to_module([n.term], "constant", []), [])
    return bflat(np.asarray(value), n.type)


def emit_program(target_name: str, g: PiiGraph, alloc: Allocation, input_types: Sequence[TensorType],
                 output_types: Sequence[TensorType]) -> Program:
    prog = Program(target=target_name)
    # an input the program never reads has no region yet (-1): place_unread_inputs gives it one
    offsets = list(alloc.inputs) + [-1] * (len(input_types) - len(alloc.inputs))
    prog.inputs = [TensorDecl(f"arg{i}", t, off) for i, (t, off) in enumerate(zip(input_types, offsets))]
    prog.outputs = [TensorDecl(f"out{i}", t, off) for i, (t, off) in enumerate(zip(output_types, alloc.outputs))]
    if alloc.consts:
        base = min(alloc.consts.values())
        section = bytearray()
        for v, off in sorted(alloc.consts.items(), key=lambda kv: kv[1]):
            data = constant_bytes(g, v)
            section.extend(bytes(off - base - len(section)))  # alignment padding inside the section
            section.extend(data)
        prog.consts = [ConstData(base, bytes(section))]
    prog.instructions = [ConcreteInstr(g.nodes[v].op, alloc.attrs[v]) for v in alloc.order]
    return prog


def program_json(prog: Program) -> dict:
    """The same program for tools: plain JSON values."""
    return {
        "target": prog.target,
        "inputs": [{"name": d.name, "type": str(d.type), "offset": d.offset} for d in prog.inputs],
        "outputs": [{"name": d.name, "type": str(d.type), "offset": d.offset} for d in prog.outputs],
        "constants": [{"offset": c.offset, "hex": c.data.hex()} for c in prog.consts],
        "instructions": _items_json(prog.instructions),
    }


def _items_json(items) -> list[dict]:
    return [{"loop": it.var, "start": it.start, "stop": it.stop, "body": _items_json(it.body)} if isinstance(it, Loop)
            else {"op": it.name, "attrs": {k: v if isinstance(v, int) else str(v) for k, v in it.attrs.items()}}
            for it in items]
