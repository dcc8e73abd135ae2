"""Storage, live ranges and the interference graph of an ordered pii graph (Act §6.2.1, CSP4).

Identity instructions (slice^H, concat^H) own no storage: a slice is a view of
its operand and a concatenation is its operands side by side. So a tensor's
storage stays live while any view of it, or any concatenation containing it, is
still read. Live ranges are in instruction positions 1..N: [0, N] for kernel
inputs ([0, b-1] for inputs the kernel donates: overwritten in place or on chip),
[0, b-1] for constants, [a, b-1] for instruction results, where a is the
defining position and b the last reading position (N for kernel outputs).
Undefined operands (``undef``: values the result does not depend on) need no
storage of their own.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..isel.extract import PiiGraph, PiiNode


def is_identity(n: PiiNode) -> bool:
    return n.kind == "pii" and n.op.endswith("^H")


def instruction_nodes(g: PiiGraph) -> list[int]:
    return [i for i, n in enumerate(g.nodes) if n.is_instruction]


def owners(g: PiiGraph) -> list[int]:
    """Nodes that own storage: kernel inputs, constants and instruction results."""
    return [i for i, n in enumerate(g.nodes) if n.kind in ("input", "const") or n.is_instruction]


def users(g: PiiGraph) -> list[list[int]]:
    out: list[list[int]] = [[] for _ in g.nodes]
    for i, n in enumerate(g.nodes):
        for a in dict.fromkeys(n.args):
            out[a].append(i)
    return out


def aliases(g: PiiGraph, use: list[list[int]], v: int) -> set[int]:
    """v and every identity node whose data includes v's (transitively)."""
    seen, stack = {v}, [v]
    while stack:
        for u in use[stack.pop()]:
            if is_identity(g.nodes[u]) and u not in seen:
                seen.add(u)
                stack.append(u)
    return seen


def producers(g: PiiGraph, v: int) -> set[int]:
    """The instruction (or leaf) nodes whose results v reads, looking through identities."""
    out, stack = set(), list(g.nodes[v].args)
    while stack:
        a = stack.pop()
        if is_identity(g.nodes[a]):
            stack.extend(g.nodes[a].args)
        else:
            out.add(a)
    return out


@dataclass(frozen=True)
class LiveRange:
    start: int
    end: int  # inclusive

    def overlaps(self, other: LiveRange) -> bool:
        return self.start <= other.end and other.start <= self.end


def live_ranges(g: PiiGraph, order: Sequence[int]) -> dict[int, LiveRange]:
    pos = {v: p for p, v in enumerate(order, start=1)}
    n_instr = len(order)
    use = users(g)
    outputs = set(g.outputs)
    out: dict[int, LiveRange] = {}
    for o in owners(g):
        node = g.nodes[o]
        start = pos.get(o, 0)
        group = aliases(g, use, o)
        if (node.kind in ("input", "const") and node.attrs.get("index") not in g.donated) or group & outputs:
            end = n_instr
        else:
            reads = [pos[u] for v in group for u in use[v] if g.nodes[u].is_instruction]
            end = max(reads, default=start + 1) - 1
        out[o] = LiveRange(start, max(start, end))
    return out


def interference(g: PiiGraph, ranges: dict[int, LiveRange]) -> frozenset[tuple[int, int]]:
    """Pairs of storage owners in the same buffer whose live ranges overlap (φ)."""
    by_buf: dict[str, list[int]] = {}
    for o in sorted(ranges):
        by_buf.setdefault(g.nodes[o].buffer, []).append(o)
    pairs = set()
    for nodes in by_buf.values():
        for i, a in enumerate(nodes):
            for b in nodes[i + 1:]:
                if ranges[a].overlaps(ranges[b]):
                    pairs.add((a, b))
    return frozenset(pairs)
