"""IR-to-ISA rules g_θ -> θ (Act §5.2.2), generated from a target's instructions.

The left-hand side is the instruction's semantics g_θ(α) with α symbolic: its
operators and α-free attributes are matched structurally, and every shape and
α-dependent attribute of the matched nodes becomes an equation between an
expression in α and a concrete number. z3 solves the equations together with
the attribute ranges and ∃β e(α, β) with every slice inside its buffer (the
generated precondition, Fig. 35). A solution gives the pii θ_{α,?}, whose
children are the classes bound to the semantics' parameters, in input order.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import z3

from ..hlo import parse_module
from ..ir.graph import Instruction, Module
from ..ir.types import TensorType
from ..symbolic import Z3Algebra
from ..target import InstructionDef, TargetDef
from .convert import reducer_name
from .egraph import ClassId
from .rules import ANY, Rule
from .terms import PII_PREFIX, Class, ENode, Term, View

UNDEF = "undef"
MAX_MATCHES = 32  # bindings tried per (instruction, class); enough for DAG-shaped patterns
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
    return Pattern(ins, alpha, nodes, index[comp.root], ops)


def _pattern_attrs(module: Module, inst: Instruction) -> tuple[tuple[str, Any], ...]:
    attrs = dict(inst.attrs)
    attrs.pop("parameter_number", None)
    if "to_apply" in attrs:
        attrs["to_apply"] = reducer_name(module, attrs["to_apply"])
    return tuple(sorted(attrs.items()))


class _Match:
    """Bindings of one match: parameter -> class, and equations over α."""

    def __init__(self) -> None:
        self.params: dict[int, ClassId] = {}
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


def _unify(sym: Any, val: Any, eqs: list) -> bool:
    """Equal as data, or record equations where ``sym`` is symbolic."""
    if not _symbolic(sym):
        return sym == val
    if isinstance(sym, z3.ExprRef):
        if not isinstance(val, int):
            return False
        eqs.append(sym == val)
        return True
    if isinstance(sym, tuple | list) and isinstance(val, tuple | list):
        return len(sym) == len(val) and all(_unify(a, b, eqs) for a, b in zip(sym, val))
    return type(sym) is type(val) and all(_unify(getattr(sym, f), getattr(val, f), eqs)
                                          for f in sym.__dataclass_fields__)


def _match(p: Pattern, i: int, c: ClassId, view: View, m: _Match, under_reshape: bool = False) -> Iterator[_Match]:
    """Bindings under which pattern node ``i`` computes class ``c``. Below a
    reshape, a pattern reshape may be folded away: reshape(reshape(y)) == reshape(y)."""
    pn = p.nodes[i]
    if under_reshape and pn.op == "reshape":
        yield from _match(p, pn.children[0], c, view, m, True)
    if i in m.nodes:
        if m.nodes[i] == c:
            yield m
        return
    for skip in _identity_skips(p, pn):
        nm = _copy(m)
        nm.eqs += skip.facts
        nm.nodes[i] = c  # an identity: its value is its operand's
        yield from _match(p, skip.child, c, view, nm, under_reshape)
    t = view.type(c)
    if t.dtype.name != pn.dtype or len(t.shape) != len(pn.shape):
        return
    if pn.param is not None:
        eqs = list(m.eqs)
        if not _unify(pn.shape, t.shape, eqs):
            return
        nm = _copy(m)
        nm.eqs, nm.params[pn.param], nm.nodes[i] = eqs, c, c
        yield nm
        return
    for n in view.nodes(c):
        if n.op != pn.op or len(n.children) != len(pn.children):
            continue
        eqs = list(m.eqs)
        if not _unify(pn.shape, t.shape, eqs) or not _attrs_match(pn, n, eqs):
            continue
        nm = _copy(m)
        nm.eqs, nm.nodes[i] = eqs, c
        yield from _match_children(p, pn.children, n.children, view, nm, pn.op == "reshape")


@dataclass(frozen=True)
class _Skip:
    child: int  # the pattern node that stands for the skipped one
    facts: tuple  # conditions (over α) under which the skipped op is the identity


def _identity_skips(p: Pattern, pn: PNode) -> list[_Skip]:
    """Ways to read ``pn`` as the identity for some α (Act matches g_θ(α) at a
    concrete α, where e.g. a zero-width pad or a full slice does nothing): the
    op is skipped, and the conditions join the precondition. Operands dropped
    with it (a pad value, concatenated empty pieces) no longer matter."""
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
    return [_Skip(pn.children[0], tuple(f for f in facts if f is not True))]


def _eq(a: Any, b: Any) -> Any:
    """a == b: a z3 fact when either side is symbolic, else a Python bool."""
    return a == b


def _match_children(p: Pattern, pk: tuple[int, ...], ck: tuple[ClassId, ...], view: View,
                    m: _Match, under_reshape: bool = False) -> Iterator[_Match]:
    if not pk:
        yield m
        return
    for m1 in _match(p, pk[0], ck[0], view, m, under_reshape):
        yield from _match_children(p, pk[1:], ck[1:], view, m1, under_reshape)


def _attrs_match(pn: PNode, n: ENode, eqs: list) -> bool:
    have = n.attrs
    if set(k for k, _ in pn.attrs) != set(have):
        return False
    return all(_unify(v, have[k], eqs) for k, v in pn.attrs)


def _copy(m: _Match) -> _Match:
    nm = _Match()
    nm.params, nm.nodes, nm.eqs = dict(m.params), dict(m.nodes), list(m.eqs)
    return nm


class AlphaSolver:
    """Solves α from a match's equations plus the generated precondition; cached."""

    def __init__(self, target: TargetDef):
        self.target = target
        self._cache: dict[tuple, dict[str, int] | None] = {}

    def solve(self, p: Pattern, eqs: list) -> dict[str, int] | None:
        key = (p.ins.name, tuple(sorted(set(str(e) for e in eqs))))
        if key not in self._cache:
            self._cache[key] = self._solve(p, eqs)
        return self._cache[key]

    def _solve(self, p: Pattern, eqs: list) -> dict[str, int] | None:
        ins = p.ins
        s = z3.Solver()
        a: dict[str, Any] = dict(p.alpha)
        for d in ins.addr_attrs:
            a[d.name] = z3.Int(f"{ins.name}.{d.name}")
        for d in ins.attrs():
            s.add(a[d.name] >= d.lo, a[d.name] <= d.hi)
        s.add(*eqs)
        s.add(ins.e(a, _Z3))
        for sl, (starts, lengths) in zip((ins.output,) + ins.inputs, ins.h(a, _Z3)):
            dims = self.target.buffers[sl.buffer].access_shape
            for st, ln, dim in zip(starts, lengths, dims):
                s.add(st >= 0, ln >= 1, st + ln <= dim)
        if s.check() != z3.sat:
            return None
        model = s.model()
        return {d.name: model.eval(a[d.name], model_completion=True).as_long() for d in ins.comp_attrs}


def isa_rules(target: TargetDef) -> tuple[list[Rule], list[Pattern]]:
    """One rule per instruction: g_θ -> θ."""
    solver = AlphaSolver(target)
    patterns = [compile_pattern(target, ins) for ins in target.instructions.values()]
    rules = []
    for p in patterns:
        rules.append(Rule(f"isa:{p.ins.name}", root_ops(p), frozenset({PII_PREFIX + p.ins.name}),
                          _applier(p, solver), doc=f"g_{p.ins.name} -> {p.ins.name}"))
    return rules, patterns


def root_ops(p: Pattern) -> frozenset[str]:
    """Operators a class must have for the pattern to match there: the root's, and
    those reached by skipping identity ops; ANY when a skip reaches a parameter."""
    ops: set[str] = set()
    stack, seen = [p.root], set()
    while stack:
        i = stack.pop()
        if i in seen:
            continue
        seen.add(i)
        pn = p.nodes[i]
        if pn.param is not None:
            return frozenset({ANY})
        ops.add(pn.op)
        stack.extend(skip.child for skip in _identity_skips(p, pn))
    return frozenset(ops)


def _applier(p: Pattern, solver: AlphaSolver):  # noqa: ANN202
    ins = p.ins

    def apply(view: View, c: ClassId, node: ENode) -> Iterator[Term]:
        seen = set()
        for k, m in enumerate(_match(p, p.root, c, view, _Match())):
            if k >= MAX_MATCHES:
                break
            alpha = solver.solve(p, m.eqs)
            if alpha is None:
                continue
            key = (tuple(sorted(m.params.items())), tuple(sorted(alpha.items())))
            if key in seen:
                continue
            seen.add(key)
            yield Term(PII_PREFIX + ins.name, view.type(c), _operands(solver.target, ins, alpha, m.params),
                       {**alpha, "buffer": ins.output.buffer})

    return apply


def _operands(target: TargetDef, ins: type[InstructionDef], alpha: dict[str, int],
              params: dict[int, ClassId]) -> tuple[Term | Class, ...]:
    """The pii's operands; a parameter left unbound by a skipped identity op has
    no influence on the result and becomes ``undef`` (whatever the slice holds)."""
    if len(params) == len(ins.inputs):
        return tuple(Class(params[i]) for i in range(len(ins.inputs)))
    types = target.semantics(ins, alpha).parameter_types
    return tuple(Class(params[i]) if i in params else Term(UNDEF, types[i]) for i in range(len(ins.inputs)))


def input_buffers(target: TargetDef, node: ENode) -> tuple[str, ...]:
    """The buffer each child of a pii node must be in."""
    ins = target.instructions[node.instr]
    return tuple(s.buffer for s in ins.inputs)
