"""Topological orders of a pii graph's instructions (Act §6.1, §6.4, Appendix C.4).

``heuristic_order`` is the multi-buffer Sethi–Ullman extension: for every
on-chip buffer d, esun_d(y) is the larger of mem_d(y) and the need of evaluating y's
operands in the best order, max_k (esun_d(x_k) + Σ_{l<k} mem_d(x_l)) with the operands
in decreasing esun_d − mem_d; operands are visited depth-first in decreasing order of
max_d τ_d(x_i) / |d| with τ_d(x_i) = esun_d(x_i) + Σ_{j≠i} mem_d(x_j), the share of
buffer d they need. (Appendix C.4 writes esun_d(y) = max(mem_d(y), min_i τ_d(x_i)): that
is the need when the cheapest operand is evaluated last, and it forgets what the others
needed while they were evaluated, so a subtree that preloads Gemmini's one-matrix ws
had esun_ws 0 beside an operand with none, and its sibling preload was scheduled first.)

``topological_orders`` enumerates every order, the heuristic one first, skipping
orders whose interference graph contains that of an order that already failed
(CSP4 is monotone in the interference graph, §6.4.2) or equals one already tried
(the other constraint families do not depend on the order).
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator, Sequence
from functools import partial

from .. import budget
from ..isel.extract import PiiGraph
from ..target import TargetDef
from .liveness import OUTPUT, instruction_nodes, interference, is_identity, live_ranges, producers, whole_readers
from .share import in_place_waits


def _bytes(g: PiiGraph, v: int) -> int:
    t = g.nodes[v].type
    return math.prod(t.shape) * t.dtype.nbytes


SMALL_FAILURE = 3  # failed interference graphs of at most this many pairs are checked on every prefix
KNOWN_RUN = 256  # orders in a row whose interference graph is known (tried, or holding a failed one) after
# which the enumeration ends: orders that differ in their last instructions mostly share one, and a pii
# graph that allocates in no order enumerated its 10k orders for a second (gemmini_ab_plus_c_plus_d's
# ws overflow: 8k orders, 2 of them new)


def _need(xs: list[int], esun: Callable[[int], int], mem: Callable[[int], int]) -> int:
    """Sethi–Ullman's need of evaluating operands ``xs`` one after another, each held once
    computed: max_k (esun(x_k) + Σ_{l<k} mem(x_l)), least in decreasing esun − mem
    (Appel and Supowit's generalization; ties by node, so the result is the minimum)."""
    held, need = 0, 0
    for x in sorted(xs, key=lambda x: (mem(x) - esun(x), x)):
        need, held = max(need, esun(x) + held), held + mem(x)
    return need


def heuristic_order(g: PiiGraph, target: TargetDef, waits: dict[int, set[int]] | None = None) -> list[int]:
    """The multi-buffer Sethi–Ullman order (module doc), each instruction after its in-place
    waits (``share.in_place_waits``; computed here unless the caller has them)."""
    instrs = instruction_nodes(g)
    operands = {y: sorted(p for p in producers(g, y) if g.nodes[p].is_instruction) for y in instrs}
    bufs = [b for b in target.buffers.values() if not b.is_hbm]

    def mem(d: str, v: int) -> int:
        return _bytes(g, v) if g.nodes[v].buffer == d else 0

    esun: dict[tuple[str, int], int] = {}
    for y in instrs:  # nodes are operands-first
        for b in bufs:
            esun[b.name, y] = max(mem(b.name, y), _need(operands[y], lambda x: esun[b.name, x], partial(mem, b.name)))

    def need(x: int, siblings: list[int]) -> float:
        return max((esun[b.name, x] + sum(mem(b.name, z) for z in siblings if z != x)) / b.nbytes for b in bufs) \
            if bufs else 0.0

    order: list[int] = []
    done: set[int] = set()

    waits = in_place_waits(target, g) if waits is None else waits

    def visit(y: int) -> None:
        if y in done:
            return
        done.add(y)
        for x in sorted(waits.get(y, ())):  # readers of what y overwrites in place go first
            visit(x)
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
                       limit: int = 10_000, deadline: float | None = None,
                       doomed: set[tuple[int, ...]] | None = None, known_run: int = KNOWN_RUN,
                       waits: dict[int, set[int]] | None = None) -> Iterator[list[int]]:
    """Every topological order (heuristic first), pruned by the interference graphs
    in ``failed`` (which the caller extends as orders fail) and by the prefixes in
    ``doomed`` (likewise: orders beginning so fail, e.g. a buffer overflows at a step of
    the prefix; the enumeration backtracks past them at once instead of trying every
    ending of the prefix, which took seconds of interference graphs), until ``limit`` orders,
    ``known_run`` pruned orders in a row, or ``deadline`` (budget.now()): when every
    order is pruned, none is yielded, and the caller cannot stop the search itself (a fuzz
    kernel spent 6 s past its limit here). ``waits`` as in ``heuristic_order``."""
    waits = in_place_waits(target, g) if waits is None else waits
    first = heuristic_order(g, target, waits)
    rank = {v: i for i, v in enumerate(first)}
    deps = {y: {p for p in producers(g, y) if g.nodes[p].is_instruction} | waits.get(y, set()) for y in first}
    if any(rank[p] > rank[y] for y in first for p in deps[y]):
        return  # the waits close a cycle (``share`` never makes one): no order exists
    tried: set[frozenset] = set()
    count = 0
    unseen: list[list[int]] = []  # the first order, whose φ is only needed once a second is asked for

    def pruned(order: list[int]) -> bool:
        if count == 1 and not failed:
            unseen.append(order)
            return False
        while unseen:
            tried.add(interference(g, live_ranges(g, unseen.pop())))
            budget.spend("order", len(order))
        phi = interference(g, live_ranges(g, order))
        budget.spend("order", len(order))
        if phi in tried or any(f <= phi for f in failed):
            return True
        tried.add(phi)
        return False

    doomed = doomed if doomed is not None else set()

    def lost(order: list[int]) -> bool:  # does the order begin with a doomed prefix?
        return any(tuple(order[:n]) in doomed for n in {len(p) for p in doomed} if n <= len(order))

    holders = whole_readers(g)

    def held(v: int, placed: set[int]) -> bool:  # is all of v live past the prefix, whatever follows?
        return v in placed and any(r not in placed for r in holders.get(v, ()))

    def certain(placed: set[int]) -> bool:
        """Does a small failed interference graph hold already, whatever the rest of the
        order (each pair made and still to be read whole)? Then no ending can help: the
        enumeration backtracks instead of computing φ for each ending (seconds per pii graph)."""
        return any(len(f) <= SMALL_FAILURE and all(held(a, placed) and held(b, placed) for a, b in f) for f in failed)

    def extend(order: list[int], placed: set[int]) -> Iterator[list[int]]:
        if failed and len(order) < len(first) and certain(placed):
            return
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
            if doomed and lost(order):
                return  # every ending of this prefix fails alike

    run = 0  # pruned orders since the last one yielded
    for order in extend([], set()):
        count += 1
        if count > limit or run >= known_run or (count > 1 and deadline is not None and budget.now() > deadline):
            return
        if pruned(order):
            run += 1
        else:
            run = 0
            yield order


def inseparable(g: PiiGraph, a: int, b: int) -> bool:
    """Whether storage owners a and b are live together in every order: each is part of an
    output, or is read whole by an instruction that depends on the other (a read of a slice
    keeps only the slice live, which is another value of the live ranges: not claimed)."""
    readers = _readers(g)
    holders = whole_readers(g)

    def can_wait(first: int, then: int) -> bool:  # may all of ``first`` die before ``then`` is made?
        held = holders.get(first, set())
        return OUTPUT not in held and not (held & (_descendants(then, readers) | {then}))

    return not can_wait(a, b) and not can_wait(b, a)


def _readers(g: PiiGraph) -> dict[int, set[int]]:
    """Value -> the instructions that read it (through identities: ``producers``)."""
    out: dict[int, set[int]] = {}
    for y in instruction_nodes(g):
        for p in producers(g, y):
            out.setdefault(p, set()).add(y)
    return out


def _output_owners(g: PiiGraph) -> set[int]:
    return {p for o in g.outputs for p in ([o] if not is_identity(g.nodes[o]) else producers(g, o))}


def serialized(g: PiiGraph, order: list[int], live: Sequence[int], after: dict[int, set[int]]) -> list[int] | None:
    """A new order in which the values ``live`` together where a buffer overflowed are no
    longer so: the one made last waits until every reader of the others has run (edges
    added to ``after``: instruction -> instructions that must precede it, kept across
    calls so that earlier repairs hold). The order is otherwise the old one's (a
    topological sort taking the earliest of the old positions). None when no value of
    ``live`` can wait so (a reader of another depends on it, or another is an output)."""
    pos = {v: i for i, v in enumerate(order)}
    readers = _readers(g)
    outputs = _output_owners(g)
    for b in sorted((v for v in live if v in pos), key=pos.__getitem__, reverse=True):
        others = [a for a in live if a != b]
        if any(a in outputs for a in others):
            continue
        wait = set().union(*(readers.get(a, set()) for a in others)) - {b}
        if not wait or wait & _descendants(b, readers):
            continue
        after.setdefault(b, set()).update(wait)
        return _sorted(order, g, after)
    return None


def _descendants(v: int, readers: dict[int, set[int]]) -> set[int]:
    out, stack = set(), [v]
    while stack:
        for r in readers.get(stack.pop(), ()):
            if r not in out:
                out.add(r)
                stack.append(r)
    return out


def _sorted(order: list[int], g: PiiGraph, after: dict[int, set[int]]) -> list[int] | None:
    """Kahn's topological sort of ``order``'s instructions under their operands and
    ``after``, the earliest old position first; None on a cycle."""
    pos = {v: i for i, v in enumerate(order)}
    preds = {y: {p for p in producers(g, y) if p in pos} | (after.get(y, set()) & pos.keys()) for y in order}
    succs: dict[int, list[int]] = {y: [] for y in order}
    for y, ps in preds.items():
        for p in ps:
            succs[p].append(y)
    waiting = {y: len(ps) for y, ps in preds.items()}
    ready = [pos[y] for y in order if waiting[y] == 0]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:
        y = order[heapq.heappop(ready)]
        out.append(y)
        for z in succs[y]:
            waiting[z] -= 1
            if waiting[z] == 0:
                heapq.heappush(ready, pos[z])
    return out if len(out) == len(order) else None
