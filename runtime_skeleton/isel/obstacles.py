"""Operators a target can never compute: the kernel is refused before the search, with why.

Phase 1 reaches instructions only by rewriting. Take an operator that

- no instruction's semantics uses (``phase1.target_ops``),
- no rule kept for the target is rooted at (Appendix C.2 filtered it out: nothing it
  could become leads to an instruction), and
- no rule names (``axioms.NAMED_OPS``: every operator a rule matches or builds).

The rules then only ever carry its nodes whole: they push views and splits through it
(``axioms._moved`` rebuilds the same operator), copy it, store and reload it. A pii graph
holds only instructions, so a kernel whose result depends on such a node's value has no
pii graph, however long phase 1 runs. Two things could still remove the node, and both
are ruled out before refusing:

- its value is a compile-time constant (extraction folds constant classes into the
  constant section, Act Fig. 17, and ``elementwise-of-constants`` folds any operator over
  literals, the one rule that removes operators outside NAMED_OPS): only nodes that
  depend on a kernel input count. A node whose operands the rules prove constant though
  they are computed from an input (integer x * 0) would be refused all the same;
- the rules drop it as irrelevant (a slice of a concatenation that misses it, max(x,
  min(x, y))): the reference interpreter replaces the node's value by two different
  random tensors on the same random inputs, and the node counts only if the outputs
  differ.

Products, minima and maxima are the exception to "no rule names it"
(``product_obstacles``): the rules remove a multiply, divide or dot only when an operand is
a constant, and a maximum or minimum only then or when its value is one of its operands'
(``max(x, x)``, ``max(x, min(x, y))``): ``CONSTANT_OPERAND_RULES``. Every other rule at one
keeps it in its result. Such a node of two operands that both vary with the inputs, whose
value is neither operand's, therefore stays one of ``PRODUCTS[op]`` under every rewrite,
and a target none of whose instructions computes one of those of two varying operands
(Gemmini's only maximum is its ReLU's, against the constant 0) cannot compute it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..errors import ActgenError, SourceLoc
from ..ir.dtypes import DTYPES
from ..ir.graph import Computation, Instruction, Module
from ..ir.ops import (ALL_OPS, BINARY_OPS, CONTRACTIONS, DATA_MOVEMENT, PLUMBING, REDUCTIONS, UNARY_OPS,
                      VALUE_MOVES)
from ..ir.types import TensorType, TupleType
from ..reference import evaluate
from ..reference.npz_io import random_inputs
from ..target import TargetDef
from .axioms import NAMED_OPS, elementwise_of_constants
from .isa_rules import reached
from .phase1 import default_rules, target_ops
from .rules import ANY

# operators that compute new values (the rest move, select or convert them)
COMPUTING = (UNARY_OPS | BINARY_OPS | CONTRACTIONS | REDUCTIONS) - {"copy"}
MAX_CHECKS = 8  # dependence checks per kernel (each evaluates it twice)
# What a product, minimum or maximum of two varying operands can become under the rules (a
# dot: an outer product's multiply, dot-outer-product), and the rules that remove one, each
# needing a constant operand or a value equal to an operand's (tests/test_obstacles.py
# checks both against the rules)
PRODUCTS = {"multiply": frozenset({"multiply"}), "divide": frozenset({"divide"}),
            "dot": frozenset({"dot", "multiply"}), "maximum": frozenset({"maximum"}),
            "minimum": frozenset({"minimum"})}
CONSTANT_OPERAND_RULES = frozenset({
    "elementwise-of-constants", "multiply-one", "multiply-negone", "multiply-pow2-shift", "divide-pow2-shift",
    "maximum-as-clamp", "minimum-as-clamp", "maximum-idem", "minimum-idem", "maximum-absorb", "minimum-absorb",
    "dot-zero",
})


@dataclass(frozen=True)
class Obstacle:
    opcode: str
    name: str
    type: TensorType
    loc: SourceLoc | None
    dtype_only: bool = False  # the target computes the operator, but no values of this element type
    no_store: bool = False  # the result holds computed values, and no instruction writes HBM
    product: bool = False  # a product of two operands that vary with the inputs (``product_obstacles``)
    narrow_reads: bool = False  # its operands' values fit no type an instruction reads (``width_obstacles``)
    bound: int | None = None  # a bound it clips at that no instruction clips at (``bound_obstacles``)
    wide_result: bool = False  # an output whose values no instruction computing the operator writes

    def __str__(self) -> str:
        where = f"line {self.loc.line}" if self.loc else "no location"
        return f"{self.opcode} '{self.name}' ({self.type}, {where})"


def kernel_obstacles(target: TargetDef, module: Module) -> list[Obstacle]:
    """Why ``target`` can never compute ``module`` (calls inlined), in the order the
    checks run, the first kind found: no store, an operator no rewrite reaches, float
    values no instruction computes, a product of varying operands. Empty: none known."""
    module = _forwarded(module)
    return (store_obstacles(target, module) or obstacles(target, module)
            or float_obstacles(target, module) or product_obstacles(target, module)
            or width_obstacles(target, module) or bound_obstacles(target, module)
            or result_width_obstacles(target, module))


def unreachable_ops(target: TargetDef) -> frozenset[str]:
    """Operators no rewrite brings to one of ``target``'s instructions (see the module doc)."""
    rules, patterns = default_rules(target)
    rooted = set().union(*(r.roots for r in rules if r is not elementwise_of_constants)) - {ANY}
    return ALL_OPS - NAMED_OPS - target_ops(patterns) - rooted - PLUMBING


def obstacles(target: TargetDef, module: Module) -> list[Obstacle]:
    """The nodes of ``module``'s entry computation (calls inlined beforehand) whose
    operator ``target`` can never compute and on whose value the result depends: one per
    operator, in program order."""
    comp = module.entry_computation
    blocked = unreachable_ops(target)
    variable = _input_dependent(comp)
    found: dict[str, Obstacle] = {}
    checks = 0
    for inst in comp.instructions:
        if inst.opcode not in blocked or inst.opcode in found or inst.name not in variable:
            continue
        if checks == MAX_CHECKS:
            break
        checks += 1
        if isinstance(inst.type, TensorType) and _result_depends_on(module, inst):
            found[inst.opcode] = Obstacle(inst.opcode, inst.name, inst.type, inst.loc)
    return list(found.values())


def product_obstacles(target: TargetDef, module: Module) -> list[Obstacle]:
    """The multiply, divide, dot, minimum and maximum nodes whose two operands both vary
    with the inputs and whose value is neither operand's, on whose value the result
    depends, when no instruction of ``target`` computes, of two varying operands, what the
    rules can turn the node into (``PRODUCTS``): one per operator, in program order. A
    value counts as varying when it differs between two random inputs (one computed from
    the inputs that is constant, x - x, may be proven so by the rules)."""
    computed = binary_ops(default_rules(target)[1])
    comp = module.entry_computation
    candidates = [i for i in _in_order(comp) if i.opcode in PRODUCTS and not PRODUCTS[i.opcode] & computed
                  and isinstance(i.type, TensorType) and len(set(i.operands)) == 2]
    if not candidates:
        return []
    values = _values(module, {n for i in candidates for n in (i.name, *i.operands)})
    found: dict[str, Obstacle] = {}
    for inst in candidates[:MAX_CHECKS]:
        a, b = inst.operands
        if (inst.opcode not in found and _varies(values, a) and _varies(values, b) and inst.name in values
                and not _same(values, inst.name, a) and not _same(values, inst.name, b)
                and _result_depends_on(module, inst)):
            found[inst.opcode] = Obstacle(inst.opcode, inst.name, inst.type, inst.loc, product=True)
    return list(found.values())


# What an integer negation's operand, a subtraction's second one, or a product's varying
# ones can be read by under the rules (negate-as-dot, negate-as-multiply,
# subtract-as-add-negate, dot-outer-product): an instruction's operand of one of these
# operators (tests/test_obstacles.py checks the rules that remove them)
READERS = {"negate": frozenset({"negate", "subtract", "dot", "multiply"}),
           "subtract": frozenset({"negate", "subtract", "dot", "multiply"}),
           "multiply": frozenset({"multiply", "dot"}), "dot": frozenset({"dot", "multiply"})}


def width_obstacles(target: TargetDef, module: Module) -> list[Obstacle]:
    """Integer negations, subtractions and products of varying operands whose values, on
    random inputs, lie outside every integer type that an instruction of ``target`` reads
    as such an operand (``operand_types``): Gemmini negates and multiplies only through
    its array, which reads int8, so the negation of an s32 input is never computed. The
    rules change an operand's type only to one that holds its values (a conversion of a
    narrower value, ``dot-convert-operands-int``), and no rule turns integer arithmetic
    into float arithmetic. Kernels that slice a value are left to the search (a slice of
    the node may need only values that fit). One obstacle per operator, in program order."""
    comp = module.entry_computation
    if any(i.opcode in ("slice", "dynamic-slice", "gather") for i in comp.instructions):
        return []
    reads = operand_types(default_rules(target)[1])
    candidates = [i for i in _in_order(comp) if i.opcode in READERS and isinstance(i.type, TensorType)
                  and i.type.dtype.is_int]
    if not candidates:
        return []
    values = _values(module, {n for i in candidates for n in (i.name, *i.operands)})
    arrays = _arrays(module, set(values))
    found: dict[str, Obstacle] = {}
    for inst in candidates[:4 * MAX_CHECKS]:
        if inst.opcode in found or inst.name not in values or not _varies(values, inst.name):
            continue
        if any(u.opcode == "negate" or (u.opcode == "subtract" and u.operands[1] == inst.name)
               for u in comp.users(inst.name)):
            continue  # negate-negate, subtract-as-add-negate may take it away
        read = inst.operands[-1:] if inst.opcode in ("negate", "subtract") else inst.operands
        types = set().union(*(reads.get(op, set()) for op in READERS[inst.opcode]))
        if all(_varies(values, o) and comp[o].opcode != "negate" and not _fits(arrays[o], types) for o in read) \
                and _result_depends_on(module, inst):
            found[inst.opcode] = Obstacle(inst.opcode, inst.name, inst.type, inst.loc, narrow_reads=True)
    return list(found.values())


# The rules rooted at a maximum, minimum or clamp or building one: each keeps the bounds
# of the node it matched (splits, views and widening move the node whole; clamp-clamp
# keeps the binding one of two), or uses a type's extremes (maximum-as-clamp,
# convert-int-truncate's 2^N - 1, reverse-as-byte-dot's int8 range) or a float bound
# truncated (tests/test_obstacles.py checks the list against the rules)
BOUND_RULES = frozenset({
    "elementwise-of-constants", "transpose-elementwise", "slice-elementwise", "reshape-elementwise",
    "concat-zero-elementwise", "broadcast-elementwise", "clamp-split", "maximum-split", "minimum-split",
    "reduce-split-reduced", "clamp-as-minmax", "maximum-comm", "minimum-comm", "maximum-idem", "minimum-idem",
    "maximum-absorb", "minimum-absorb", "maximum-as-clamp", "minimum-as-clamp", "clamp-clamp",
    "convert-clamped-float-via-int", "minimum-nonnegative-unsigned", "convert-int-truncate", "elementwise-widen",
    "reverse-as-byte-dot",
})


CLIPS = frozenset({"maximum", "minimum", "clamp"})


def result_width_obstacles(target: TargetDef, module: Module) -> list[Obstacle]:
    """Integer maxima, minima and clamps whose values are the kernel's output (through data
    movement only) and, on random inputs spanning their types, fit no chain of integer types
    an instruction computing one writes its result through (``clip_widths``): Gemmini computes
    a maximum only in its ReLU, on the way from the accumulator to int8, so the ReLU of an s32
    matmul is refused unless its values fit int8. The rules keep a maximum, minimum or clamp as
    one of the three (``BOUND_RULES``), so those output values come from such an instruction.
    One obstacle per operator."""
    comp = module.entry_computation
    candidates = [comp[n] for n in _moved_to_output(comp) if comp[n].opcode in CLIPS]
    candidates = [i for i in candidates if isinstance(i.type, TensorType) and i.type.dtype.is_int]
    if not candidates:
        return []
    chains = clip_widths(default_rules(target)[1])
    values = _values(module, {n for i in candidates for n in (i.name, *i.operands)})
    arrays = _arrays(module, {i.name for i in candidates})
    found: dict[str, Obstacle] = {}
    for inst in candidates[:MAX_CHECKS]:
        if inst.opcode in found or not _varies(values, inst.name) or inst.name not in arrays or \
                any(o in values and _same(values, inst.name, o) for o in inst.operands):
            continue
        if not any(all(_fits(arrays[inst.name], {t}) for t in chain) for chain in chains):
            found[inst.opcode] = Obstacle(inst.opcode, inst.name, inst.type, inst.loc, wide_result=True)
    return list(found.values())


def clip_widths(patterns: list) -> set[tuple[str, ...]]:
    """Per instruction path from a maximum, minimum or clamp of integers to the root of its
    semantics: the integer types the value is held in on the way (its own, each convert's);
    the value reaches the instruction's output only where it fits all of them."""
    chains: set[tuple[str, ...]] = set()
    for p in patterns:
        users: dict[int, list[int]] = {}
        for k, n in enumerate(p.nodes):
            for c in n.children:
                users.setdefault(c, []).append(k)
        for k, n in enumerate(p.nodes):
            if n.op in CLIPS and DTYPES[n.dtype].is_int:
                stack = [(k, (n.dtype,))]
                while stack:
                    at, chain = stack.pop()
                    if at == p.root or not users.get(at):
                        chains.add(chain)
                        continue
                    for u in users[at]:
                        un = p.nodes[u]
                        stack.append((u, chain + ((un.dtype,) if un.op == "convert" and DTYPES[un.dtype].is_int
                                                  else ())))
    return chains


def _moved_to_output(comp: Computation) -> list[str]:
    """The instructions whose values the root holds as they are (the root, and below it
    through data movement that keeps values: views of the same type, slices, transposes,
    reverses, broadcasts, concatenations, paddings, copies, tuples)."""
    keeps = VALUE_MOVES | {"tuple"}
    out, stack, seen = [], [comp.root], set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        out.append(n)
        ins = comp[n]
        if ins.opcode in keeps:
            stack.extend(ins.operands[:1] if ins.opcode == "pad" else ins.operands)
    return out


def bound_obstacles(target: TargetDef, module: Module) -> list[Obstacle]:
    """Integer maxima, minima and clamps against a constant bound that no instruction of
    ``target`` clips at, on a target none of whose instructions computes the operator of
    two varying operands (Gemmini clips only at -128, 0 and 127, on its way out of the
    accumulator): ``jnp.clip(x, -7, 0)``. The rules keep a bound's value (``BOUND_RULES``);
    the bounds an instruction may meet are those its semantics clip at and every integer
    type's extremes. A bound counts when dropping it changes the result on random inputs
    (so max(max(x, -7), 0) is judged by its 0 alone). One obstacle per operator."""
    lower, upper = instruction_bounds(target)
    computed = binary_ops(default_rules(target)[1])
    free = {"lower": bool({"maximum", "clamp"} & computed), "upper": bool({"minimum", "clamp"} & computed)}
    if all(free.values()):
        return []
    comp = module.entry_computation
    variable = _input_dependent(comp)
    sides = {"maximum": ("lower",), "minimum": ("upper",), "clamp": ("lower", None, "upper")}

    def unknown(inst: Instruction) -> bool:  # a constant bound, not read as one of the target's without evaluating
        for k, o in enumerate(inst.operands):
            side = sides[inst.opcode][min(k, len(sides[inst.opcode]) - 1)]
            if side is not None and o not in variable and not free[side]:
                value = _literal_scalar(comp, o)
                if value is None or value not in (lower if side == "lower" else upper):
                    return True
        return False

    candidates = [i for i in _in_order(comp) if i.opcode in sides and isinstance(i.type, TensorType)
                  and i.type.dtype.is_int and unknown(i)]
    if not candidates:
        return []
    names = {n for i in candidates for n in (i.name, *i.operands)}
    runs = [(inputs, _runs(module, names, inputs)) for inputs in (random_inputs, _full_range_inputs)]
    types = [p.type for p in comp.parameters]
    args = [[inputs(types, seed) for seed in (0, 1)] for inputs in (random_inputs, _full_range_inputs)]
    before: list = []  # the kernel's outputs on ``args``, evaluated once, when first needed
    found: dict[str, Obstacle] = {}
    for inst in candidates[:MAX_CHECKS]:
        if inst.opcode in found:
            continue
        for side, c, dropped in _bounds(inst, runs):
            if not free[side] and c not in (lower if side == "lower" else upper) \
                    and _result_changes(module, inst, dropped, args, before):
                found[inst.opcode] = Obstacle(inst.opcode, inst.name, inst.type, inst.loc, bound=c)
                break
    return list(found.values())


def _literal_scalar(comp: Computation, name: str) -> int | None:
    """The value of a constant whose elements are all equal, looking through broadcasts."""
    inst = comp[name]
    while inst.opcode == "broadcast":
        inst = comp[inst.operands[0]]
    lit = inst.attrs.get("literal") if inst.opcode == "constant" else None
    if lit is None or lit.array.size == 0 or np.any(lit.array != lit.array.flat[0]):
        return None
    return int(lit.array.flat[0]) if lit.dtype.is_int else None


def instruction_bounds(target: TargetDef) -> tuple[set[int], set[int]]:
    """The lower and upper bounds ``target``'s instructions clip at (a clamp's constant
    bounds, a maximum's or minimum's constant operand), with every integer type's
    extremes (saturating conversions, the rules' clamps of a maximum)."""
    lower = {int(np.iinfo(d.np).min) for d in DTYPES.values() if d.is_int}
    upper = {int(np.iinfo(d.np).max) for d in DTYPES.values() if d.is_int}
    for p in default_rules(target)[1]:
        varying = _varying_nodes(p)

        def const(k: int) -> int | None:
            n = p.nodes[k]
            lit = dict(n.attrs).get("literal") if n.op == "constant" and k not in varying else None
            return int(np.trunc(float(lit.array.flat[0]))) if lit is not None and lit.array.size else None

        for n in p.nodes:
            kids = [const(k) for k in n.children]
            if n.op == "clamp":
                lower |= {kids[0]} - {None}
                upper |= {kids[2]} - {None}
            elif n.op in ("maximum", "minimum"):
                (lower if n.op == "maximum" else upper).update(k for k in kids if k is not None)
    return lower, upper


def _bounds(inst: Instruction, runs: list) -> list[tuple[str, int, list]]:
    """(side, bound, per run the node's value with that bound dropped) for each constant
    bound of ``inst`` (a maximum, minimum or clamp) whose other operand varies."""
    def uniform(name: str) -> int | None:
        vals = [r[name] for _, r in runs if name in r]
        if len(vals) != len(runs) or any(v.size == 0 or np.any(v != v.flat[0]) for pair in vals for v in pair):
            return None
        firsts = {int(v.flat[0]) for pair in vals for v in pair}
        return firsts.pop() if len(firsts) == 1 else None

    def value(name: str) -> list:
        return [r.get(name) for _, r in runs]

    out = []
    if inst.opcode == "clamp":
        lo, x, hi = inst.operands
        if uniform(x) is not None or None in value(x):
            return []
        if (c := uniform(lo)) is not None and None not in value(hi):
            out.append(("lower", c, [[np.minimum(a, b) for a, b in zip(xs, hs)] for xs, hs in zip(value(x), value(hi))]))
        if (c := uniform(hi)) is not None and None not in value(lo):
            out.append(("upper", c, [[np.maximum(a, b) for a, b in zip(xs, ls)] for xs, ls in zip(value(x), value(lo))]))
        return out
    side = "lower" if inst.opcode == "maximum" else "upper"
    for k, o in enumerate(inst.operands[:2]):
        x = inst.operands[1 - k]
        if (c := uniform(o)) is not None and uniform(x) is None and None not in value(x):
            out.append((side, c, value(x)))
    return out


def _result_changes(module: Module, inst: Instruction, values: list, args: list, before: list) -> bool:
    """Do the kernel's outputs on ``args`` (per run, per seed: the inputs ``_bounds`` read)
    change when ``inst``'s value is replaced by ``values`` (laid out alike)? ``before`` holds
    the kernel's own outputs on them, filled on the first call. An evaluation error counts as no."""
    cut = _cut(module, inst)
    try:
        if not before:
            before.extend([[evaluate(module, a) for a in per_seed] for per_seed in args])  # all or none
        for per_seed, olds, vs in zip(args, before, values):
            for a, old, v in zip(per_seed, olds, vs):
                new = evaluate(cut, a + [np.asarray(v, dtype=inst.type.dtype.np).reshape(inst.type.shape)])
                if any(np.asarray(x).tobytes() != np.asarray(y).tobytes() for x, y in zip(old, new)):
                    return True
    except ActgenError:
        return False
    return False


def operand_types(patterns: list) -> dict[str, set[str]]:
    """Per operator, the integer types the instructions read as its operands that depend on
    their inputs, through widening conversions (Gemmini's compute_ws: a dot of int8 values
    converted to s32 reads int8)."""
    out: dict[str, set[str]] = {}
    for p in patterns:
        varying = _varying_nodes(p)
        for n in p.nodes:
            if n.op not in READERS["negate"]:
                continue
            for c in n.children:
                if c not in varying:
                    continue
                while p.nodes[c].op == "convert" and DTYPES[p.nodes[c].dtype].is_int and \
                        DTYPES[p.nodes[p.nodes[c].children[0]].dtype].is_int:
                    c = p.nodes[c].children[0]
                out.setdefault(n.op, set()).add(p.nodes[c].dtype)
    return out


def _fits(a: np.ndarray, types: set[str]) -> bool:
    """The integers ``a`` holds lie within one of ``types`` (float types hold none: no rule
    turns integer arithmetic into float arithmetic)."""
    lo, hi = int(a.min()), int(a.max())
    for t in map(DTYPES.__getitem__, types):
        if t.is_int:
            info = np.iinfo(t.np)
            if info.min <= lo and hi <= info.max:
                return True
    return False


def binary_ops(patterns: list) -> set[str]:
    """Operators the instructions' semantics apply to two operands that both depend on the
    instruction's inputs (a ReLU's maximum against a constant 0 is not one)."""
    out: set[str] = set()
    for p in patterns:
        varying = _varying_nodes(p)
        out |= {n.op for n in p.nodes if sum(c in varying for c in set(n.children)) >= 2}
    return out


def _varying_nodes(p) -> set[int]:  # noqa: ANN001  (a Pattern)
    """The pattern's nodes that depend on an instruction input (operands come before
    their users in ``p.nodes``)."""
    varying: set[int] = set()
    for k, n in enumerate(p.nodes):
        if n.param is not None or any(c in varying for c in n.children):
            varying.add(k)
    return varying


def refusal(target: TargetDef, found: list[Obstacle]) -> str:
    """Why ``target`` cannot run a kernel with these obstacles (located at the first)."""
    if any(o.no_store for o in found):
        return (f"{target.name} cannot run this kernel: its result {found[0]} holds values computed from its "
                f"inputs, and no {target.name} instruction writes HBM (none has its output there), so no program "
                f"can write them; the description needs a store")
    head = f"{target.name} cannot run this kernel: its result depends on " + "; ".join(map(str, found))
    if all(o.dtype_only for o in found):
        types = ", ".join(sorted({o.type.dtype.name for o in found}))
        return (head + f", which computes new {types} values, and no {target.name} instruction writes "
                f"{types} values it computes: {target.name} can only move such values")
    ops = ", ".join(sorted({o.opcode for o in found}))
    if all(o.narrow_reads for o in found):
        return (head + f", whose operands' values fit no integer type a {target.name} instruction reads for {ops}, "
                "and the rewrite rules change an operand's type only to one that holds its values")
    if all(o.wide_result for o in found):
        return (head + f", the kernel's output, whose values fit no integer type a {target.name} instruction computing "
                f"{ops} writes them in (its semantics narrow them on the way out), and the rewrite rules keep "
                f"{ops} as such")
    if all(o.bound is not None for o in found):
        at = ", ".join(str(b) for b in dict.fromkeys(o.bound for o in found))
        return (head + f", which clip{'s' if len(found) == 1 else ''} at {at}; no {target.name} instruction clips "
                f"at that bound nor computes {ops} of two varying operands, and the rewrite rules keep a bound's value")
    if all(o.product for o in found):
        reach = " or ".join(sorted(set().union(*(PRODUCTS[o.opcode] for o in found))))
        return (head + f", whose operands both vary with the inputs; no {target.name} instruction computes "
                f"{reach} of two such operands, and the rewrite rules remove one only when an operand is a "
                f"constant or equal to its result")
    return (head + f", and no {target.name} instruction computes {ops}, nor does any rewrite rule lead from "
            + ("it" if len(found) == 1 else "them") + " to an operator one does")


def float_obstacles(target: TargetDef, module: Module) -> list[Obstacle]:
    """Nodes computing floating-point values that no instruction of ``target`` computes,
    on which the result depends, when some output value is new (not a value of an input
    or constant). Two cases, both resting on no rewrite turning float arithmetic into
    integer arithmetic:

    - a type no instruction has anywhere in its semantics (Gemmini's bf16): instructions
      only move such values as bytes, so no pii graph computes the result;
    - an output of a float type holding new values, when no instruction writes values of
      that type that it computes (Gemmini's f32, which only its scaled ``mvout`` computes
      inside, on the way to int8): those output bytes have no instruction to write them.

    A kernel whose float arithmetic cancels out (negate(negate(x))) puts out only its
    inputs' values and is not refused. One obstacle per element type, in program order."""
    _, patterns = default_rules(target)
    known = {n.dtype for p in patterns for n in p.nodes}
    comp = module.entry_computation
    variable = _input_dependent(comp)
    floats = [i for i in _in_order(comp) if i.name in variable and isinstance(i.type, TensorType)
              and i.type.dtype.is_float]
    new = _new_output_types(module, variable) if floats else set()
    unwritten = new - _written(patterns)
    candidates = [i for i in floats if (i.opcode in COMPUTING and i.type.dtype.name not in known and new)
                  or (i.opcode in COMPUTING | {"convert"} and i.type.dtype.name in unwritten)]
    found: dict[str, Obstacle] = {}
    for inst in candidates[:MAX_CHECKS]:
        if inst.type.dtype.name not in found and _result_depends_on(module, inst):
            found[inst.type.dtype.name] = Obstacle(inst.opcode, inst.name, inst.type, inst.loc, dtype_only=True)
    return list(found.values())


def store_obstacles(target: TargetDef, module: Module) -> list[Obstacle]:
    """The root, when no instruction writes HBM and some output value is new (not a
    value of an input or constant): only an instruction puts bytes into the output."""
    if any(target.buffers[ins.output.buffer].is_hbm for ins in target.instructions.values()):
        return []
    comp = module.entry_computation
    if not _new_output_types(module, _input_dependent(comp)):
        return []
    root = comp.root_instruction
    return [Obstacle(root.opcode, root.name, root.type, root.loc, no_store=True)]


MOVING = DATA_MOVEMENT  # operators through which an instruction's output only moves what it read or computed


def written_types(target: TargetDef) -> set[str]:
    """Element types of the values ``target``'s instructions compute and write: the
    types of the nodes that the outputs' data movement reaches first (not parameters)."""
    return _written(default_rules(target)[1])


def _written(patterns: list) -> set[str]:
    out: set[str] = set()
    for p in patterns:
        for k in reached(p, lambda n: n.children if n.op in MOVING else ()):
            n = p.nodes[k]
            if n.op not in MOVING and n.param is None and n.op not in ("constant", "iota"):
                out.add(n.dtype)
    return out


def _new_output_types(module: Module, variable: set[str]) -> set[str]:
    """The element types of the outputs in which, on random inputs, some element's bits
    are none of the inputs' nor of the values that do not depend on the inputs (constants
    and what is made of them), of the same width. An evaluation error counts as none."""
    comp = module.entry_computation
    fixed = [i.name for i in comp.instructions if i.name not in variable and isinstance(i.type, TensorType)]
    inputs = random_inputs([p.type for p in comp.parameters], 0)
    try:
        outs = evaluate(module, inputs)
        consts = evaluate(_probing(module, fixed), inputs) if fixed else []
    except ActgenError:
        return set()

    def words(a: np.ndarray) -> set[tuple[int, bytes]]:
        a = np.ascontiguousarray(a)
        w = a.dtype.itemsize
        raw = a.tobytes()
        return {(w, raw[j:j + w]) for j in range(0, len(raw), w)}

    seen = set().union(*(words(np.asarray(a)) for a in list(inputs) + list(consts)))
    types = [t.dtype.name for t in _leaf_types(comp.root_instruction.type)]
    return {t for t, o in zip(types, outs) if not words(np.asarray(o)) <= seen}


def _leaf_types(t) -> list[TensorType]:  # noqa: ANN001  (a Type)
    return [t] if isinstance(t, TensorType) else [x for e in t.elements for x in _leaf_types(e)]


def _input_dependent(comp: Computation) -> set[str]:
    """Names of the instructions whose value depends on a kernel input (the others are
    compile-time constants)."""
    out: set[str] = set()
    for inst in _in_order(comp):
        if inst.opcode == "parameter" or any(o in out for o in inst.operands):
            out.add(inst.name)
    return out


def _in_order(comp: Computation) -> list[Instruction]:
    done: set[str] = set()
    order: list[Instruction] = []
    for top in comp.instructions:
        stack = [(top.name, False)]
        while stack:
            n, ready = stack.pop()
            if n in done:
                continue
            if ready:
                done.add(n)
                order.append(comp[n])
            else:
                stack.append((n, True))
                stack += [(o, False) for o in comp[n].operands if o not in done]
    return order


def _probing(module: Module, names: list[str]) -> Module:
    """``module`` putting out the values of its entry computation's instructions ``names``."""
    comp = module.entry_computation
    probe = Instruction("probe.values", "tuple", TupleType(tuple(comp[n].type for n in names)), tuple(names))
    entry = Computation(comp.name, list(comp.instructions) + [probe], probe.name, comp.loc)
    return dataclasses.replace(module, computations={**module.computations, comp.name: entry})


def _values(module: Module, names: set[str]) -> dict[str, tuple[bytes, bytes]]:
    """The bytes of the entry computation's instructions ``names`` (tensors only) on two
    random inputs (an evaluation error: none)."""
    return {n: (x.tobytes(), y.tobytes()) for n, (x, y) in _runs(module, names, random_inputs).items()}


def _runs(module: Module, names: set[str], inputs) -> dict[str, tuple[np.ndarray, np.ndarray]]:  # noqa: ANN001
    """The values of the entry computation's instructions ``names`` (tensors only) on the
    inputs ``inputs(types, seed)`` gives for seeds 0 and 1 (an evaluation error: none)."""
    comp = module.entry_computation
    order = sorted(n for n in names if isinstance(comp[n].type, TensorType))
    if not order:
        return {}
    probed = _probing(module, order)
    types = [p.type for p in comp.parameters]
    try:
        a, b = (evaluate(probed, inputs(types, seed)) for seed in (0, 1))
    except ActgenError:
        return {}
    return {n: (np.asarray(x), np.asarray(y)) for n, x, y in zip(order, a, b)}


def _forwarded(module: Module) -> Module:
    """``module`` with each node whose value is one of its operands' on two random inputs
    replaced by that operand (``max(x, min(x, y))``, ``x + 0``): the rules may take such a
    node away, and with it the need for its other operands' values."""
    comp = module.entry_computation
    values = _values(module, {i.name for i in comp.instructions})
    alias: dict[str, str] = {}
    body: list[Instruction] = []
    for inst in _in_order(comp):
        inst = dataclasses.replace(inst, operands=tuple(alias.get(o, o) for o in inst.operands))
        same = [o for o in inst.operands if inst.name in values and o in values and _same(values, inst.name, o)
                and _shape(comp[o].type) == _shape(inst.type)]
        if same:
            alias[inst.name] = same[0]
        else:
            body.append(inst)
    if not alias:
        return module
    entry = Computation(comp.name, body, alias.get(comp.root, comp.root), comp.loc)
    return dataclasses.replace(module, computations={**module.computations, comp.name: entry})


def _shape(t) -> tuple:  # noqa: ANN001  (a Type)
    return (t.dtype.name, tuple(t.shape)) if isinstance(t, TensorType) else ()


def _arrays(module: Module, names: set[str]) -> dict[str, np.ndarray]:
    """The values of the entry computation's instructions ``names`` on two random inputs
    whose integers span their types' ranges (random_inputs' are small), joined (an
    evaluation error: none)."""
    return {n: np.concatenate([x.ravel(), y.ravel()]) for n, (x, y) in _runs(module, names, _full_range_inputs).items()}


def _full_range_inputs(types: list, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = random_inputs(types, seed)
    for k, t in enumerate(types):
        if isinstance(t, TensorType) and t.dtype.is_int:
            info = np.iinfo(t.dtype.np)
            out[k] = rng.integers(info.min, info.max, size=t.shape, endpoint=True, dtype=t.dtype.np)
    return out


def _varies(values: dict[str, tuple[bytes, bytes]], n: str) -> bool:
    return n in values and values[n][0] != values[n][1]


def _same(values: dict[str, tuple[bytes, bytes]], m: str, n: str) -> bool:
    """``m`` and ``n`` are equal on both random inputs (max(x, min(x, y)) and x)."""
    return values[m] == values[n]


def _result_depends_on(module: Module, inst: Instruction) -> bool:
    """Do the kernel's outputs change when ``inst``'s value is replaced by other random
    values (the inputs kept)? An evaluation error counts as no."""
    cut_module = _cut(module, inst)
    inputs = random_inputs([p.type for p in module.entry_computation.parameters], 0)
    try:
        outs = [evaluate(cut_module, inputs + random_inputs([inst.type], seed)) for seed in (1, 2)]
    except ActgenError:
        return False
    return any(a.tobytes() != b.tobytes() for a, b in zip(*outs)) or \
        any(np.asarray(a).shape != np.asarray(b).shape for a, b in zip(*outs))


def _cut(module: Module, inst: Instruction) -> Module:
    """``module`` with ``inst`` made a parameter after the kernel's own (its value given)."""
    comp = module.entry_computation
    cut = Instruction(inst.name, "parameter", inst.type, (), {"parameter_number": len(comp.parameters)}, inst.loc)
    body = [cut if i.name == inst.name else i for i in comp.instructions]
    entry = Computation(comp.name, body, comp.root, comp.loc)
    return dataclasses.replace(module, computations={**module.computations, comp.name: entry})
