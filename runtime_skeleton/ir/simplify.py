"""Nodes that do nothing, removed before compilation (a part of XLA's algebraic simplifier).

JAX writes ``broadcast_to(sum(x, axis=1, keepdims=True), s)`` as a reshape of the sums to
[m, 1], a broadcast of that onto its own shape, a reshape back to [m] and the broadcast
that widens it. The e-graph has the same identities (``broadcast-noop``, ``reshape-reshape``),
but each is a round of phase 1 over the whole kernel; a rule that reads the sums through the
broadcast (``broadcast-sums-dot``) fires only after them, when the other rules have grown the
e-graph severalfold. Here:

- a reshape of a reshape reads the inner reshape's operand, and an integer reduce whose
  operator is commutative and associative (a wrapping sum, a product, a maximum, a minimum, a
  bitwise and, or, xor) of a reverse along reduced dimensions only reads what is reversed;
- a broadcast onto its operand's own shape along every dimension in order, and a reshape to
  its operand's own shape, are their operand;
- so are a negation of a negation, a maximum or minimum of a value with itself or with the
  same operator's result on it (max(max(x, y), y)), and, for integers, a maximum of a value
  with a minimum of it (max(x, min(x, y)) = x) and the reverse (random kernels of Act's
  operators are full of them; the rules know the first ones, not the lattice's absorption);
- by the integer values' ranges (``ranges``): a clamp, maximum or minimum is the operand the
  ranges show it returns (max(x, c) when every x >= c; clip(convert(s8), -128, 127)), also
  through one step of order (min(x + d, x) = x when d >= 0 and the sum does not wrap), and a
  value whose range is one number (a clip to [1, 5] clipped to [-5, -3]; x - x) is that
  constant. A clamp chain feeding a narrowing integer convert stays: with it the convert
  saturates, which instructions compute (Gemmini's mvout); without it the convert would wrap,
  which equals it only on the ranges;
- an instruction computing what an earlier one computes (the same operator, type, attributes
  and operands, integer operands of a commutative operator in either order) is that one
  (XLA's HloCSE): max(x, y) - max(y, x) is then x - x, the constant 0.

The kernel's root stays, as a copy.

The values are the same bit for bit; programs are still checked against the kernel as written.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .attrs import Literal
from .graph import Computation, Instruction, Module, combiner
from .ops import ALL_OPS, COMMUTATIVE
from .ranges import Range, exact, type_range, value_ranges
from .types import TensorType


def simplified(module: Module) -> Module:
    """``module`` with its entry computation's nodes that do nothing removed (the module itself
    when it has none)."""
    comp = module.entry_computation
    alias: dict[str, str] = {}
    made: dict[str, Instruction] = {}
    order = _Order(module, made)
    kept = _saturating(comp)
    first: dict[tuple, str] = {}  # the first instruction computing each value (common subexpressions)
    for name in comp.operands_first():
        inst = comp[name]
        ops = tuple(alias.get(o, o) for o in inst.operands)
        if inst.opcode == "reshape" and made[ops[0]].opcode == "reshape":
            ops = made[ops[0]].operands
        elif inst.opcode == "reduce" and _unreversed(module, inst, made[ops[0]]):
            ops = made[ops[0]].operands + ops[1:]
        if ops != inst.operands:
            inst = dataclasses.replace(inst, operands=ops)
        same = _same_as(inst, made)
        if same is None and inst.name not in kept:
            same = _same_by_order(inst, order)
        key = _value_key(inst)
        if same is None and key is not None:
            same = first.get(key)
        if same is not None:
            if inst.name != comp.root:
                alias[inst.name] = same
                continue
            inst = Instruction(inst.name, "copy", inst.type, (same,), {}, inst.loc)
        value = order.constant(inst)
        if value is not None:
            made[value.name] = value
            inst = Instruction(inst.name, "broadcast", inst.type, (value.name,), {"dimensions": ()}, inst.loc)
        made[inst.name] = inst
        if key is not None and inst.opcode != "copy":
            for k in {key, _value_key(inst)} - {None}:
                first.setdefault(k, inst.name)
    if not alias and all(n in comp and made[n] is comp[n] for n in made):
        return module
    return module.with_entry(list(made.values()), comp.root)  # operands first


def _value_key(inst: Instruction) -> tuple | None:
    """What ``inst`` computes, names of its operands included (XLA's HloCSE): equal keys, equal
    values. Integer operands of a commutative operator in a fixed order (for floats the order
    can change a NaN's payload or the sign of a zero maximum)."""
    if inst.opcode not in ALL_OPS or inst.opcode == "parameter":
        return None
    ops = inst.operands
    if inst.opcode in COMMUTATIVE and isinstance(inst.type, TensorType) and not inst.type.dtype.is_float:
        ops = tuple(sorted(ops))
    return inst.opcode, inst.type, ops, tuple(inst.attrs.items())


def _unreversed(module: Module, inst: Instruction, operand: Instruction) -> bool:
    """Whether ``inst`` is an integer reduce that does not see the order its reverse
    ``operand`` changes."""
    if inst.opcode != "reduce" or len(inst.operands) != 2 or operand.opcode != "reverse":
        return False
    t = inst.type
    if not isinstance(t, TensorType) or not t.dtype.is_int or \
            combiner(module.computations.get(inst.attrs.get("to_apply", ""))) not in COMMUTATIVE:
        return False
    return set(operand.attrs["dimensions"]) <= set(inst.attrs["dimensions"])


def _same_as(inst: Instruction, made: dict[str, Instruction]) -> str | None:
    """The operand (or one below it) whose value ``inst`` has, if one of the identities holds."""
    ops = inst.operands
    if inst.opcode in ("reshape", "broadcast") and made[ops[0]].type == inst.type and \
            (inst.opcode == "reshape" or tuple(inst.attrs["dimensions"]) == tuple(range(inst.type.rank))):
        return ops[0]
    if inst.opcode == "negate" and made[ops[0]].opcode == "negate":
        return made[ops[0]].operands[0]
    if inst.opcode not in ("maximum", "minimum"):
        return None
    if ops[0] == ops[1]:
        return ops[0]
    dual = "minimum" if inst.opcode == "maximum" else "maximum"
    ints = isinstance(inst.type, TensorType) and inst.type.dtype.is_int
    for k in (0, 1):
        inner, other = made[ops[k]], ops[1 - k]
        if inner.opcode == inst.opcode and other in inner.operands:
            return ops[k]  # max(max(x, y), y) = max(x, y)
        if ints and inner.opcode == dual and other in inner.operands:
            return other  # max(x, min(x, y)) = x
    return None


class _Order:
    """What the value ranges prove about the values made so far (by name)."""

    def __init__(self, module: Module, made: dict[str, Instruction]) -> None:
        self.module, self.made = module, made
        self.ranges: dict[str, Range] = value_ranges(module)

    def at_least(self, a: str, b: str) -> bool:
        """Whether every element of ``a`` is >= the same element of ``b``, on every input."""
        if a == b:
            return True
        ra, rb = self.ranges.get(a), self.ranges.get(b)
        if ra is None or rb is None:
            return False
        if ra[0] >= rb[1]:
            return True
        x, y = self.made[a], self.made[b]
        return (x.opcode == "maximum" and b in x.operands) or (y.opcode == "minimum" and a in y.operands) or \
            self._offset(x, b, lambda d: d[0] >= 0) or self._offset(y, a, lambda d: d[1] <= 0)

    def _offset(self, s: Instruction, base: str, sign) -> bool:  # noqa: ANN001
        """``s`` is ``base`` plus (minus) a value of ``sign`` and does not wrap."""
        ops = s.operands
        if s.opcode == "add" and base in ops:
            d = ops[1] if ops[0] == base else ops[0]
        elif s.opcode == "subtract" and ops[0] == base:
            d = ops[1]
            r = self.ranges.get(d)
            return r is not None and sign((-r[1], -r[0])) and self._exact(s)
        else:
            return False
        r = self.ranges.get(d)
        return r is not None and sign(r) and self._exact(s)

    def _exact(self, s: Instruction) -> bool:
        comp = self.module.entry_computation
        return exact(self.module, comp, s, self.ranges)

    def constant(self, inst: Instruction) -> Instruction | None:
        """The scalar constant an integer value always equals, when it is computed (not
        already a constant or its broadcast)."""
        t = inst.type
        if not isinstance(t, TensorType) or not t.dtype.is_int or inst.opcode in ("constant", "parameter"):
            return None
        if inst.opcode == "broadcast" and self.made[inst.operands[0]].opcode == "constant":
            return None
        r = self.ranges.get(inst.name)
        zero = inst.opcode == "subtract" and inst.operands[0] == inst.operands[1]
        if (r is None or r[0] != r[1]) and not zero:
            return None
        v = 0 if zero else r[0]  # type: ignore[index]
        name = f"{inst.name}.value"
        while name in self.made or name in self.module.entry_computation:
            name += "_"
        self.ranges[name] = (v, v)
        return Instruction(name, "constant", TensorType(t.dtype, ()), (),
                           {"literal": Literal(t.dtype, np.array(v, t.dtype.np))}, inst.loc)


def _same_by_order(inst: Instruction, order: _Order) -> str | None:
    """The operand an integer clamp, maximum or minimum returns, as the value ranges prove."""
    if not isinstance(inst.type, TensorType) or not inst.type.dtype.is_int:
        return None
    ops = inst.operands
    if inst.opcode in ("maximum", "minimum"):
        a, b = ops
        if order.at_least(a, b):
            return a if inst.opcode == "maximum" else b
        if order.at_least(b, a):
            return b if inst.opcode == "maximum" else a
    if inst.opcode == "clamp":
        lo, x, hi = ops
        if order.at_least(x, lo) and order.at_least(hi, x):
            return x
    return None


def _saturating(comp: Computation) -> set[str]:
    """The clamps, maxima and minima whose values reach a narrowing integer convert through
    clamps, maxima and minima only: together they make it a saturating convert."""
    stack = [i.operands[0] for i in comp.instructions if i.opcode == "convert" and _narrows(comp, i)]
    found: set[str] = set()
    while stack:
        n = stack.pop()
        if n in found or comp[n].opcode not in ("clamp", "maximum", "minimum"):
            continue
        found.add(n)
        stack.extend(comp[n].operands)
    return found


def _narrows(comp: Computation, convert: Instruction) -> bool:
    src, dst = comp[convert.operands[0]].type, convert.type
    if not (isinstance(src, TensorType) and isinstance(dst, TensorType) and src.dtype.is_int and dst.dtype.is_int):
        return False
    (s_lo, s_hi), (d_lo, d_hi) = type_range(src), type_range(dst)
    return not (d_lo <= s_lo and s_hi <= d_hi)
