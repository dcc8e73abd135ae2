"""Storage, live ranges and the interference graph of an ordered pii graph (Act §6.2.1, CSP4).

Identity instructions (slice^H, concat^H) own no storage: a slice is a view of
its operand and a concatenation is its operands side by side. So a tensor's
storage stays live while it, or any concatenation containing it, is still read;
a slice of it read later keeps only its own bytes live (when slices read after the
tensor's end overlap, the whole tensor stays live instead). That is what lets an
instruction overwrite one part of a result in place (a read-modify-write store of
the next column tile into an output row) while another part is still to be read. Live ranges are in instruction positions 1..N: [0, N] for kernel
inputs ([0, b-1] for inputs the kernel donates: overwritten in place or on chip),
[0, b-1] for constants, [a, b-1] for instruction results, where a is the
defining position and b the last reading position (N for kernel outputs).
Undefined operands (``undef``: values the result does not depend on) need no
storage of their own.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .. import budget
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


OUTPUT = -1  # what keeps an output live: the program's end


def whole_readers(g: PiiGraph) -> dict[int, set[int]]:
    """For each storage owner, the instructions that keep all of it live until they run
    (reading it through identities but a slice, which keeps only its own bytes live, as
    ``live_ranges`` counts them), and OUTPUT for a part of an output."""
    out: dict[int, set[int]] = {}

    def read(x: int, by: int) -> None:
        stack = [x]
        while stack:
            v = stack.pop()
            n = g.nodes[v]
            if n.kind == "pii" and n.op == "slice^H" and _sliced_owner(g, v) is not None:
                continue
            if is_identity(n):
                stack.extend(n.args)
            else:
                out.setdefault(v, set()).add(by)

    for y, n in enumerate(g.nodes):
        if n.is_instruction:
            for a in dict.fromkeys(n.args):
                read(a, y)
    for o in g.outputs:
        read(o, OUTPUT)
    return out


@dataclass(frozen=True)
class LiveRange:
    start: int
    end: int  # inclusive

    def overlaps(self, other: LiveRange) -> bool:
        return self.start <= other.end and other.start <= self.end


def live_ranges(g: PiiGraph, order: Sequence[int]) -> dict[int, LiveRange]:
    """Live range of each storage owner, and of each slice of an owner that is read after
    the rest of the owner is dead (the part of a result a later instruction overwrites in
    place may be reused while another part is still read): keyed by the owner's or the
    slice's node (a slice's storage is its bytes of the owner's, at the slice's address)."""
    pos = {v: p for p, v in enumerate(order, start=1)}
    n_instr = len(order)
    need: dict[int, int] = {}  # owner -> last position its whole storage is needed
    partial: dict[int, int] = {}  # slice of an owner -> last position its bytes are needed

    def read(x: int, until: int) -> None:
        n = g.nodes[x]
        if n.kind == "pii" and n.op == "slice^H" and _sliced_owner(g, x) is not None:
            partial[x] = max(partial.get(x, until), until)
        elif is_identity(n):
            for a in n.args:
                read(a, until)
        else:
            need[x] = max(need.get(x, until), until)

    for v in order:
        for a in dict.fromkeys(g.nodes[v].args):
            read(a, pos[v] - 1)
    for o in g.outputs:
        read(o, n_instr)
    out: dict[int, LiveRange] = {}
    for o in owners(g):
        node = g.nodes[o]
        start = pos.get(o, 0)
        end = n_instr if node.kind in ("input", "const") and node.attrs.get("index") not in g.donated \
            else need.get(o, start)
        out[o] = LiveRange(start, max(start, end))
    by_owner: dict[int, list[int]] = {}
    for x, until in partial.items():
        o = _sliced_owner(g, x)[0]
        if until > out[o].end:
            by_owner.setdefault(o, []).append(x)
    for o, xs in by_owner.items():
        boxes = [_sliced_owner(g, x)[1] for x in xs]
        if any(_meet(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:]):
            out[o] = LiveRange(out[o].start, max(partial[x] for x in xs))  # overlapping slices: keep it whole
            continue
        for x in xs:
            out[x] = LiveRange(out[o].end + 1, partial[x])
    return out


def _sliced_owner(g: PiiGraph, x: int) -> tuple[int, tuple[tuple[int, int], ...]] | None:
    """For a chain of unit-stride slice^H down to a storage owner: the owner and the
    chain's box in the owner's indices ((start, stop) per dimension); else None."""
    box = None
    while g.nodes[x].kind == "pii" and g.nodes[x].op == "slice^H":
        spec = g.nodes[x].attrs["slice"]
        if any(d.stride != 1 for d in spec):
            return None
        here = tuple((d.start, d.limit) for d in spec)
        box = here if box is None else tuple((a + s, a + t) for (a, _), (s, t) in zip(here, box))
        (x,) = g.nodes[x].args
    if is_identity(g.nodes[x]) or g.nodes[x].kind == "undef" or box is None:
        return None
    return x, box


def _meet(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> bool:
    return all(s < v and u < t for (s, t), (u, v) in zip(a, b))


def interference(g: PiiGraph, ranges: dict[int, LiveRange]) -> frozenset[tuple[int, int]]:
    """Pairs of storage owners in the same buffer whose live ranges overlap (φ): a sweep
    over the ranges by start, so only pairs live together are compared."""
    by_buf: dict[str, list[int]] = {}
    for o in sorted(ranges, key=lambda o: (ranges[o].start, o)):
        by_buf.setdefault(g.nodes[o].buffer, []).append(o)
    pairs = set()
    for nodes in by_buf.values():
        live: list[int] = []
        for b in nodes:
            live = [a for a in live if ranges[a].end >= ranges[b].start]
            pairs.update((min(a, b), max(a, b)) for a in live)
            live.append(b)
    budget.spend("pair", len(pairs))  # quadratic in the values live together: phase 2's enumeration counts it
    return frozenset(pairs)
