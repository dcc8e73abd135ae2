"""Topological orders of a pii graph's instructions (Act §6.1, §6.4, Appendix C.4).

``heuristic_order`` is the multi-buffer Sethi–Ullman extension: for every
on-chip buffer d, esun_d(y) = max(mem_d(y), min_i τ_d(x_i)) with
τ_d(x_i) = esun_d(x_i) + Σ_{j≠i} mem_d(x_j); operands are visited depth-first in
decreasing order of max_d τ_d(x_i) / |d|, the share of buffer d they need.

``topological_orders`` enumerates every order, the heuristic one first, skipping
orders whose interference graph contains that of an order that already failed
(CSP4 is monotone in the interference graph, §6.4.2) or equals one already tried
(the other constraint families do not depend on the order).
"""
from __future__ import annotations

import math
import time
from collections.abc import Iterator

from ..isel.extract import PiiGraph
from ..target import TargetDef
from .liveness import instruction_nodes, interference, live_ranges, producers


def _bytes(g: PiiGraph, v: int) -> int:
    t = g.nodes[v].type
    return math.prod(t.shape) * t.dtype.nbytes


def heuristic_order(g: PiiGraph, target: TargetDef) -> list[int]:
    instrs = instruction_nodes(g)
    operands = {y: sorted(p for p in producers(g, y) if g.nodes[p].is_instruction) for y in instrs}
    bufs = [b for b in target.buffers.values() if not b.is_hbm]

    def mem(d: str, v: int) -> int:
        return _bytes(g, v) if g.nodes[v].buffer == d else 0

    esun: dict[tuple[str, int], int] = {}
    for y in instrs:  # nodes are operands-first
        for b in bufs:
            xs = operands[y]
            tau = [esun[b.name, x] + sum(mem(b.name, z) for z in xs if z != x) for x in xs]
            esun[b.name, y] = max([mem(b.name, y)] + ([min(tau)] if tau else []))

    def need(x: int, siblings: list[int]) -> float:
        return max((esun[b.name, x] + sum(mem(b.name, z) for z in siblings if z != x)) / b.nbytes for b in bufs) \
            if bufs else 0.0

    order: list[int] = []
    done: set[int] = set()

    def visit(y: int) -> None:
        if y in done:
            return
        done.add(y)
        xs = operands[y]
        for x in sorted(xs, key=lambda x: (-need(x, xs), x)):
            visit(x)
        order.append(y)

    roots = [o for o in g.outputs if g.nodes[o].is_instruction]
    for o in g.outputs:  # outputs reached through identity instructions
        roots += sorted(p for p in producers(g, o) if g.nodes[p].is_instruction)
    for y in roots + instrs:  # instructions no output depends on still run
        visit(y)
    return order


def topological_orders(g: PiiGraph, target: TargetDef, failed: list[frozenset],
                       limit: int = 10_000, deadline: float | None = None) -> Iterator[list[int]]:
    """Every topological order (heuristic first), pruned by the interference graphs
    in ``failed`` (which the caller extends as orders fail), until ``limit`` orders or
    ``deadline`` (time.perf_counter()): when every order is pruned, none is yielded, and
    the caller cannot stop the search itself (a fuzz kernel spent 6 s past its limit here)."""
    first = heuristic_order(g, target)
    rank = {v: i for i, v in enumerate(first)}
    deps = {y: {p for p in producers(g, y) if g.nodes[p].is_instruction} for y in first}
    tried: set[frozenset] = set()
    count = 0
    unseen: list[list[int]] = []  # the first order, whose φ is only needed once a second is asked for

    def pruned(order: list[int]) -> bool:
        if count == 1 and not failed:
            unseen.append(order)
            return False
        while unseen:
            tried.add(interference(g, live_ranges(g, unseen.pop())))
        phi = interference(g, live_ranges(g, order))
        if phi in tried or any(f <= phi for f in failed):
            return True
        tried.add(phi)
        return False

    def extend(order: list[int], placed: set[int]) -> Iterator[list[int]]:
        if len(order) == len(first):
            yield list(order)
            return
        ready = sorted((v for v in first if v not in placed and deps[v] <= placed), key=rank.__getitem__)
        for v in ready:
            order.append(v)
            placed.add(v)
            yield from extend(order, placed)
            placed.discard(v)
            order.pop()

    for order in extend([], set()):
        count += 1
        if count > limit or (count > 1 and deadline is not None and time.perf_counter() > deadline):
            return
        if not pruned(order):
            yield order

