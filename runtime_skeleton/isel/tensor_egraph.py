"""A typed e-graph of tensor terms on top of the egglog adapter."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..ir.types import TensorType
from .egraph import ClassId, EGraph
from ..ir.graph import frozen_attrs
from .terms import Class, ENode, Term, View


class TensorEGraph:
    def __init__(self) -> None:
        self.g = EGraph()
        self._keys: dict[tuple, str] = {}
        self._decode: dict[str, tuple[TensorType, Mapping[str, Any]]] = {}
        self.view = View({})
        self.fired: set[tuple] = set()  # (rule, class, node) already applied

    def _key(self, t: TensorType, attrs: Mapping[str, Any]) -> str:
        t = t.with_layout(None)
        k = (t, tuple(sorted(attrs.items())))
        key = self._keys.get(k)
        if key is None:
            key = self._keys[k] = f"k{len(self._keys)}"
            self._decode[key] = (t, frozen_attrs(attrs))
        return key

    def add(self, term: Term | Class) -> str:
        """Add a term (children first); returns an egglog reference to it."""
        if isinstance(term, Class):
            return self.g.class_ref(term.id)
        kids = [self.add(a) for a in term.args]
        return self.g.node_ref(self.g.add(term.op, self._key(term.type, term.attrs), kids))

    def union(self, c: ClassId, term: Term | Class) -> None:
        self.g.union(self.g.class_ref(c), self.add(term))

    def flush(self) -> View:
        self.g.flush()
        classes = {}
        for c, raw in self.g.classes().items():
            nodes = []
            for r in raw:
                t, attrs = self._decode[r.key]
                nodes.append(ENode(r.op, t, attrs, r.children))
            classes[c] = nodes
        self.view = View(classes)
        return self.view

    def class_of(self, ref: str) -> ClassId:
        """The class of a reference returned by ``add`` (as of the last flush)."""
        return self.g.class_of(int(ref[3:-1]))  # "(H <i>)"
