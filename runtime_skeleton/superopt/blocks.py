"""A kernel whose result is a concatenation, cut into its blocks: one program each, in sequence.

When each operand of the root ``concatenate`` fills a contiguous run of the output's
bytes, in its own layout's order (along the outermost dimension of a row-major
output, for instance), the operand's cone is a kernel of its own that writes its
block in place: the blocks' programs run one after the other (superopt.sequence), each
writing the output at its block's byte offset. Each block is smaller than the whole
kernel, so phase 1 saturates it sooner, and a block that copies part of an input
(``concat(x[8:16], x[0:8])``) need not be found among the whole kernel's view graphs.
A value two blocks use is computed by each. A root ``pad`` is such a concatenation along
its first padded dimension: runs of padding, and runs of the operand padded along the
other dimensions, which strips along the first then cut (a row with leading padding is
its padding and its values stored apart; no strip of the whole pad is, its rows are
partly padding).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..ir.attrs import PadDim, SliceDim, split_padding
from ..ir.graph import Computation, Instruction, Module
from ..ir.types import TensorType
from ..layout.flatten import storage
from .outputs import cone_kernel
from .sequence import Part, Plan


def block_plan(module: Module) -> Plan | None:
    """The root concatenation's operands as parts writing their blocks of the output, or
    None when the root is no concatenation of two blocks or more, or a block's bytes are
    not a contiguous run of the output's in the block's own order."""
    module = _pad_as_concat(module)
    comp = module.entry_computation
    root, out = comp.root_instruction, module.result_type
    params = sorted(comp.parameters, key=lambda p: p.attrs["parameter_number"])
    if root.opcode != "concatenate" or not isinstance(out, TensorType) or \
            any(not isinstance(p.type, TensorType) for p in params):
        return None
    whole = _element_offsets(out)
    if whole is None:
        return None
    (dim,) = root.attrs["dimensions"]
    n_in = len(params)
    parts, start = [], 0
    for k, name in enumerate(root.operands):
        t = comp[name].type
        extent = t.shape[dim]
        index = tuple(slice(start, start + extent) if d == dim else slice(None) for d in range(out.rank))
        start += extent
        if t.size == 0:
            continue
        region, own = whole[index], _element_offsets(t)
        first = int(region.min())
        if own is None or not np.array_equal(region - first, own):
            return None
        block, reads = cone_kernel(module, name, f"block{k}")
        parts.append(Part(block, reads, (n_in,), (first * out.dtype.nbytes,)))
    if len(parts) < 2:
        return None
    return Plan("block", tuple(parts), tuple(p.type for p in params) + (out,), n_in, (n_in,))


def _pad_as_concat(module: Module) -> Module:
    """The kernel with a root ``pad`` written as a concatenation along its first padded
    dimension d: runs of the padding value broadcast, and runs of the operand's slices
    along d (one slice per element when the padding is interior), each padded along the
    other dimensions; negative padding drops elements at the ends. Else the kernel as it is."""
    comp = module.entry_computation
    root = comp.root_instruction
    if root.opcode != "pad" or not isinstance(root.type, TensorType):
        return module
    pads = root.attrs["padding"]
    found = split_padding(pads)
    if found is None:
        return module
    d, rest = found
    x, v = root.operands
    xt = comp[x].type
    body = [i for i in comp.instructions if i.name != root.name]
    operands: list[str] = []
    fills: dict[int, str] = {}  # one broadcast per length of padding: equal blocks, compiled once

    def add(opcode: str, like: TensorType, extent: int, ops: tuple[str, ...], attrs: dict) -> str:
        """A new instruction of type ``like`` with ``extent`` along d."""
        name = f"{root.name}.{len(body)}"
        t = TensorType(like.dtype, tuple(extent if i == d else n for i, n in enumerate(like.shape)))
        body.append(Instruction(name, opcode, t, ops, attrs, root.loc))
        return name

    for source, run in _runs(pads[d], xt.shape[d]):
        if source is None:
            if run not in fills:
                fills[run] = add("broadcast", root.type, run, (v,), {"dimensions": ()})
            operands.append(fills[run])
            continue
        part = x
        if run != xt.shape[d]:
            cut = tuple(SliceDim(source, source + run) if i == d else SliceDim(0, n) for i, n in enumerate(xt.shape))
            part = add("slice", xt, run, (x,), {"slice": cut})
        if rest is not None:
            part = add("pad", root.type, run, (part, v), {"padding": rest})
        operands.append(part)
    if len(operands) < 2:
        return module
    body.append(Instruction(root.name, "concatenate", root.type, tuple(operands), {"dimensions": (d,)}, root.loc))
    entry = Computation(comp.name, body, root.name, comp.loc)
    return replace(module, computations={**module.computations, comp.name: entry})


def _runs(pad: PadDim, n: int) -> list[tuple[int | None, int]]:
    """Along a padded dimension of extent n: (first element of the operand, or None for
    padding; length) of each run of the result."""
    seq: list[int | None] = [None] * max(pad.lo, 0)
    for i in range(n):
        seq += [i] + ([None] * pad.interior if i < n - 1 else [])
    seq += [None] * max(pad.hi, 0)
    seq = seq[max(-pad.lo, 0):len(seq) - max(-pad.hi, 0)]
    runs: list[tuple[int | None, int]] = []
    for e in seq:
        last = runs[-1] if runs else None
        if last is not None and (e is None) == (last[0] is None) and (e is None or e == last[0] + last[1]):
            runs[-1] = (last[0], last[1] + 1)
        else:
            runs.append((e, 1))
    return runs


def _element_offsets(t: TensorType) -> np.ndarray | None:
    """Where each element of t lies in its storage (in elements), or None for a tiled layout."""
    if t.effective_layout.tiles:
        return None
    return np.asarray(storage(t).layout.offsets()).reshape(t.shape)
