"""The e-graph engine: a thin adapter over egglog (the Rust engine behind
egglog-python), kept in this one file so an egglog upgrade touches nothing else.

egglog stores the e-graph (hash-consing, union-find, congruence closure and
rebuilding). Every e-node is a generic constructor of its arity,
``N<k>(op, key, child_1, ..., child_k)`` for k <= MAX_ARITY, and wider nodes (long
concatenations) are ``NW(op, key, list)`` over a cons list of children. Children are
plain constructor arguments, not egglog containers: a container (``Vec``) is re-scanned
whole on every rebuild, which made one flush with a few thousand unions take tens of
seconds; constructor arguments are rebuilt incrementally. The i-th node added from
Python is also named ``H(i)``, so Python refers to
nodes and classes by those integer handles: ``op`` is the operator (an HLO
opcode, ``input``, or a pii ``isa:<instr>``) and ``key`` an interned string
naming the node's type and attributes, so e-nodes of different types never
collide. Rewrite rules are matched in Python over a frozen snapshot (they need
shapes, dtypes and the ISA's constraint solving, which live in Python) and their
results are added back as new nodes and unions.

Additions reach egglog in bulk: each flush writes them as rows of the relations
``A<arity>`` and ``U`` (tab-separated files read with egglog's ``input``), and one
run of the ``load`` ruleset turns the rows into nodes and unions. One egglog
command per node costs about 0.1-0.2 ms; the bulk load is over ten times faster.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from egglog import bindings

MAX_ARITY = 8  # relations A0..A8; wider nodes (long concatenations) are sent as single commands


def _declarations() -> str:
    arities = " ".join(f"(N{n} String String{' Node' * n})" for n in range(MAX_ARITY + 1))
    lines = [f"(datatype* (Node {arities} (NW String String NodeList)) (NodeList (Nil) (Cons Node NodeList)))",
             "(constructor H (i64) Node)", "(relation U (i64 i64))", "(ruleset load)",
             "(rule ((U a b)) ((union (H a) (H b))) :ruleset load)",
             # wide nodes: AW(i, op, key, l) with cells WC(l, child, next) and WE(l, child) ending the list
             "(constructor L (i64) NodeList)", "(relation AW (i64 String String i64))",
             "(relation WC (i64 i64 i64))", "(relation WE (i64 i64))",
             "(rule ((AW i op k l)) ((union (H i) (NW op k (L l)))) :ruleset load)",
             "(rule ((WC l c m)) ((union (L l) (Cons (H c) (L m)))) :ruleset load)",
             "(rule ((WE l c)) ((union (L l) (Cons (H c) (Nil)))) :ruleset load)"]
    for n in range(MAX_ARITY + 1):
        xs = [f"c{j}" for j in range(n)]
        lines.append(f"(relation A{n} (i64 String String{' i64' * n}))")
        lines.append(f"(rule ((A{n} i op k {' '.join(xs)})) "
                     f"((union (H i) (N{n} op k {' '.join(f'(H {x})' for x in xs)}))) :ruleset load)")
    return "\n".join(lines)


_DECL = _declarations()
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
        self._dir = tempfile.mkdtemp(prefix="actgen-egraph-")
        weakref.finalize(self, shutil.rmtree, self._dir, True)
        self._n = 0  # nodes added so far; node i is H(i)
        self._rows: dict[str, list[str]] = {}  # relation -> pending rows
        self._unions: list[str] = []
        self._cells = 0  # list cells of wide nodes so far; cell l is L(l)
        self._class_of_node: list[ClassId] = []
        self._rep: dict[ClassId, int] = {}  # a node of each class, to refer to the class
        self._snapshot: dict[ClassId, list[RawNode]] = {}
        # egglog values read back, converted once: class and list ids, interned strings
        self._ids: dict[object, ClassId] = {}
        self._strings: dict[object, str] = {}

    # -- building ---------------------------------------------------------------
    # Nodes and classes are named by references, node handles: the handle ``add``
    # returns (valid even before the next flush), or ``class_ref`` for a class of the
    # current snapshot.
    def class_ref(self, cls: ClassId) -> int:
        return self._rep[cls]

    def add(self, op: str, key: str, children: Sequence[int] = ()) -> int:
        """Add an e-node over child references; returns the node's handle."""
        idx = self._n
        self._n += 1
        if len(children) <= MAX_ARITY:
            self._rows.setdefault(f"A{len(children)}", []).append("\t".join((str(idx), op, key, *map(str, children))))
        else:
            first = self._cells
            self._cells += len(children)
            self._rows.setdefault("AW", []).append("\t".join((str(idx), op, key, str(first))))
            for j, c in enumerate(children[:-1]):
                self._rows.setdefault("WC", []).append(f"{first + j}\t{c}\t{first + j + 1}")
            self._rows.setdefault("WE", []).append(f"{self._cells - 1}\t{children[-1]}")
        return idx

    def union(self, a: int, b: int) -> None:
        """Merge the classes of two references."""
        self._unions.append(f"{a}\t{b}")

    # -- reading ----------------------------------------------------------------
    def flush(self) -> None:
        """Send pending additions and unions to egglog and take a fresh snapshot."""
        loads = []
        for name, rows in sorted(self._rows.items()) + [("U", self._unions)]:
            if rows:
                path = os.path.join(self._dir, f"{name}.tsv")
                with open(path, "w") as f:
                    f.write("\n".join(rows) + "\n")
                loads.append(f"(input {name} {_quote(path)})")
        self._run("\n".join(loads + ["(run load 1)"]))
        self._rows, self._unions = {}, []
        frozen = self._eg.freeze()
        cid, text = self._id, self._string
        self._class_of_node = [0] * self._n
        self._rep = {}
        for row in frozen.functions["H"].rows:
            i, c = self._eg.value_to_i64(row.inputs[0]), cid(row.output)
            self._class_of_node[i] = c
            self._rep.setdefault(c, i)
        classes: dict[ClassId, list[RawNode]] = {}
        for n in range(MAX_ARITY + 1):
            for row in frozen.functions[f"N{n}"].rows:
                op, key, *kids = row.inputs
                node = RawNode(text(op), text(key), tuple(map(cid, kids)))
                classes.setdefault(cid(row.output), []).append(node)
        cells = {cid(row.output): (cid(row.inputs[0]), cid(row.inputs[1])) for row in frozen.functions["Cons"].rows}
        nil = {cid(row.output) for row in frozen.functions["Nil"].rows}
        assert not nil & cells.keys(), "egglog numbers the values of different sorts apart"
        for row in frozen.functions["NW"].rows:
            op, key, cell = row.inputs
            kids, at = [], cid(cell)
            while at not in nil:
                head, at = cells[at]
                kids.append(head)
            node = RawNode(text(op), text(key), tuple(kids))
            classes.setdefault(cid(row.output), []).append(node)
        self._snapshot = classes

    def _id(self, value: object) -> ClassId:
        got = self._ids.get(value)
        if got is None:
            got = self._ids[value] = _cid(value)
        return got

    def _string(self, value: object) -> str:
        got = self._strings.get(value)
        if got is None:
            got = self._strings[value] = self._eg.value_to_string(value)
        return got

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
