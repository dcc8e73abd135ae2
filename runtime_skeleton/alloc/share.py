"""Sharing a value with the instruction that overwrites it in place.

Extraction gives an operand that an instruction overwrites in place (Gemmini's
``mvin_acc_add`` into an accumulator row) storage of its own, apart from the value's
other users (``extract.in_place_tag``): they still need the old value, so the value is
computed twice, once for them and once to be overwritten. When those users can all
run before the overwriting instruction, one computation serves both: the other users
read the value, then the instruction updates it in place (a store of a partial sum,
then the next addition into the same row). ``shared_in_place`` merges such copies;
``in_place_waits`` are the order edges that sharing needs, which every order of the
graph must keep (and which phase 2's allocation checks: a read after the overwrite
makes the two values live together in one place).
"""
from __future__ import annotations

import dataclasses
import heapq

from .. import budget
from ..isel.extract import PiiGraph
from ..target import TargetDef
from .liveness import users


def in_place_waits(target: TargetDef, g: PiiGraph) -> dict[int, set[int]]:
    """Instruction -> the instructions that must run before it: the other readers of the
    operand it overwrites in place that do not depend on it (none in a graph as extracted,
    where that operand is read by the overwriting instruction alone)."""
    readers = users(g)
    out: dict[int, set[int]] = {}
    for w, n in enumerate(g.nodes):
        x = _overwritten(target, g, w)
        if x is None or len(readers[x]) < 2:
            continue
        after = _descendants(readers, w)
        others = {r for r in readers[x] if r not in after and g.nodes[r].is_instruction}
        if others:
            out[w] = others
    return out


def shared_in_place(target: TargetDef, g: PiiGraph) -> PiiGraph | None:
    """``g`` with each operand overwritten in place replaced by an equal value that
    other instructions read, where those readers can all run first; the computations
    nothing needs any more are dropped. None when there is nothing to share."""
    nodes = list(g.nodes)
    readers = [set(rs) for rs in users(g)]
    later = [set(rs) for rs in readers]  # what must run after each node: its readers, and the waits
    for w, rs in in_place_waits(target, g).items():
        for r in rs:
            later[r].add(w)
    outputs = set(g.outputs)
    overwritten = {x for w in range(len(nodes)) if (x := _overwritten(target, g, w)) is not None}
    values: dict[tuple, list[int]] = {}  # (e-class, buffer, type) -> the instructions computing it
    for v, n in enumerate(nodes):
        if n.is_instruction:
            values.setdefault((n.eclass, n.buffer, n.type), []).append(v)
    changed = False
    for w, n in enumerate(nodes):
        x = _overwritten(target, g, w)
        if x is None or readers[x] != {w} or x in outputs:
            continue
        m = nodes[x]
        shared = [r for r in values.get((m.eclass, m.buffer, m.type), ())
                  if r != x and readers[r] and r not in overwritten and r not in outputs]
        if not shared:
            continue
        # w may read r as another operand too: an instruction reads its operands before it writes
        after = _descendants(later, w)
        budget.spend("order", len(after))
        r = next((r for r in shared if r not in after
                  and all(u == w or (nodes[u].is_instruction and u not in after) for u in readers[r])), None)
        if r is None:
            continue
        a = target.instructions[n.op].alias
        nodes[w] = dataclasses.replace(n, args=n.args[:a] + (r,) + n.args[a + 1:])
        readers[x].discard(w)
        later[x].discard(w)
        for u in readers[r]:
            later[u].add(w)  # the other readers run first
        readers[r].add(w)
        later[r].add(w)
        overwritten = (overwritten - {x}) | {r}
        changed = True
    return _reachable(dataclasses.replace(g, nodes=nodes), g) if changed else None


def _overwritten(target: TargetDef, g: PiiGraph, w: int) -> int | None:
    n = g.nodes[w]
    if not n.is_instruction:
        return None
    a = target.instructions[n.op].alias
    return None if a is None else n.args[a]


def _descendants(later: list[set[int]], v: int) -> set[int]:
    out, stack = {v}, [v]
    while stack:
        for u in later[stack.pop()]:
            if u not in out:
                out.add(u)
                stack.append(u)
    return out


def _reachable(g: PiiGraph, old: PiiGraph) -> PiiGraph:
    """``g`` without what its outputs no longer read (what ``old``'s outputs read and
    ``g``'s do not), operands before users: a shared value may have come after the
    instruction that now reads it (Kahn's sort, the earliest old position first)."""
    dead = _read(old) - _read(g)
    keep = [v for v in range(len(g.nodes)) if v not in dead]
    waiting = {v: len(set(g.nodes[v].args)) for v in keep}
    readers = users(g)
    ready = [v for v in keep if waiting[v] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        v = heapq.heappop(ready)
        order.append(v)
        for u in readers[v]:
            if u in waiting:
                waiting[u] -= 1
                if waiting[u] == 0:
                    heapq.heappush(ready, u)
    at = {v: i for i, v in enumerate(order)}
    nodes = [dataclasses.replace(g.nodes[v], args=tuple(at[a] for a in g.nodes[v].args)) for v in order]
    return dataclasses.replace(g, nodes=nodes, outputs=[at[o] for o in g.outputs])


def _read(g: PiiGraph) -> set[int]:
    """The nodes g's outputs read, directly or not."""
    keep, stack = set(g.outputs), list(g.outputs)
    while stack:
        for a in g.nodes[stack.pop()].args:
            if a not in keep:
                keep.add(a)
                stack.append(a)
    return keep
