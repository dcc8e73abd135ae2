"""E-nodes with types and attributes, terms for rule right-hand sides, and the
read-only view of an e-graph snapshot that rules match against.

Every e-node carries its result type (layout-free) and its attributes (the IR's
typed attribute values), so all nodes of an e-class have one type and a rule
can read any operand's shape. Operators are HLO opcodes, plus:
- ``input``: a byte-flattened kernel input on d0 (attrs: ``index``);
- ``isa:<name>``: a pii θ_{α,?} (attrs: α, and ``buffer``, the output buffer);
- ``slice^H`` / ``concat^H``: Act's identity instructions (§5.2.3).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..ir.graph import frozen_attrs
from ..ir.ops import VIEWS
from ..ir.types import TensorType
from .egraph import ClassId

PII_PREFIX = "isa:"
IDENTITY_OPS = ("slice^H", "concat^H")


@dataclass(frozen=True)
class ENode:
    op: str
    type: TensorType
    attrs: Mapping[str, Any]
    children: tuple[ClassId, ...]

    def __hash__(self) -> int:  # cached: nodes are keys of the rules' fired set, hashed again and again
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.op, self.type, tuple(self.attrs.items()), self.children))
            object.__setattr__(self, "_hash", h)
        return h

    @property
    def is_pii(self) -> bool:
        return self.op.startswith(PII_PREFIX) or self.op in IDENTITY_OPS

    @property
    def instr(self) -> str:
        """Instruction name of a pii node."""
        return self.op[len(PII_PREFIX):] if self.op.startswith(PII_PREFIX) else self.op


@dataclass(frozen=True)
class Term:
    """A tree to add to the e-graph; leaves may be existing classes (``Class``)."""

    op: str
    type: TensorType
    args: tuple[Term | Class, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "attrs", frozen_attrs(self.attrs))
        object.__setattr__(self, "args", tuple(self.args))

    def __hash__(self) -> int:  # cached: a term shares subterms (a tiled kernel's pieces), so hashing it
        h = self.__dict__.get("_hash")  # afresh at every level is exponential in its depth
        if h is None:
            h = hash((self.op, self.type, self.args, tuple(self.attrs.items())))
            object.__setattr__(self, "_hash", h)
        return h


@dataclass(frozen=True)
class Class:
    """Reference to an existing e-class inside a Term."""

    id: ClassId


UNDEF = "undef"  # bytes nothing reads (a store keeps them, whatever they hold)
_LEAVES = frozenset({"input", "parameter", UNDEF})
CONST_LEAVES = ("constant", "iota")
_MOVES = VIEWS | {"slice", "concatenate", "copy", "transpose"}


def _moved_operands(n: ENode) -> tuple[ClassId, ...] | None:
    """The operands a node only moves (a pad's operand, not its padding value); None for a
    node that computes with its operands."""
    if n.op in _MOVES:
        return n.children
    return n.children[:1] if n.op == "pad" else None


class View:
    """What rules see: the e-classes of one snapshot, with types."""

    def __init__(self, classes: Mapping[ClassId, list[ENode]]):
        self._classes = classes
        self._dot_operands: frozenset[ClassId] | None = None
        self._moved: frozenset[ClassId] | None = None
        self._constants: frozenset[ClassId] | None = None
        self._input_slices: frozenset[ClassId] | None = None
        self._node_count: int | None = None
        # e-nodes a rewrite may still add before the e-graph passes its node limit: run_rules
        # sets it before each rule application, for rules whose one result can be thousands of
        # terms (tiles.tile_split); inf outside run_rules
        self.room = math.inf

    def __iter__(self) -> Iterator[ClassId]:
        return iter(self._classes)

    def __contains__(self, c: ClassId) -> bool:
        return c in self._classes

    def nodes(self, c: ClassId) -> list[ENode]:
        return self._classes[c]

    def type(self, c: ClassId) -> TensorType:
        return self._classes[c][0].type

    def items(self):  # noqa: ANN201
        return self._classes.items()

    def node_count(self) -> int:
        """E-nodes in all classes."""
        if self._node_count is None:
            self._node_count = sum(len(ns) for ns in self._classes.values())
        return self._node_count

    def dot_operands(self) -> frozenset[ClassId]:
        """Classes some dot node takes as an operand."""
        if self._dot_operands is None:
            self._dot_operands = frozenset(k for ns in self._classes.values() for n in ns if n.op == "dot"
                                           for k in n.children)
        return self._dot_operands

    def moved_inputs(self) -> frozenset[ClassId]:
        """Classes that only move the kernel's inputs and that no operator computes with: an
        input, or a slice, concatenation, copy, view, transpose or padding (a strided window)
        of such classes. Not constants: their bytes in HBM come from the values phase 1
        materializes, a scalar's reshape included (Gemmini mlp_i8_layer's scale). Not the
        operands of a computing operator: a strided column that a vector instruction reads
        is gathered through HBM (an f32 row max on AMX)."""
        if self._moved is None:
            moved = self._least(lambda n, moved: n.op in _LEAVES or (
                (ks := _moved_operands(n)) is not None and all(k in moved for k in ks)))
            used = {k for ns in self._classes.values() for n in ns
                    if _moved_operands(n) is None and not n.is_pii for k in n.children}
            self._moved = frozenset(moved - used)
        return self._moved

    def input_slices(self) -> frozenset[ClassId]:
        """Classes an identity slice (``slice^H``) of a kernel input, or of such a class, produces."""
        if self._input_slices is None:
            self._input_slices = frozenset(self._least(lambda n, found: n.op == "input" or (
                n.op == "slice^H" and n.children[0] in found)))
        return self._input_slices

    def constants(self) -> frozenset[ClassId]:
        """Classes with a value the kernel's inputs do not change: a literal or iota, or an
        operator (not an instruction) over such classes only (Act Fig. 17's constant detection)."""
        if self._constants is None:
            self._constants = frozenset(self._least(lambda n, const: not n.is_pii and n.op not in _LEAVES and (
                n.op in CONST_LEAVES or bool(n.children and all(k in const for k in n.children)))))
        return self._constants

    def _least(self, member: Callable[[ENode, set[ClassId]], bool]) -> set[ClassId]:
        """The least set of classes each holding a node that ``member`` admits given the set."""
        found: set[ClassId] = set()
        grew = True
        while grew:
            grew = False
            for c, ns in self._classes.items():
                if c not in found and any(member(n, found) for n in ns):
                    found.add(c)
                    grew = True
        return found

    def find(self, c: ClassId, op: str) -> list[ENode]:
        """The nodes of class ``c`` with operator ``op``."""
        return [n for n in self._classes[c] if n.op == op]


def post_order(roots: Sequence[Term]) -> list[Term]:
    """Every distinct subterm, operands first (iterative: no recursion limit)."""
    order, seen = [], set()
    stack: list[tuple[Term, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        t, done = stack.pop()
        if done:
            order.append(t)
            continue
        if id(t) in seen:
            continue
        seen.add(id(t))
        stack.append((t, True))
        stack.extend((a, False) for a in reversed(t.args) if isinstance(a, Term) and id(a) not in seen)
    return order
