"""Rematerialization: a value computed again for each of its users.

A pii graph shares every value its e-class names once: Gemmini's preloaded ±I, used by
the matmuls of two tiles, is one ``preload_ws`` node. Its buffer holds one matrix, so when
two such values are each used twice, some order must keep both live at once and CSP4
fails in every order. Register allocators answer this by rematerialization; here, a
value in the overflowing buffer whose instruction reads only other buffers (so its
operands stay where they are) and does not write in place is computed again right
before each user after the first. The copies compute the same value from the same
operands, so the program still computes the kernel; it is one instruction longer per
copy and is costed as such.
"""
from __future__ import annotations

import dataclasses
from collections import Counter

from ..isel.extract import PiiGraph, PiiNode
from ..target import TargetDef


def rematerialized(target: TargetDef, g: PiiGraph, buffer: str) -> PiiGraph | None:
    """``g`` with each value of ``buffer`` that can be recomputed computed once per user;
    None when there is none."""
    uses = Counter(a for n in g.nodes for a in n.args) + Counter(g.outputs)
    again = {i for i, n in enumerate(g.nodes) if uses[i] > 1 and _recomputable(target, g, n, buffer)}
    if not again:
        return None
    nodes: list[PiiNode] = []
    at: dict[int, int] = {}  # old index -> new index of the node itself
    used: set[int] = set()
    for i, n in enumerate(g.nodes):
        args = []
        for a in n.args:
            if a in again and a in used:
                nodes.append(dataclasses.replace(g.nodes[a], args=tuple(at[x] for x in g.nodes[a].args)))
                args.append(len(nodes) - 1)
            else:
                used.add(a)
                args.append(at[a])
        nodes.append(dataclasses.replace(n, args=tuple(args)))
        at[i] = len(nodes) - 1
    return dataclasses.replace(g, nodes=nodes, outputs=[at[o] for o in g.outputs])


def _recomputable(target: TargetDef, g: PiiGraph, n: PiiNode, buffer: str) -> bool:
    return (n.is_instruction and n.buffer == buffer and target.instructions[n.op].alias is None
            and all(g.nodes[a].buffer != buffer for a in n.args))
