"""A pii graph's views simplified before allocation.

Extraction may name a region as a slice of a concatenation longer than the region
(``slice^H(concat^H(a, b, c))`` reading only a and b): equal bytes, but the concatenation
ties c's storage to theirs (CSP2), and when c is a constant or an input that an
instruction overwriting the region in place must not touch, no allocation exists (a
Gemmini column-tile store's ``old`` operand reached the constant section so). The slice
of a concatenation is the concatenation of the parts it covers, each sliced where the
region cuts it; parts nothing reads any more are dropped.
"""
from __future__ import annotations

import dataclasses

from ..ir.attrs import SliceDim
from ..ir.types import TensorType
from ..isel.axioms import count
from ..isel.extract import PiiGraph, PiiNode


def simplified(g: PiiGraph) -> PiiGraph:
    """``g`` with every slice^H of a concat^H replaced by the parts it covers (``g`` itself
    when there is none)."""
    if not any(_foldable(g.nodes, n) for n in g.nodes):
        return g
    nodes: list[PiiNode] = []
    at: dict[int, int] = {}
    for i, n in enumerate(g.nodes):
        n = dataclasses.replace(n, args=tuple(at[a] for a in n.args))
        at[i] = _fold(nodes, n) if _foldable(nodes, n) else _append(nodes, n)
    return _live(dataclasses.replace(g, nodes=nodes, outputs=[at[o] for o in g.outputs]))


def _foldable(nodes: list[PiiNode], n: PiiNode) -> bool:
    """A unit-stride slice^H, along the concatenated dimension, of a concat^H."""
    if n.kind != "pii" or n.op != "slice^H":
        return False
    (x,) = n.args
    cat = nodes[x]
    if cat.kind != "pii" or cat.op != "concat^H":
        return False
    (d,) = cat.attrs["dimensions"]
    return n.attrs["slice"][d].stride == 1


def _append(nodes: list[PiiNode], n: PiiNode) -> int:
    nodes.append(n)
    return len(nodes) - 1


def _fold(nodes: list[PiiNode], n: PiiNode) -> int:
    cat = nodes[n.args[0]]
    (d,) = cat.attrs["dimensions"]
    spec: tuple[SliceDim, ...] = n.attrs["slice"]
    lo, hi = spec[d].start, spec[d].limit
    parts, base = [], 0
    for p in cat.args:
        t = nodes[p].type
        size = t.shape[d]
        a, b = max(lo, base), min(hi, base + size)
        if a < b:
            local = tuple(SliceDim(a - base, b - base, 1) if k == d else s for k, s in enumerate(spec))
            whole = all(s == SliceDim(0, m, 1) for s, m in zip(local, t.shape))
            if whole:
                parts.append(p)
            else:
                parts.append(_append(nodes, dataclasses.replace(
                    n, type=TensorType(t.dtype, tuple(map(count, local))), attrs={**n.attrs, "slice": local},
                    args=(p,))))
        base += size
    if len(parts) == 1:
        return parts[0]
    return _append(nodes, dataclasses.replace(cat, type=n.type, args=tuple(parts)))


def _live(g: PiiGraph) -> PiiGraph:
    """``g`` without the views, constants and undefined values nothing reads (instructions
    still run, and inputs are still declared)."""
    keep = set(g.outputs) | {i for i, n in enumerate(g.nodes) if n.is_instruction or n.kind == "input"}
    for i in range(len(g.nodes) - 1, -1, -1):
        if i in keep:
            keep.update(g.nodes[i].args)
    at: dict[int, int] = {}
    nodes = []
    for i, n in enumerate(g.nodes):
        if i in keep:
            at[i] = len(nodes)
            nodes.append(dataclasses.replace(n, args=tuple(at[a] for a in n.args)))
    return dataclasses.replace(g, nodes=nodes, outputs=[at[o] for o in g.outputs])
