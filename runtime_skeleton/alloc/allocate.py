"""Phase 2 (Act §6): for each order of a pii graph, its addressing attributes β.

``allocate`` checks one order's capacity and CSP3's views first (fast, with the reason),
then places storage first fit (construct.py, checked against CSP1–CSP4 by check.py),
and where that finds nothing solves the constraint problem in CP-SAT (cpsat.py, which
names the groups that conflict). ``phase2`` tries orders in turn.
"""
from __future__ import annotations

import time
from itertools import groupby

from .. import budget
from ..errors import ActgenError
from ..isel.extract import PiiGraph
from ..target import TargetDef
from .check import violations
from .construct import construct, tied_overlap
from .liveness import LiveRange, interference, is_identity, live_ranges
from .order import inseparable, serialized, topological_orders
from .share import in_place_waits
from .storage import OUTPUTS_APART, Allocation, AllocationFailed, SolveOptions, extent

__all__ = ["Allocation", "AllocationFailed", "SolveOptions", "allocate", "phase2"]


def _peak(g: PiiGraph, target: TargetDef, ranges: dict[int, LiveRange]) -> tuple[str, int, list[int]] | None:
    """Fast capacity check of one-dimensional buffers: live tensors that cannot fit at all,
    the step where they are live, and which they are. What is live at step t depends only on the order's
    first t instructions (a value is live there when it is made by then and some reader
    is not), so every order beginning with those overflows alike."""
    for name, buf in target.buffers.items():
        if len(buf.access_shape) != 1:
            continue
        mine = [o for o in ranges if g.nodes[o].buffer == name]
        rank = {o: i for i, o in enumerate(mine)}
        live: list[int] = []
        for t, starting in groupby(sorted(mine, key=lambda o: (ranges[o].start, rank[o])), lambda o: ranges[o].start):
            live = sorted([o for o in live if ranges[o].end >= t] + list(starting), key=rank.__getitem__)
            need = sum(extent(g, target, o)[0] for o in live)
            if need > buf.access_shape[0]:
                return (f"buffer {name} overflows: {need} of {buf.access_shape[0]} rows live at step {t} "
                        f"({', '.join(f'%{o}' for o in live)})"), t, live
    return None


def _viewed_output(g: PiiGraph, target: TargetDef) -> str | None:
    """Fast check of CSP3's outputs apart (a piece's, Module.output_written): an HBM output
    that identity instructions make of an input's storage (but the one it takes over) or
    of the constant section lies there, so no allocation exists."""
    if not g.output_written:
        return None
    hbm = target.hbm.name
    for k, o in enumerate(g.outputs):
        stack, seen = [o], set()
        while stack:
            v = stack.pop()
            n = g.nodes[v]
            if v in seen or n.buffer != hbm:
                continue
            seen.add(v)
            if n.kind == "const" or (n.kind == "input" and g.alias.get(k) != n.attrs["index"]):
                what = "the constant section" if n.kind == "const" else f"input {n.attrs['index']}"
                return f"output {k} is a view of {what} (%{v}): no instruction writes it"
            if is_identity(n):
                stack += n.args
    return None


def allocate(target: TargetDef, g: PiiGraph, order: list[int], opts: SolveOptions | None = None,
             explain: bool = True) -> Allocation:
    """Solve CSP1–CSP4 for one order; AllocationFailed says which groups conflict (all
    of them with ``explain``, else at least the families that decide whether the order
    is to blame)."""
    opts = opts or SolveOptions()
    t0 = time.perf_counter()
    ranges = {o: r for o, r in live_ranges(g, order).items() if g.nodes[o].kind != "undef"}
    peak = _peak(g, target, ranges)
    if peak:
        message, step, live = peak
        raise AllocationFailed(f"CSP4: {message}", [("CSP4", message.split()[1])], interference(g, ranges),
                               tuple(order[:step]), tuple(live))
    pair = tied_overlap(target, g, ranges)
    if pair:
        a, b = pair
        buf = g.nodes[a].buffer
        always = inseparable(g, a, b)  # then no order helps
        raise AllocationFailed(f"CSP4: %{a} and %{b} are live together {'in every order ' if always else ''}in "
                               f"{buf} bytes that CSP1-CSP3 make overlap", [("CSP4", buf)],
                               None if always else frozenset({pair}), live=pair)
    viewed = _viewed_output(g, target)
    if viewed:
        raise AllocationFailed(f"CSP3: {viewed}", [OUTPUTS_APART])
    if opts.first_fit:
        budget.spend("alloc", len(order))
        found = construct(target, g, order, ranges)
        if found is not None:
            found.seconds = time.perf_counter() - t0
            return found
    from .cpsat import solve  # ortools is imported only for the allocations first fit does not find

    found = solve(target, g, order, ranges, opts, explain)
    wrong = violations(target, g, ranges, found)
    if wrong:  # the CP-SAT model and the verifier disagree: never use such an allocation
        raise ActgenError("CP-SAT's allocation breaks " + "; ".join(f"{fam}: {what}" for fam, what in wrong[:3])
                          + " (a bug in actgen's CP-SAT model or in alloc/check.py)")
    found.seconds = time.perf_counter() - t0
    return found


def phase2(target: TargetDef, g: PiiGraph, opts: SolveOptions | None = None,
           times: dict[str, float] | None = None) -> Allocation:
    """Orders in turn, heuristic first and pruned by failed interference graphs
    (§6.4); the first allocation found. AllocationFailed when none works. An order in
    which a buffer overflows is next repaired (``order.serialized``: the value made last
    waits for the others' readers) before the enumeration goes on: the enumeration
    changes the last instructions first and took seconds to reach an early overflow.
    ``times`` accumulates seconds spent on "ordering" and on "allocation" (constraints and CP-SAT)."""
    opts = opts or SolveOptions()
    times = times if times is not None else {}
    failed: list[frozenset] = []
    doomed: set[tuple[int, ...]] = set()
    last: AllocationFailed | None = None
    tried = 0
    stop = budget.after(opts.budget)
    waits = in_place_waits(target, g)
    orders = topological_orders(g, target, failed, deadline=stop, doomed=doomed, waits=waits)
    after = {w: set(rs) for w, rs in waits.items()}  # the repairs' edges, on top of the waits
    repaired: list[int] | None = None
    while True:
        t = time.perf_counter()
        order, repaired = repaired or next(orders, None), None
        times["ordering"] = times.get("ordering", 0.0) + time.perf_counter() - t
        if order is None:
            break
        tried += 1
        t = time.perf_counter()
        try:
            alloc = allocate(target, g, order, opts, explain=tried == 1)
            alloc.orders_tried = tried
            return alloc
        except AllocationFailed as err:
            last = err
            if err.order_independent:
                break
            failed.append(err.phi)
            if err.prefix is not None:
                doomed.add(err.prefix)
            if err.live:
                repaired = serialized(g, order, err.live, after)
        finally:
            times["allocation"] = times.get("allocation", 0.0) + time.perf_counter() - t
        if tried >= opts.max_orders or budget.now() > stop:
            break
    if last is None:
        raise AllocationFailed("the pii graph has no order of its instructions (none, or a cycle of in-place waits)")
    raise AllocationFailed(f"{last.message} (after {tried} topological order{'s' if tried != 1 else ''})",
                           last.core, last.phi)
