"""A typed e-graph of tensor terms on top of the egglog adapter."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import budget
from ..ir.types import TensorType
from .egraph import ClassId, EGraph
from ..ir.graph import frozen_attrs
from .terms import Class, ENode, Term, View


class TensorEGraph:
    def __init__(self) -> None:
        budget.spend("egraph")
        self.g = EGraph()
        self._keys: dict[tuple, str] = {}
        self._seen: dict[tuple, str] = {}  # (type with its layout, attribute items) -> key: _key's fast path
        self._decode: dict[str, tuple[TensorType, Mapping[str, Any]]] = {}
        self.view = View({})
        self.fired: set[tuple] = set()  # (rule, class, node) already applied
        self.resume: dict[str, ClassId] = {}  # rule -> class where its match budget last ran out (run_rules)
        # Terms rules return are mostly there already: (op, key, operand classes) -> class of
        # the snapshot, and the nodes added since it, so that only new nodes reach egglog.
        self._index: dict[tuple, ClassId] = {}
        self._pending: dict[tuple, int] = {}
        self._enodes: dict[tuple, ENode] = {}  # the same node object in every snapshot (its hash is cached)

    def _key(self, t: TensorType, attrs: Mapping[str, Any]) -> str:
        items = tuple(attrs.items())  # a Term's attrs are sorted already (frozen_attrs)
        key = self._seen.get((t, items))
        if key is None:
            plain = t.with_layout(None)
            k = (plain, tuple(sorted(items)))
            key = self._keys.get(k)
            if key is None:
                key = self._keys[k] = f"k{len(self._keys)}"
                self._decode[key] = (plain, frozen_attrs(attrs))
            self._seen[(t, items)] = key
        return key

    def add(self, term: Term | Class) -> int:
        """Add a term (children first); returns a reference (an egglog node handle) to it."""
        return self._add(term, {})[0]

    def _add(self, term: Term | Class, done: dict[int, tuple]) -> tuple[int, ClassId | None]:
        """(reference, the term's class if the snapshot has it already). ``done``: the
        subterms added so far by object, so a kernel's shared values (one Term object used
        by many) are visited once, not once per path to them. Children first, by an
        explicit stack: a chain of strided stores is thousands of levels deep."""
        stack: list[Term | Class] = [term]
        while stack:
            t = stack[-1]
            if isinstance(t, Class) or id(t) in done:
                stack.pop()
                continue
            todo = [a for a in t.args if not isinstance(a, Class) and id(a) not in done]
            if todo:
                stack.extend(reversed(todo))  # args[0] first, as the kernel orders them
                continue
            stack.pop()
            done[id(t)] = (t, self._add_node(t, [self._added(a, done) for a in t.args]))
        return self._added(term, done)

    def _added(self, t: Term | Class, done: dict[int, tuple]) -> tuple[int, ClassId | None]:
        return (self.g.class_ref(t.id), t.id) if isinstance(t, Class) else done[id(t)][1]

    def _add_node(self, term: Term, kids: list[tuple[int, ClassId | None]]) -> tuple[int, ClassId | None]:
        budget.spend("term")
        key = self._key(term.type, term.attrs)
        ids = tuple([k for _, k in kids])
        if None not in ids:
            c = self._index.get((term.op, key, ids))
            if c is not None:
                return self.g.class_ref(c), c  # done keeps the term: its id stays unique
        refs = tuple([r for r, _ in kids])
        ref = self._pending.get((term.op, key, refs))
        if ref is None:
            ref = self._pending[(term.op, key, refs)] = self.g.add(term.op, key, refs)
        return ref, None

    @property
    def pending(self) -> int:
        """Nodes added since the last flush (some may turn out to be there already)."""
        return len(self._pending)

    def flush_cost(self) -> float:
        """Work-seconds the next ``flush`` will spend (sending the pending nodes, reading the
        snapshot back): a deadline checked before it must allow for them."""
        return budget.COST["node"] * self.pending + budget.COST["snapshot"] * (self.view.node_count() + self.pending)

    def union(self, c: ClassId, term: Term | Class) -> None:
        ref, k = self._add(term, {})
        if k != c:
            self.g.union(self.g.class_ref(c), ref)

    def flush(self) -> View:
        budget.spend("node", len(self._pending))
        self.g.flush()
        self._pending.clear()
        self._index = {(r.op, r.key, r.children): c for c, raw in self.g.classes().items() for r in raw}
        classes = {}
        for c, raw in self.g.classes().items():
            nodes = []
            for r in raw:
                n = self._enodes.get((r.op, r.key, r.children))
                if n is None:
                    t, attrs = self._decode[r.key]
                    n = self._enodes[(r.op, r.key, r.children)] = ENode(r.op, t, attrs, r.children)
                nodes.append(n)
            classes[c] = nodes
        self.view = View(classes)
        budget.spend("snapshot", self.view.node_count())
        return self.view

    def class_of(self, ref: int) -> ClassId:
        """The class of a reference returned by ``add`` (as of the last flush)."""
        return self.g.class_of(ref)
