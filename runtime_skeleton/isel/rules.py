"""Rewrite rules over the typed e-graph and the saturation driver.

A rule matches at one e-node (its LHS root) of a snapshot and returns terms
equal to that node's e-class; the driver adds them and unions. Rules read
operand shapes and dtypes through the View, so preconditions are plain Python.
``produces`` lists the operators a rule's right-hand sides can contain: the
per-target filter of Act Appendix C.2 keeps only rules that can lead to an
operator some instruction's semantics uses.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

from .. import budget
from ..ir.types import TensorType
from .egraph import ClassId
from .tensor_egraph import TensorEGraph
from .terms import ENode, Term, View

Applier = Callable[[View, ClassId, ENode], Iterable[Term]]
Admit = Callable[[View, "Term | Class"], bool]  # may a rule's result enter the e-graph?
ANY = "*"  # a root that matches once per e-class, whatever its nodes


@dataclass(frozen=True)
class Rule:
    name: str
    roots: frozenset[str]  # operators of the e-nodes this rule matches at; ANY: every e-class
    produces: frozenset[str]  # operators its right-hand sides may contain
    apply: Applier = field(compare=False)
    exact: bool = True  # holds for every shape (and is proved with z3 where stated)
    doc: str = ""
    expansive: bool = False  # grows the e-graph by a factor (splits, identity matmuls): phase 1's cheap-first
    # schedule holds such rules back (phase1.is_expansive), its lowering-first schedule only the splits (is_split)
    watch_operands: int = 0  # 1 or 2: fire again when a class that many levels below has gained nodes
    # the e-class types it can match at (None: any); asked once per class and type, before anything else
    accepts: Callable[[TensorType], bool] | None = field(default=None, compare=False)


def rule(name: str, roots: Iterable[str], produces: Iterable[str], *, exact: bool = True,
         doc: str = "", expansive: bool = False, watch_operands: int = 0) -> Callable[[Applier], Rule]:
    """Decorator: ``@rule("dot-comm", {"dot"}, {"dot", "transpose"})``."""

    def wrap(fn: Applier) -> Rule:
        return Rule(name, frozenset(roots), frozenset(produces), fn, exact, doc or (fn.__doc__ or "").strip(),
                    expansive, watch_operands)

    return wrap


def filter_rules(rules: Iterable[Rule], target_ops: set[str]) -> list[Rule]:
    """Act Appendix C.2: keep a rule when what it produces can lead to an operator
    the instructions use; iterate, since a rule producing B is useful when some
    kept rule consumes B."""
    rules = list(rules)
    useful = set(target_ops)
    kept: list[Rule] = []
    changed = True
    while changed:
        changed = False
        for r in rules:
            # An op-preserving rule (a split, commutativity) matters only for a useful op;
            # a converting rule B -> C matters when C is useful, and then makes B useful.
            preserving = r.roots & r.produces
            if r not in kept and (preserving & useful if preserving else r.produces & useful):
                kept.append(r)
                if not r.roots - {ANY} <= useful:
                    useful |= r.roots - {ANY}
                    changed = True
    return [r for r in rules if r in kept]


_WEIGHTS: WeakKeyDictionary = WeakKeyDictionary()  # per snapshot: class -> (its nodes, its operands' nodes)


def _signature(view: View, n: ENode, depth: int) -> tuple:
    """How many nodes the classes below ``n`` have (its operands; with ``depth`` 2 also
    theirs, summed per operand): a rule that reads them fires again when this changes."""
    if depth == 1:
        return tuple(len(view.nodes(k)) for k in n.children)
    weights = _WEIGHTS.setdefault(view, {})
    out = []
    for k in n.children:
        if k not in weights:
            nodes = view.nodes(k)
            weights[k] = (len(nodes), sum(len(view.nodes(x)) for m in nodes for x in m.children))
        out.append(weights[k])
    return tuple(out)


@dataclass
class SaturationStats:
    iterations: int = 0
    nodes: int = 0
    classes: int = 0
    seconds: float = 0.0
    saturated: bool = False
    capped: bool = False  # the last run_rules stopped at its work_cap
    per_rule: dict[str, int] = field(default_factory=dict)


def run_rules(eg: TensorEGraph, rules: list[Rule], *, iterations: int, max_nodes: int,
              deadline: float | None = None, stats: SaturationStats | None = None,
              max_matches: int = 1000, admit: Admit | None = None, work_cap: int | None = None) -> SaturationStats:
    """Apply every rule at every matching node, ``iterations`` times or until
    nothing changes (saturation), the node limit, or the deadline. A rule adds at
    most ``max_matches`` results per iteration (egg's backoff, simplified): the
    rest wait for the next iteration, so no single rule floods the e-graph, and there the
    rule starts past the class where its budget ran out (classes in id order, round robin):
    otherwise the first classes, which keep gaining nodes, take every iteration's
    budget and the last ones starve (AMX K4's rows past the third never got their
    vbroadcastss; with the round robin the cheap rules alone map it at 12.5k e-nodes). A rule fires
    once per (class, node); one that reads the nodes below (``watch_operands`` levels
    deep) fires again when one of those classes has gained nodes since. ``admit``
    drops results that can never lead to an instruction (see phase1.signature_filter).
    ``work_cap``: e-nodes (counted as they are added) past which the iteration stops where
    it is, like the deadline (the compiler's patience; ``max_nodes`` is checked between
    iterations only)."""
    stats = stats or SaturationStats()
    stats.capped = False
    t0 = time.perf_counter()
    view = eg.view
    by_root: dict[str, list[Rule]] = {}
    for r in rules:
        for op in r.roots:
            by_root.setdefault(op, []).append(r)
    fitting: dict[TensorType, dict[str, list[Rule]]] = {}  # class type -> root -> rules that may match there

    def candidates(t: TensorType) -> dict[str, list[Rule]]:
        if t not in fitting:
            fitting[t] = {op: [r for r in rs if r.accepts is None or r.accepts(t)] for op, rs in by_root.items()}
        return fitting[t]

    for _ in range(iterations):
        before = (view.node_count(), len(list(view)))
        allowance = dict.fromkeys((r.name for r in rules), max_matches)
        out_of_time = False
        resume = eg.resume
        eg.resume = {name: c for name, c in resume.items() if name not in allowance}  # other rule sets' (closures)
        ids = sorted(view)
        last = max(resume.values(), default=None)
        for lap, c in [(0, c) for c in ids] + [(1, c) for c in ids if last is not None and c <= last]:
            nodes = view.nodes(c)
            fit = candidates(nodes[0].type)
            for j, n in enumerate(nodes):
                # checked per node: the patterns of one large class can take seconds
                capped = work_cap is not None and before[0] + eg.pending > work_cap
                if capped or (deadline is not None and budget.now() + eg.flush_cost() > deadline):
                    out_of_time, stats.capped = True, capped
                    break
                signatures: dict[int, tuple] = {}  # per depth: shared by the rules watching that deep
                for r in fit.get(n.op, []) + (fit.get(ANY, []) if j == 0 else []):
                    if (r.name in resume and c <= resume[r.name]) != (lap == 1):
                        continue  # lap 0 past where its budget ran out, lap 1 up to there
                    key = (r.name, c, n)
                    if r.watch_operands:
                        if r.watch_operands not in signatures:
                            signatures[r.watch_operands] = _signature(view, n, r.watch_operands)
                        key += (signatures[r.watch_operands],)
                    if key in eg.fired or allowance[r.name] <= 0:
                        continue
                    eg.fired.add(key)
                    budget.spend("apply")
                    view.room = max_nodes - (before[0] + eg.pending)
                    if deadline is not None:  # and what sending them to egglog costs in time
                        view.room = min(view.room, (deadline - budget.now() - eg.flush_cost()) / budget.COST["node"])
                    for t in r.apply(view, c, n):
                        if admit is not None and not admit(view, t):
                            continue
                        eg.union(c, t)
                        allowance[r.name] -= 1
                        if allowance[r.name] == 0:
                            eg.resume[r.name] = c
                        stats.per_rule[r.name] = stats.per_rule.get(r.name, 0) + 1
            if out_of_time:
                break
        view = eg.flush()
        stats.iterations += 1
        stats.nodes, stats.classes = view.node_count(), len(list(view))
        if (stats.nodes, stats.classes) == before and not out_of_time and all(b > 0 for b in allowance.values()):
            stats.saturated = True
            break
        if stats.nodes > max_nodes or out_of_time or (deadline is not None and budget.now() > deadline):
            break
    stats.seconds += time.perf_counter() - t0
    return stats
