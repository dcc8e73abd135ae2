"""IR-to-ISA rules g_θ -> θ (Act §5.2.2), generated from a target's instructions.

The left-hand side is the instruction's semantics g_θ(α) with α symbolic: its
operators and α-free attributes are matched structurally, and every shape and
α-dependent attribute of the matched nodes becomes an equation between an
expression in α and a concrete number. z3 solves the equations together with
the attribute ranges and ∃β e(α, β) with every slice inside its buffer (the
generated precondition, Fig. 35). A solution gives the pii θ_{α,?}, whose
children are the classes bound to the semantics' parameters, in input order.

Views. reshape and bitcast-convert only reinterpret a tensor's row-major bytes, so
a chain of them from type A to type B is one function whatever the intermediate
types (``view(x, B)``). The semantics write such chains one way (tdpbusd:
bitcast(reshape(tile))), the kernel and the axioms another (reshape(bitcast(..))
after reshape-reshape has merged two reshapes). A view node of a pattern is
therefore matched modulo views: the pattern's chain of views (and of ops that
are the identity at this α) down to its next other op is matched at every class
the e-class reaches through reshape / bitcast-convert nodes, its view closure. A
parameter at the end of such a chain, read from an on-chip buffer, that no class
of the closure can bind is bound to a view of a matrix of the closure, row for
row: the operand in the instruction's own layout (an AMX tile s8[1, 16, 64]
holding a row-major s32[16, 16] result), for which the instruction producing it
is then selected in turn. With no matrix in the closure, a byte vector that fills
the register is bound the same way (bytes only moved: a copy in whole tiles).

Accumulators. An instruction that adds its result to an operand it reads from a
buffer (AMX tdpbusd's C) also computes the plain result, from zeros: its pattern
add(view(c), y) matches wherever y does, with c bound to zeros (integers only),
unless another instruction of the target computes y by itself.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any
from weakref import WeakKeyDictionary

import z3

from ..hlo import parse_module
from ..ir.attrs import SliceDim
from ..ir.dtypes import dtype
from ..ir.graph import Instruction, Module
from ..ir.ops import VIEWS
from ..ir.types import TensorType
from ..symbolic import Z3Algebra
from ..target import InstructionDef, TargetDef
from ..target_info import DATA_OPS
from .bflat import zero_term
from .convert import reducer_name
from .egraph import ClassId
from .rules import ANY, Rule
from .terms import PII_PREFIX, UNDEF, Class, ENode, Term, View
from .unread import unread_parameters

MAX_MATCHES = 32  # bindings tried per (instruction, class); enough for DAG-shaped patterns
MAX_CLOSURE = 24  # classes in a view closure (the e-class first, then breadth first)
WATCH_DEPTH = 2  # a pattern reads its operands' nodes and theirs: match again when those classes grow
_Z3 = Z3Algebra()


@dataclass(frozen=True)
class PNode:
    """A node of a semantics pattern; ``param`` is set for leaves (input index)."""

    op: str
    dtype: str
    shape: tuple[Any, ...]  # ints or z3 expressions in α
    attrs: tuple[tuple[str, Any], ...]
    children: tuple[int, ...]  # indices into Pattern.nodes
    param: int | None = None


@dataclass
class Pattern:
    ins: type[InstructionDef]
    alpha: dict[str, z3.ArithRef]
    nodes: list[PNode]
    root: int
    ops: frozenset[str] = field(default_factory=frozenset)
    onchip: frozenset[int] = frozenset()  # parameters read from an on-chip buffer (may be bound to a view)
    users: tuple[int, ...] = ()  # per node, how many pattern nodes use it
    ends: dict[int, list] = field(default_factory=dict)  # view chains below each view node, cached
    skips: dict[int, list] = field(default_factory=dict)  # identity skips of each node (by id), cached
    zskips: dict[int, list] = field(default_factory=dict)  # zero-accumulator skips of each node, cached
    plain: frozenset = frozenset()  # structures of all the target's instructions (see _zero_skips)
    extents: dict[tuple, tuple[int, ...]] = field(default_factory=dict)  # (node, α) -> its shape at α, cached
    # id of an attribute's z3 variable in ``alpha`` (the object the pattern's shapes hold) -> its range
    ranges: dict[int, tuple[int, int]] = field(default_factory=dict)


def compile_pattern(target: TargetDef, ins: type[InstructionDef]) -> Pattern:
    alpha = {a.name: z3.Int(f"{ins.name}.{a.name}") for a in ins.comp_attrs}
    loc = ins.semantics_loc
    module = parse_module(ins.semantics, loc.file, symbols={**target.constants, **alpha}, start_line=loc.line,
                          start_col=loc.col, infer_types=False, default_name=ins.name)
    comp = module.entry_computation
    index: dict[str, int] = {}
    nodes: list[PNode] = []
    for inst in comp.instructions:
        t = inst.type
        assert isinstance(t, TensorType)
        attrs = _pattern_attrs(module, inst)
        param = inst.attrs["parameter_number"] if inst.opcode == "parameter" else None
        nodes.append(PNode(inst.opcode, t.dtype.name, tuple(t.shape), attrs,
                           tuple(index[o] for o in inst.operands), param))
        index[inst.name] = len(nodes) - 1
    ops = frozenset(n.op for n in nodes if n.param is None)
    onchip = frozenset(i for i, sl in enumerate(ins.inputs) if sl.buffer != target.hbm.name)
    users = [0] * len(nodes)
    for n in nodes:
        for k in n.children:
            users[k] += 1
    ranges = {id(alpha[d.name]): (d.lo, d.hi) for d in ins.attrs()
              if d.name in alpha and isinstance(d.lo, int) and isinstance(d.hi, int)}
    return Pattern(ins, alpha, nodes, index[comp.root], ops, onchip, tuple(users), ranges=ranges)


def _pattern_attrs(module: Module, inst: Instruction) -> tuple[tuple[str, Any], ...]:
    attrs = dict(inst.attrs)
    attrs.pop("parameter_number", None)
    if "to_apply" in attrs:
        attrs["to_apply"] = reducer_name(module, attrs["to_apply"])
    return tuple(sorted(attrs.items()))


class _Match:
    """Bindings of one match: parameter -> class (or -> a view of a class), and equations over α."""

    def __init__(self) -> None:
        self.params: dict[int, ClassId] = {}
        self.views: dict[int, ClassId] = {}  # parameter -> the class it is a view of
        # parameter -> (class, slice node): the parameter is the class padded with zeros, of
        # which the slice (its leading part) reads only the class (``_padded_binding``)
        self.padded: dict[int, tuple[ClassId, int]] = {}
        self.zeros: set[int] = set()  # parameters bound to zeros (an accumulator starting from zero)
        self.nodes: dict[int, ClassId] = {}
        self.eqs: list[Any] = []  # z3 facts over α


def _symbolic(x: Any) -> bool:
    if isinstance(x, z3.ExprRef):
        return True
    if isinstance(x, tuple | list):
        return any(_symbolic(v) for v in x)
    if hasattr(x, "__dataclass_fields__") and not isinstance(x, type):
        return any(_symbolic(getattr(x, f)) for f in x.__dataclass_fields__)
    return False


@dataclass(frozen=True, eq=False)
class _Fact:
    """A fact over α: ``expr == value``, or ``expr`` itself when value is None. The
    expressions are the pattern's own objects (they live as long as it), so their
    identities name them: ``key`` identifies a set of facts without printing z3 terms."""

    expr: Any
    value: int | None = None
    key: tuple[int, int | None] = field(init=False)  # the pattern holds the expression: its id is stable

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", (id(self.expr), self.value))

    def z3(self) -> Any:
        return self.expr if self.value is None else self.expr == self.value


def _unify(sym: Any, val: Any, eqs: list) -> bool:
    """Equal as data, or record equations where ``sym`` is symbolic. Containers are
    compared part by part (the hot path of matching: no separate walk for symbols)."""
    if type(sym) is int:
        return sym == val
    if isinstance(sym, z3.ExprRef):
        if not isinstance(val, int):
            return False
        eqs.append(_Fact(sym, val))
        return True
    if isinstance(sym, tuple | list):
        if not isinstance(val, tuple | list) or len(sym) != len(val) or \
                (type(sym) is not type(val) and not _symbolic(sym)):  # a tuple is no list, as data
            return False
        return all(_unify(a, b, eqs) for a, b in zip(sym, val))
    if hasattr(sym, "__dataclass_fields__") and not isinstance(sym, type):
        if not _symbolic(sym):  # equal as data: its own __eq__ (fields that do not compare are not compared)
            return sym == val
        return type(sym) is type(val) and all(_unify(getattr(sym, f), getattr(val, f), eqs)
                                              for f in sym.__dataclass_fields__)
    return sym == val


def _plausible(p: Pattern, eqs: list, start: int) -> bool:
    """Whether the facts from ``start`` on may hold with the earlier ones, as far as each that
    sets an attribute to a value says: inside its range, and no other value set before. The
    solver refutes such matches at the end anyway; most failed matches of a tile store
    fail so (rows = 32, two values of colsb), and pruning them here saves the descent below."""
    for k in range(start, len(eqs)):
        e = eqs[k]
        bounds = p.ranges.get(id(e.expr)) if e.value is not None else None
        if bounds is None:
            continue
        if not bounds[0] <= e.value <= bounds[1]:
            return False
        if any(f.expr is e.expr and f.value != e.value for f in eqs[:k]):
            return False
    return True


def _match(p: Pattern, i: int, c: ClassId, view: View, m: _Match) -> Iterator[_Match]:
    """Bindings under which pattern node ``i`` computes class ``c``."""
    pn = p.nodes[i]
    if i in m.nodes:
        if m.nodes[i] == c:
            yield m
        return
    if pn.op in VIEWS and pn.param is None:
        yield from _match_view(p, i, c, view, m)
        return
    for skip in _identity_skips(p, pn):
        nm = _copy(m)
        nm.eqs += skip.facts
        nm.nodes[i] = c  # an identity: its value is its operand's
        if _plausible(p, nm.eqs, len(m.eqs)):
            yield from _match(p, skip.child, c, view, nm)
    t = view.type(c)
    if t.dtype.name != pn.dtype or len(t.shape) != len(pn.shape):
        return
    if pn.param is not None:
        eqs = list(m.eqs)
        if not _unify(pn.shape, t.shape, eqs) or not _plausible(p, eqs, len(m.eqs)):
            return
        nm = _copy(m)
        nm.eqs, nm.params[pn.param], nm.nodes[i] = eqs, c, c
        yield nm
        return
    for n in view.nodes(c):
        if n.op != pn.op or len(n.children) != len(pn.children):
            continue
        eqs = list(m.eqs)
        if not _unify(pn.shape, t.shape, eqs) or not _attrs_match(pn, n, eqs) or not _plausible(p, eqs, len(m.eqs)):
            continue
        nm = _copy(m)
        nm.eqs, nm.nodes[i] = eqs, c
        yield from _match_children(p, pn.children, n.children, view, nm)
    for other, q, chain in _zero_skips(p, i):  # after the real matches (MAX_MATCHES keeps the first)
        if q in m.params or q in m.views:
            continue
        nm = _copy(m)
        nm.nodes[i] = c  # add(0, y) = y: the accumulator starts from zero
        for k in chain:
            nm.nodes[k] = -1 - k
        nm.zeros.add(q)
        yield from _match(p, other, c, view, nm)


def _match_view(p: Pattern, i: int, c: ClassId, view: View, m: _Match) -> Iterator[_Match]:
    """Pattern node ``i`` (a view) at class ``c``, modulo views: the end of each view chain
    below ``i`` at each class of c's view closure (see the module doc)."""
    pn = p.nodes[i]
    t = view.type(c)
    if t.dtype.name != pn.dtype or len(t.shape) != len(pn.shape) or t.dtype.is_pred:
        return
    eqs = list(m.eqs)
    if not _unify(pn.shape, t.shape, eqs) or not _plausible(p, eqs, len(m.eqs)):
        return
    closure = view_closure(view, c)
    for j, facts, passed in _view_ends(p, i):
        end = p.nodes[j]
        known = eqs + list(facts)  # each match below gets its own copy
        if not _plausible(p, known, len(eqs)):
            continue
        bound = False
        for k in closure:
            kt = view.type(k)
            if kt.dtype.name != end.dtype or len(kt.shape) != len(end.shape):
                continue
            nm = _with(m, list(known))
            for q in passed:  # the chain's nodes have no class of their own
                nm.nodes[q] = c if q == i else -1 - q
            for r in _match(p, j, k, view, nm):
                bound = True
                yield r
        if not bound and end.param is None:
            yield from _padded_binding(p, i, j, c, closure, view, _with(m, list(known)), passed)
        if bound or end.param is None or end.param not in p.onchip or p.users[j] != 1 or end.dtype == "pred":
            continue
        src = _view_source(view, closure, end, p)
        if src is not None:
            k, row_eq = src
            nm = _with(m, known + ([] if row_eq is True else [row_eq]))
            for q in passed + (j,):
                nm.nodes[q] = c if q == i else -1 - q
            nm.views[end.param] = k
            yield nm


def _with(m: _Match, eqs: list) -> _Match:
    nm = _copy(m)
    nm.eqs = eqs
    return nm


def _padded_binding(p: Pattern, i: int, j: int, c: ClassId, closure: list[ClassId], view: View, m: _Match,
                    passed: tuple[int, ...]) -> Iterator[_Match]:
    """Pattern node ``j``, the end of a view chain from ``i`` (matched at ``c``), is a slice
    taking the leading part of an on-chip parameter seen through views (a masked vector
    store's first n lanes, a tile store's first colsb bytes a row) that no slice node of
    the e-graph matches: the first class of the closure with the slice's shape is bound
    as that leading part, the rest of the parameter zeros. Whatever the rest holds, the
    instruction does not read it; zeros are what the matching loads write there (a masked
    vector load, a tile load of fewer bytes a row), so their patterns then match the
    operand."""
    below = _leading_slice_of_parameter(p, j)
    if below is None:
        return
    end = p.nodes[j]
    width = dtype(end.dtype).nbytes
    for k in closure:
        kt = view.type(k)
        if kt.dtype.is_pred or kt.dtype.nbytes != width or kt.rank != len(end.shape):
            continue
        eqs = list(m.eqs)
        if not _unify(end.shape, kt.shape, eqs) or not _plausible(p, eqs, len(m.eqs)):
            continue
        nm = _with(m, eqs)
        for q in passed + below:
            nm.nodes[q] = c if q == i else -1 - q
        nm.padded[p.nodes[below[-1]].param] = (k, j)
        yield nm
        return


def _leading_slice_of_parameter(p: Pattern, j: int) -> tuple[int, ...] | None:
    """For a slice node ``j`` from index 0 with unit strides, whose operand is an on-chip
    parameter seen through views and used nowhere else: the nodes from the slice down to
    the parameter."""
    pn = p.nodes[j]
    if pn.op != "slice" or any(not (_is(d.start, 0) and _is(d.stride, 1)) for d in dict(pn.attrs)["slice"]):
        return None
    chain = (j,)
    k = pn.children[0]
    while p.users[k] == 1 and p.nodes[k].param is None and p.nodes[k].op in VIEWS:
        chain += (k,)
        k = p.nodes[k].children[0]
    q = p.nodes[k]
    if q.param is None or q.param not in p.onchip or p.users[k] != 1:
        return None
    return chain + (k,)


def _is(x: Any, value: int) -> bool:
    return isinstance(x, int) and x == value


def _view_ends(p: Pattern, i: int) -> list[tuple[int, tuple, tuple[int, ...]]]:
    """The ends of the view chains below view node ``i``: (end node, facts over α under
    which the skipped ops are identities, the chain's nodes). Views are passed through;
    an op that can be the identity is either the end or skipped; a node that another
    pattern node also uses is always an end."""
    if i in p.ends:
        return p.ends[i]
    out: list[tuple[int, tuple, tuple[int, ...]]] = []

    def walk(k: int, facts: tuple, passed: tuple[int, ...]) -> None:
        pn = p.nodes[k]
        if p.users[k] > 1:
            out.append((k, facts, passed))
        elif pn.op in VIEWS and pn.param is None:
            walk(pn.children[0], facts, passed + (k,))
        else:
            out.append((k, facts, passed))
            for skip in _identity_skips(p, pn):
                walk(skip.child, facts + skip.facts, passed + (k,))

    walk(p.nodes[i].children[0], (), (i,))
    p.ends[i] = out
    return out


def _row_dim(shape: tuple) -> int | None:
    """The index of the first dimension that is not the constant 1."""
    return next((i for i, n in enumerate(shape) if not (isinstance(n, int) and n == 1)), None)


def _rows(shape: tuple) -> Any:
    """The first dimension that is not the constant 1 (an int or an expression in α)."""
    d = _row_dim(shape)
    return None if d is None else shape[d]


_DATA_OPS = VIEWS | {"slice", "concatenate", "copy"}


def _view_source(view: View, closure: list[ClassId], end: PNode, p: Pattern) -> tuple[ClassId, Any] | None:
    """The class a parameter is bound to a view of: a class of the closure that is a matrix
    (two dimensions or more besides size-1 ones), its rows the parameter's rows (the
    equation over α that says so). The first that some operation computes (not only a
    view, slice, concatenation or copy of something), where the instruction producing the
    operand will be found; else the first matrix; else a byte vector the size of the register
    (``_flat_source``). A parameter of concrete shape is first bound to a class with the same
    elements in the same order (a vector as a register row)."""
    squeezed = tuple(n for n in end.shape if not (isinstance(n, int) and n == 1))
    if all(isinstance(n, int) for n in squeezed):  # a concrete shape: any class with its elements
        same = [k for k in closure if view.type(k).dtype.name == end.dtype
                and tuple(n for n in view.type(k).shape if n != 1) == squeezed]
        if same:
            return same[0], True
    rows = _rows(end.shape)
    if rows is None:
        return None
    matrices = [k for k in closure if sum(n != 1 for n in view.type(k).shape) >= 2]
    computed = [k for k in matrices if any(n.op not in _DATA_OPS and not n.is_pii for n in view.nodes(k))]
    for k in (computed or matrices)[:1]:
        shape = tuple(n for n in view.type(k).shape if n != 1)
        if len(shape) >= 2:
            if isinstance(rows, int):
                return (k, True) if rows == shape[0] else None
            return k, _Fact(rows, shape[0])
    return _flat_source(view, closure, end, rows, p)


def _flat_source(view: View, closure: list[ClassId], end: PNode, rows: Any, p: Pattern) -> tuple[ClassId, Any] | None:
    """With no matrix in the closure, a byte vector (rank 1, as HBM holds it) that fills the
    parameter's register: its bytes are the rows one after another (a copy in whole tiles,
    AMX tileloadd / tilestored with stride = colsb = 64). Only the largest row count the
    instruction takes: every halving piece of every byte vector would otherwise get a store."""
    after = end.shape[_row_dim(end.shape) + 1:]
    if not all(isinstance(n, int) for n in after):
        return None
    row_bytes = math.prod(after) * dtype(end.dtype).nbytes
    most = rows if isinstance(rows, int) else p.ranges.get(id(rows), (None, None))[1]
    if most is None:  # rows is an expression in α, not one attribute
        return None
    for k in closure:
        kt = view.type(k)
        if kt.rank == 1 and not kt.dtype.is_pred and kt.dtype.nbytes * kt.shape[0] == most * row_bytes:
            return k, (True if isinstance(rows, int) else _Fact(rows, most))
    return None


_CLOSURES: WeakKeyDictionary = WeakKeyDictionary()


def view_closure(view: View, c: ClassId) -> list[ClassId]:
    """``c`` and the classes it is a view of through reshape / bitcast-convert nodes
    (breadth first, at most MAX_CLOSURE), in this snapshot."""
    cache = _CLOSURES.setdefault(view, {})
    if c not in cache:
        out, seen, k = [c], {c}, 0
        while k < len(out) and len(out) < MAX_CLOSURE:
            for n in view.nodes(out[k]):
                x = n.children[0] if n.op in VIEWS else None
                if x is not None and x not in seen and not view.type(x).dtype.is_pred:
                    seen.add(x)
                    out.append(x)
            k += 1
        cache[c] = out[:MAX_CLOSURE]
    return cache[c]


def view_term(x: Term | Class, src: TensorType, dst: TensorType) -> Term | Class:
    """``x`` (of type ``src``) reinterpreted as ``dst``: the tensor of type dst with x's
    row-major bytes, by reshape and bitcast-convert."""

    def reshape(y: Term | Class, yt: TensorType, shape: tuple[int, ...]) -> tuple[Term | Class, TensorType]:
        if yt.shape == shape:
            return y, yt
        nt = TensorType(yt.dtype, shape)
        return Term("reshape", nt, (y,)), nt

    if src.dtype == dst.dtype:
        return reshape(x, src, dst.shape)[0]
    ws, wd = src.dtype.nbytes, dst.dtype.nbytes
    if ws == wd:
        y, yt = reshape(x, src, dst.shape)
        return Term("bitcast-convert", TensorType(dst.dtype, yt.shape), (y,))
    if ws > wd:
        bt = TensorType(dst.dtype, src.shape + (ws // wd,))
        return reshape(Term("bitcast-convert", bt, (x,)), bt, dst.shape)[0]
    y, _ = reshape(x, src, dst.shape + (wd // ws,))
    return Term("bitcast-convert", dst, (y,))


def _zero_skips(p: Pattern, i: int) -> list[tuple[int, int, tuple[int, ...]]]:
    """Integer add(x, y) where x is a parameter seen through views and slices that the
    instruction overwrites in place (an accumulator): with that parameter all zeros, x is
    zero and the add is y. Returns (y, the parameter, x's nodes). Exact for integers only (for floats,
    +0 + -0 is +0). Only where no instruction of the target computes y itself (AMX has no
    matmul that does not accumulate; Gemmini's compute_ws is compute_ws_acc without it)."""
    if i not in p.zskips:
        p.zskips[i] = [z for z in _zero_skips_of(p, i) if structure(p, z[0]) not in p.plain]
    return p.zskips[i]


def structure(p: Pattern, i: int) -> tuple:
    """The operators and element types of the pattern below node ``i`` (parameters by type)."""
    pn = p.nodes[i]
    if pn.param is not None:
        return ("param", pn.dtype)
    return (pn.op, pn.dtype) + tuple(structure(p, k) for k in pn.children)


def _zero_skips_of(p: Pattern, i: int) -> list[tuple[int, int, tuple[int, ...]]]:
    pn = p.nodes[i]
    if pn.op != "add" or pn.dtype not in _INT_DTYPES:
        return []
    out = []
    for x, y in ((pn.children[0], pn.children[1]), (pn.children[1], pn.children[0])):
        chain: list[int] = []
        k = x
        while p.users[k] == 1 and p.nodes[k].param is None and p.nodes[k].op in VIEWS | {"slice"}:
            chain.append(k)
            k = p.nodes[k].children[0]
        if p.users[k] == 1 and p.nodes[k].param is not None and p.nodes[k].param == p.ins.alias:
            out.append((y, p.nodes[k].param, tuple(chain + [k])))
    return out


_INT_DTYPES = frozenset({"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"})


@dataclass(frozen=True)
class _Skip:
    child: int  # the pattern node that stands for the skipped one
    facts: tuple  # conditions (over α) under which the skipped op is the identity


def _identity_skips(p: Pattern, pn: PNode) -> list[_Skip]:
    """Ways to read ``pn`` as the identity for some α (Act matches g_θ(α) at a
    concrete α, where e.g. a zero-width pad or a full slice does nothing): the
    op is skipped, and the conditions join the precondition. Operands dropped
    with it (a pad value, concatenated empty pieces) no longer matter."""
    if id(pn) not in p.skips:
        p.skips[id(pn)] = _skips_of(p, pn)
    return p.skips[id(pn)]


def _skips_of(p: Pattern, pn: PNode) -> list[_Skip]:
    if not pn.children:
        return []
    x = p.nodes[pn.children[0]]
    same_shape = tuple(_eq(a, b) for a, b in zip(pn.shape, x.shape)) if len(pn.shape) == len(x.shape) else None
    attrs = dict(pn.attrs)
    if pn.op == "slice" and same_shape is not None:
        facts = same_shape + tuple(_eq(d.start, 0) for d in attrs["slice"]) + tuple(_eq(d.stride, 1) for d in attrs["slice"])
    elif pn.op == "pad" and same_shape is not None:
        facts = same_shape + tuple(_eq(v, 0) for d in attrs["padding"] for v in (d.lo, d.hi, d.interior))
    elif pn.op == "concatenate" and same_shape is not None:
        (dim,) = attrs["dimensions"]
        facts = same_shape + tuple(_eq(p.nodes[k].shape[dim], 0) for k in pn.children[1:])
    elif pn.op == "reshape" and same_shape is not None:
        facts = same_shape
    else:
        return []
    if any(f is False for f in facts):
        return []
    return [_Skip(pn.children[0], tuple(_Fact(f) for f in facts if f is not True))]


def _eq(a: Any, b: Any) -> Any:
    """a == b: a z3 fact when either side is symbolic, else a Python bool."""
    return a == b


def _match_children(p: Pattern, pk: tuple[int, ...], ck: tuple[ClassId, ...], view: View,
                    m: _Match) -> Iterator[_Match]:
    if not pk:
        yield m
        return
    for m1 in _match(p, pk[0], ck[0], view, m):
        yield from _match_children(p, pk[1:], ck[1:], view, m1)


def _attrs_match(pn: PNode, n: ENode, eqs: list) -> bool:
    have = n.attrs
    if set(k for k, _ in pn.attrs) != set(have):
        return False
    return all(_unify(v, have[k], eqs) for k, v in pn.attrs)


def _copy(m: _Match) -> _Match:
    nm = _Match()
    nm.params, nm.views, nm.nodes, nm.eqs = dict(m.params), dict(m.views), dict(m.nodes), list(m.eqs)
    nm.padded = dict(m.padded)
    nm.zeros = set(m.zeros)
    return nm


_fact_key = attrgetter("key")


class AlphaSolver:
    """Solves α from a match's equations plus the generated precondition; cached."""

    def __init__(self, target: TargetDef):
        self.target = target
        self._cache: dict[tuple, dict[str, int] | None] = {}
        self._base: dict[str, tuple[z3.Solver, dict[str, Any]]] = {}

    def solve(self, p: Pattern, eqs: list) -> dict[str, int] | None:
        key = (p.ins.name, frozenset(map(_fact_key, eqs)))
        if key not in self._cache:
            self._cache[key] = self._solve(p, eqs)
        return self._cache[key]

    def _solve(self, p: Pattern, eqs: list) -> dict[str, int] | None:
        s, a = self._precondition(p)
        s.push()  # the match's facts on top of the instruction's own constraints, built once
        try:
            s.add(*(e.z3() for e in eqs))
            if s.check() != z3.sat:
                return None
            model = s.model()
            return {d.name: model.eval(a[d.name], model_completion=True).as_long() for d in p.ins.comp_attrs}
        finally:
            s.pop()

    def _precondition(self, p: Pattern) -> tuple[z3.Solver, dict[str, Any]]:
        """A solver holding the generated precondition of ``p``'s instruction: attribute
        ranges, its constraint e(α, β), every slice inside its buffer."""
        ins = p.ins
        if ins.name not in self._base:
            s = z3.Solver()
            a: dict[str, Any] = dict(p.alpha)
            for d in ins.addr_attrs:
                a[d.name] = z3.Int(f"{ins.name}.{d.name}")
            for d in ins.attrs():
                s.add(a[d.name] >= d.lo, a[d.name] <= d.hi)
            s.add(ins.e(a, _Z3))
            for sl, (starts, lengths) in zip((ins.output,) + ins.inputs, ins.h(a, _Z3)):
                dims = self.target.buffers[sl.buffer].access_shape
                for st, ln, dim in zip(starts, lengths, dims):
                    s.add(st >= 0, ln >= 1, st + ln <= dim)
            self._base[ins.name] = (s, a)
        return self._base[ins.name]


def isa_rules(target: TargetDef) -> tuple[list[Rule], list[Pattern]]:
    """One rule per instruction: g_θ -> θ."""
    solver = AlphaSolver(target)
    patterns = [compile_pattern(target, ins) for ins in target.instructions.values()]
    plain = frozenset(structure(p, p.root) for p in patterns)
    for p in patterns:
        p.plain = plain
    rules = []
    for p in patterns:
        rules.append(Rule(f"isa:{p.ins.name}", root_ops(p), frozenset({PII_PREFIX + p.ins.name}),
                          _applier(p, solver), doc=f"g_{p.ins.name} -> {p.ins.name}", watch_operands=WATCH_DEPTH,
                          accepts=_root_type(p)))
    rules += [r for p in patterns if (r := leading_rows_rule(target, p)) is not None]
    return rules, patterns


def leading_rows_rule(target: TargetDef, p: Pattern) -> Rule | None:
    """For an instruction that writes a fixed number of buffer rows, zeros past the ones its
    attributes name (AMX tileloadd: a whole tile of 16 rows, rows past ``rows`` zero): a
    value of fewer rows is the leading rows of itself padded with zeros to the instruction's
    result, x = slice(view(concat(x', 0))) with x' a view of x in the semantics' concatenated
    form. The instruction then matches the padded value, and slice^H, a data slice of the
    buffer, gives the rows (a tile store of 8 rows reads tmm[t : 1, 0 : 8] of a tile loaded
    with rows = 8). None for an instruction whose result is not so."""
    root = p.nodes[p.root]
    k = p.root
    while p.nodes[k].op in VIEWS and p.nodes[k].param is None:
        k = p.nodes[k].children[0]
    cat = p.nodes[k]
    buf = target.buffers[p.ins.output.buffer]
    m = len(buf.access_shape)
    if cat.op != "concatenate" or len(cat.children) != 2 or not _is_zeros(p, cat.children[1]) or \
            not all(isinstance(n, int) for n in root.shape + cat.shape):
        return None
    (d,) = dict(cat.attrs)["dimensions"]
    if any(n != 1 for n in cat.shape[:d]):  # the leading rows are a prefix of the bytes
        return None
    cat_t = TensorType(dtype(cat.dtype), cat.shape)
    root_t = TensorType(dtype(root.dtype), root.shape)
    per_row = cat_t.dtype.nbytes * math.prod(cat.shape[d + 1:])

    def short_dim(t: TensorType) -> int | None:
        """The one access dimension along which ``t`` has fewer rows than the root, its
        rows then a prefix of the root's bytes; None when there is no such dimension."""
        if t.dtype != root_t.dtype or t.rank != root_t.rank:
            return None
        diff = [e for e in range(t.rank) if t.shape[e] != root.shape[e]]
        ok = len(diff) == 1 and diff[0] < m and t.shape[diff[0]] < root.shape[diff[0]] and \
            all(n == 1 for n in t.shape[:diff[0]])
        return diff[0] if ok else None

    def apply(view: View, c: ClassId, node: ENode) -> Iterator[Term]:
        t = view.type(c)
        e = short_dim(t)
        nbytes = t.dtype.nbytes * math.prod(t.shape)
        if e is None or nbytes % per_row:
            return
        part = TensorType(cat_t.dtype, tuple(nbytes // per_row if i == d else n for i, n in enumerate(cat.shape)))
        x = next((Class(q) for q in view_closure(view, c) if view.type(q) == part), None)
        x = x if x is not None else view_term(Class(c), t, part)
        rest = TensorType(cat_t.dtype, tuple(cat.shape[d] - part.shape[d] if i == d else n
                                             for i, n in enumerate(cat.shape)))
        zeros = Term("broadcast", rest, (zero_term(rest.dtype),), {"dimensions": ()})
        padded = view_term(Term("concatenate", cat_t, (x, zeros), {"dimensions": (d,)}), cat_t, root_t)
        spec = tuple(SliceDim(0, t.shape[e] if i == e else n, 1) for i, n in enumerate(root.shape))
        yield Term("slice", t, (padded,), {"slice": spec})

    return Rule(f"leading-rows:{p.ins.name}", frozenset({ANY}), frozenset({"slice", "concatenate", "broadcast"}),
                apply, doc=leading_rows_rule.__doc__ or "", accepts=lambda t: short_dim(t) is not None)


def _is_zeros(p: Pattern, i: int) -> bool:
    """Is pattern node ``i`` a broadcast of the constant 0?"""
    n = p.nodes[i]
    if n.op != "broadcast":
        return False
    c = p.nodes[n.children[0]]
    lit = dict(c.attrs).get("literal")
    return c.op == "constant" and lit is not None and not lit.shape and not lit.array.any()


def reached(p: Pattern, below: Callable[[PNode], Iterable[int]]) -> Iterator[int]:
    """The pattern's nodes from its root down, each once, going from a node to the nodes
    ``below`` gives for it."""
    stack, seen = [p.root], set()
    while stack:
        k = stack.pop()
        if k in seen:
            continue
        seen.add(k)
        yield k
        stack.extend(below(p.nodes[k]))


def root_ops(p: Pattern) -> frozenset[str]:
    """Operators a class must have for the pattern to match there: the root's, and
    those reached by skipping identity ops; ANY when a skip reaches a parameter."""
    ops: set[str] = set()
    for i in reached(p, lambda pn: [skip.child for skip in _identity_skips(p, pn)]):
        pn = p.nodes[i]
        if pn.param is not None:
            return frozenset({ANY})
        ops.add(pn.op)
        if pn.op in VIEWS:  # matched modulo views: any view node leads into the closure
            ops |= VIEWS
    return frozenset(ops)


def _root_type(p: Pattern) -> Callable[[TensorType], bool]:
    """Whether a class of this type can be the pattern's root: its element type, rank and
    concrete extents (identity skips keep the type, so every match has the root's)."""
    root = p.nodes[p.root]
    fixed = tuple((d, n) for d, n in enumerate(root.shape) if isinstance(n, int))

    def accepts(t: TensorType) -> bool:
        return t.dtype.name == root.dtype and t.rank == len(root.shape) and all(t.shape[d] == n for d, n in fixed)

    return accepts


def _applier(p: Pattern, solver: AlphaSolver):  # noqa: ANN202
    ins = p.ins
    fits = _root_type(p)

    def apply(view: View, c: ClassId, node: ENode) -> Iterator[Term]:
        if not fits(view.type(c)):
            return
        seen = set()
        for k, m in enumerate(_match(p, p.root, c, view, _Match())):
            if k >= MAX_MATCHES:
                break
            alpha = solver.solve(p, m.eqs)
            if alpha is None:
                continue
            key = (tuple(sorted(m.params.items())), tuple(sorted(m.views.items())), tuple(sorted(m.zeros)),
                   tuple(sorted(m.padded.items())), tuple(sorted(alpha.items())))
            if key in seen:
                continue
            seen.add(key)
            yield Term(PII_PREFIX + ins.name, view.type(c), _operands(solver.target, p, alpha, m, view),
                       {**alpha, "buffer": ins.output.buffer})

    return apply


def _operands(target: TargetDef, p: Pattern, alpha: dict[str, int], m: _Match,
              view: View) -> tuple[Term | Class, ...]:
    """The pii's operands: bound classes; views of classes; classes padded with zeros;
    zeros for an accumulator started from zero; and ``undef`` for a parameter left
    unbound by a skipped identity op, or one no byte of the result comes from at α
    (``unread``), which has no influence on the result (whatever the slice holds)."""
    ins = p.ins
    unread = unread_parameters(target, ins, alpha)
    if len(m.params) == len(ins.inputs) and not unread:
        return tuple(Class(m.params[i]) for i in range(len(ins.inputs)))
    types = target.semantics(ins, alpha).parameter_types
    out: list[Term | Class] = []
    for i, t in enumerate(types):
        if i in unread:  # whatever the kernel holds there, the instruction does not read it
            out.append(Term(UNDEF, t))
        elif i in m.params:
            out.append(Class(m.params[i]))
        elif i in m.views:
            out.append(view_term(Class(m.views[i]), view.type(m.views[i]), t))
        elif i in m.padded:
            out.append(_padded_term(p, alpha, *m.padded[i], view, t))
        elif i in m.zeros:
            out.append(Term("broadcast", t.with_layout(None), (zero_term(t.dtype),), {"dimensions": ()}))
        else:
            out.append(Term(UNDEF, t))
    return tuple(out)


def _padded_term(p: Pattern, alpha: dict[str, int], k: ClassId, j: int, view: View, t: TensorType) -> Term:
    """The parameter (type ``t``) whose leading part, slice node ``j`` at α, is class
    ``k``: k in the shape of the slice, then zeros concatenated along each dimension the
    slice cuts (innermost first), viewed as the parameter."""
    sl = p.nodes[j]
    part, whole = _extents(p, j, alpha), _extents(p, sl.children[0], alpha)
    kt = view.type(k)
    shape = list(part)
    x: Term | Class = view_term(Class(k), kt, TensorType(kt.dtype, part))
    zero = zero_term(kt.dtype)
    for d in reversed(range(len(part))):
        if part[d] == whole[d]:
            continue
        rest = TensorType(kt.dtype, tuple(whole[d] - part[d] if e == d else n for e, n in enumerate(shape)))
        shape[d] = whole[d]
        x = Term("concatenate", TensorType(kt.dtype, tuple(shape)),
                 (x, Term("broadcast", rest, (zero,), {"dimensions": ()})), {"dimensions": (d,)})
    return view_term(x, TensorType(kt.dtype, tuple(shape)), t.with_layout(None))


def _extents(p: Pattern, i: int, alpha: dict[str, int]) -> tuple[int, ...]:
    """Pattern node ``i``'s shape at α (z3 evaluates each symbolic extent once per α)."""
    key = (i, tuple(sorted(alpha.items())))
    if key not in p.extents:
        subst = [(p.alpha[name], z3.IntVal(v)) for name, v in alpha.items() if name in p.alpha]
        p.extents[key] = tuple(n if isinstance(n, int) else z3.simplify(z3.substitute(n, *subst)).as_long()
                               for n in p.nodes[i].shape)
    return p.extents[key]


def narrowest_stores(target: TargetDef, patterns: list[Pattern]) -> dict[int, int]:
    """Per element width in bytes, the fewest bytes of a row that an instruction writing
    HBM writes of values that wide, its attributes at their least (Gemmini's mvout_acc32: a
    row of DIM s32, 64 bytes; AMX's vmovups_store: one float). A tile that is part of an
    output row is stored so, so a narrower one cannot be written: the tiled search does
    not try it (Gemmini fuzz kernels spent their time on s32 columns of 8, 4, 2 and 1).
    Widths no such instruction writes are absent (nothing is pruned for them)."""
    out: dict[int, int] = {}
    for p in patterns:
        if not target.buffers[p.ins.output.buffer].is_hbm:
            continue
        least = [(v, z3.IntVal(p.ranges[id(v)][0])) for v in p.alpha.values() if id(v) in p.ranges]
        for k in reached(p, lambda n: n.children if n.param is None and n.op in DATA_OPS else ()):
            n = p.nodes[k]
            if n.param is not None and target.buffers[p.ins.inputs[n.param].buffer].is_hbm:
                continue  # the bytes a read-modify-write store keeps
            width = dtype(n.dtype).nbytes
            extent = _least(n.shape[-1], least) if n.shape else None
            if extent:
                out[width] = min(out.get(width, extent * width), extent * width)
    return out


def store_writes(narrowest: Mapping[int, int], width: int, nbytes: int) -> bool:
    """Whether a store writes a row of ``nbytes`` bytes of values ``width`` bytes wide
    (``narrowest``: ``narrowest_stores``; a width absent there prunes nothing)."""
    return nbytes >= narrowest.get(width, 0)


def _least(e, least) -> int | None:  # noqa: ANN001  (an int or a z3 expression in α)
    if isinstance(e, int):
        return e
    v = z3.simplify(z3.substitute(e, *least)) if least else z3.simplify(e)
    return v.as_long() if z3.is_int_value(v) else None
