"""The e-graph engine: a thin adapter over egglog (the Rust engine behind
egglog-python), kept in this one file so an egglog upgrade touches nothing else.

egglog stores the e-graph (hash-consing, union-find, congruence closure and
rebuilding). Every e-node is one generic constructor ``N(op, key, children)``;
the i-th node added from Python is also named ``H(i)``, so Python refers to
classes through those handles (egglog globals are far slower to create):
``op`` is the operator (an HLO opcode, ``input``, or a pii ``isa:<instr>``) and
``key`` an interned string naming the node's type and attributes, so e-nodes of
different types never collide. Rewrite rules are matched in Python over a frozen
snapshot (they need shapes, dtypes and the ISA's constraint solving, which live
in Python) and their results are added back as new nodes and unions.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from egglog import bindings

_DECL = """(datatype* (Node (N String String NodeVec)) (sort NodeVec (Vec Node)))
(constructor H (i64) Node)"""
_CHUNK = 64  # commands per egglog parse: every span keeps the program text, so big programs cost memory

ClassId = int


@dataclass(frozen=True)
class RawNode:
    op: str
    key: str
    children: tuple[ClassId, ...]


class EGraph:
    """Add nodes, union classes, and read a canonical snapshot.

    Class ids are egglog's own; they are valid for the snapshot taken by the last
    ``flush`` (a union may retire an id), which is how rules use them: match on a
    snapshot, add results, flush, repeat."""

    def __init__(self) -> None:
        self._eg = bindings.EGraph()
        self._run(_DECL)
        self._n = 0  # nodes added so far; node i is H(i)
        self._pending: list[str] = []
        self._class_of_node: list[ClassId] = []
        self._rep: dict[ClassId, int] = {}  # a node of each class, to refer to the class
        self._snapshot: dict[ClassId, list[RawNode]] = {}

    # -- building ---------------------------------------------------------------
    # Nodes and classes are named by references: ``node_ref`` for a node added
    # with ``add`` (even before the next flush), ``class_ref`` for a class of the
    # current snapshot.
    def node_ref(self, node: int) -> str:
        return f"(H {node})"

    def class_ref(self, cls: ClassId) -> str:
        return f"(H {self._rep[cls]})"

    def add(self, op: str, key: str, children: Sequence[str] = ()) -> int:
        """Add an e-node over child references; returns the node's handle."""
        idx = self._n
        self._n += 1
        vec = f"(vec-of {' '.join(children)})" if children else "(vec-empty)"
        self._pending.append(f"(union (H {idx}) (N {_quote(op)} {_quote(key)} {vec}))")
        return idx

    def union(self, a: str, b: str) -> None:
        """Merge the classes of two references."""
        self._pending.append(f"(union {a} {b})")

    # -- reading ----------------------------------------------------------------
    def flush(self) -> None:
        """Send pending additions and unions to egglog and take a fresh snapshot."""
        for j in range(0, len(self._pending), _CHUNK):
            self._run("\n".join(self._pending[j : j + _CHUNK]))
        self._pending.clear()
        frozen = self._eg.freeze()
        self._class_of_node = [0] * self._n
        self._rep = {}
        for row in frozen.functions["H"].rows:
            i, c = self._eg.value_to_i64(row.inputs[0]), _cid(row.output)
            self._class_of_node[i] = c
            self._rep.setdefault(c, i)
        classes: dict[ClassId, list[RawNode]] = {}
        for row in frozen.functions["N"].rows:
            op, key, vec = row.inputs
            kids = tuple(_cid(v) for v in self._eg.value_to_vec(vec))
            node = RawNode(self._eg.value_to_string(op), self._eg.value_to_string(key), kids)
            classes.setdefault(_cid(row.output), []).append(node)
        self._snapshot = classes

    def class_of(self, node: int) -> ClassId:
        """The e-class of a node added with ``add`` (as of the last flush)."""
        return self._class_of_node[node]

    def classes(self) -> dict[ClassId, list[RawNode]]:
        """class id -> its e-nodes, as of the last flush."""
        return self._snapshot

    def _run(self, program: str) -> None:
        self._eg.run_program(*self._eg.parse_program(program))


def _cid(value: object) -> ClassId:
    # egglog prints a class value as "Value(<id>)"; the id is the canonical class.
    text = str(value)
    return int(text[text.index("(") + 1 : -1])


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
