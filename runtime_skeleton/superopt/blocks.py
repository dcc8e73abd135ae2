"""A kernel whose result is a concatenation, cut into its blocks: one program each, in sequence.

When each operand of the root ``concatenate`` fills a contiguous run of the output's
bytes, in its own layout's order (along the outermost dimension of a row-major
output, for instance), the operand's cone is a kernel of its own that writes its
block in place: the blocks' programs run one after the other (superopt.sequence), each
writing the output at its block's byte offset. Each block is smaller than the whole
kernel, so phase 1 saturates it sooner, and a block that copies part of an input
(``concat(x[8:16], x[0:8])``) need not be found among the whole kernel's view graphs.
A value two blocks use is computed by each.
"""
from __future__ import annotations

import numpy as np

from ..ir.graph import Module
from ..ir.types import TensorType
from ..layout.flatten import storage
from .outputs import cone_kernel
from .sequence import Part, Plan


def block_plan(module: Module) -> Plan | None:
    """The root concatenation's operands as parts writing their blocks of the output, or
    None when the root is no concatenation of two blocks or more, or a block's bytes are
    not a contiguous run of the output's in the block's own order."""
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


def _element_offsets(t: TensorType) -> np.ndarray | None:
    """Where each element of t lies in its storage (in elements), or None for a tiled layout."""
    if t.effective_layout.tiles:
        return None
    return np.asarray(storage(t).layout.offsets()).reshape(t.shape)
