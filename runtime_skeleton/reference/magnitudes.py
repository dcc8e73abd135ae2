"""How large a float kernel's values get on the way to each output element: the scale of
the rounding error a reordered sum may make there.

A compiled program may sum in another order than the reference (a split contraction, a
reduction loop, a sum made a matmul), and its error then scales with the terms of each sum,
not with the result: when a chain of sums cancels, the terms can be thousands of times the
output. ``magnitudes`` evaluates, beside the kernel, the kernel on magnitudes (Higham's
running error bound, to first order): each float input and constant by its absolute value,
a sum or difference by the sum of its operands' magnitudes, a negation by its operand's, a
product, dot or summing reduction by the same operation on magnitudes, a maximum, minimum or
clamp by the largest magnitude it reads, data movement (broadcasts, reshapes, transposes,
reverses, slices, concatenations, pads, copies) by the same movement. Any other float
operator (a division, an exponential, a bit cast, a conversion from an integer) contributes
its own value's magnitude, as if exact: no more tolerance than the result itself gives.

Integer values are exact and need no bound; a kernel whose outputs are not floats has none.

The same bound decides when a float kernel is exact (``Magnitudes.exact``): on inputs of small
integers, a kernel of those operators only (none taken as if exact), its constants binary
fractions of few digits, every value is a multiple of one power of two; when every magnitude
stays within the multiples its narrowest float type holds exactly, it computes every value
exactly in any order, so a program must match the reference bit for bit (``verify``'s
integer pass: a wrong program that a cancelling sum's tolerance would hide shows there).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import EvalError
from ..ir.graph import Computation, Instruction, Module, combiner, fresh_name
from ..ir.types import TensorType, TupleType
from .interpreter import evaluate

SUMS = frozenset({"add", "subtract"})
SAME_OPERATION = frozenset({"multiply", "dot", "convert"})  # convert: between float types
LARGEST = frozenset({"maximum", "minimum"})
KEEPS = frozenset({"negate", "copy", "abs", "clamp"})  # clamp: by its operand (non-expansive)
MOVES = frozenset({"broadcast", "reshape", "transpose", "reverse", "slice", "concatenate", "pad"})


@dataclass
class Magnitudes:
    outputs: list[np.ndarray | None]  # per output (tuple leaves in order): each element's bound, None if not float
    largest: float  # the largest magnitude of any float value of the kernel
    exact_ops: bool  # every float operator is one the bound follows (none taken as if exact)
    exact_below: float  # the integers every float type of the kernel holds exactly: below this
    grain: int = 0  # on integer inputs every float value is a multiple of 2^-grain (the constants' fractions)

    @property
    def exact(self) -> bool:
        """On these (integer-valued) inputs, every float value is computed exactly in any order."""
        return self.exact_ops and self.largest * 2.0**self.grain < self.exact_below


def magnitudes(module: Module, args: Sequence[object]) -> Magnitudes:
    """The magnitude bound of each output element of ``module`` on ``args``."""
    comp = module.entry_computation
    leaves = _leaves(comp)
    shadow = _Shadow(module)
    for name in comp.operands_first():
        shadow.visit(comp[name])
    floats = [n for n in comp.instructions if _is_float(n.type)]
    if not floats:
        return Magnitudes([None] * len(leaves), 0.0, True, np.inf)
    every = list(shadow.magnitude.values())
    outs = [shadow.of(n) if _is_float(comp[n].type) else n for n in leaves]
    types = tuple(shadow.types[n] for n in outs + every)
    root = Instruction(fresh_name("magnitudes", shadow.taken), "tuple", TupleType(types), tuple(outs + every))
    try:
        got = evaluate(module.with_entry(shadow.body + [root], root.name), args)
    except EvalError:  # an operator on magnitudes the interpreter refuses: no bound, not exact
        return Magnitudes([None] * len(leaves), np.inf, False, 0.0)
    largest = max((float(np.abs(g).max(initial=0.0)) for g in got[len(outs):]), default=0.0)
    below = min(2.0 ** (np.finfo(i.type.dtype.np).nmant + 1) for i in floats)  # type: ignore[union-attr]
    return Magnitudes([np.asarray(g) if _is_float(comp[n].type) else None for g, n in zip(got, leaves)],
                      largest if np.isfinite(largest) else np.inf, shadow.exact_ops, below,
                      max(shadow.grain.values(), default=0))


def _leaves(comp: Computation) -> list[str]:
    root = comp.root_instruction
    return list(root.operands) if root.opcode == "tuple" else [root.name]


def _fraction_bits(ins: Instruction, most: int = 24) -> int | None:
    """The fewest binary fraction digits of a constant's values (0 for integers; 1 for the
    halves, ...), None for values with more than ``most`` or not finite."""
    arr = np.asarray(ins.attrs["literal"].array, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        return None
    for bits in range(most + 1):
        scaled = arr * 2.0**bits
        if np.all(scaled == np.round(scaled)):
            return bits
    return None


def _is_float(t: object) -> bool:
    return isinstance(t, TensorType) and t.dtype.is_float


class _Shadow:
    """The kernel's instructions with, after each float one, its magnitude (``of``)."""

    def __init__(self, module: Module) -> None:
        self.module, self.comp = module, module.entry_computation
        self.body: list[Instruction] = []
        self.taken = {i.name for i in self.comp.instructions}
        self.magnitude: dict[str, str] = {}
        self.types = {i.name: i.type for i in self.comp.instructions}
        self.exact_ops = True
        self.grain: dict[str, int] = {}  # float value -> g: a multiple of 2^-g on integer inputs

    def of(self, name: str) -> str:
        return self.magnitude[name]

    def visit(self, ins: Instruction) -> None:
        self.body.append(ins)
        if not _is_float(ins.type):
            return
        ops = ins.operands
        floats = all(_is_float(self.comp[o].type) for o in ops)
        grains = [self.grain.get(o, 0) for o in ops]
        self.grain[ins.name] = max(grains, default=0)
        if not floats or not ops:  # an input, a constant, a conversion from integers, an iota
            bits = _fraction_bits(ins) if ins.opcode == "constant" else 0
            self.exact_ops = self.exact_ops and bits is not None and ins.opcode in ("parameter", "constant", "convert",
                                                                                    "iota")
            self.grain[ins.name] = bits or 0
            self.magnitude[ins.name] = self._add(ins, "abs", (ins.name,))
        elif ins.opcode in SUMS:
            self.magnitude[ins.name] = self._add(ins, "add", self._all(ops))
        elif ins.opcode in SAME_OPERATION | MOVES:
            if ins.opcode in ("multiply", "dot"):
                self.grain[ins.name] = sum(grains)
            self.magnitude[ins.name] = self._add(ins, ins.opcode, self._all(ops), ins.attrs)
        elif ins.opcode in LARGEST:
            self.magnitude[ins.name] = self._add(ins, "maximum", self._all(ops))
        elif ins.opcode in KEEPS:
            self.magnitude[ins.name] = self.of(ops[1] if ins.opcode == "clamp" else ops[0])
        elif ins.opcode == "reduce" and self._sums(ins):
            self.magnitude[ins.name] = self._add(ins, "reduce", self._all(ops), ins.attrs)
        else:  # as if exact
            self.exact_ops = False
            self.magnitude[ins.name] = self._add(ins, "abs", (ins.name,))

    def _all(self, ops: Sequence[str]) -> tuple[str, ...]:
        return tuple(self.of(o) for o in ops)

    def _sums(self, ins: Instruction) -> bool:
        comp = self.module.computations.get(str(ins.attrs.get("to_apply")))
        return len(ins.operands) == 2 and combiner(comp) == "add"

    def _add(self, ins: Instruction, opcode: str, operands: tuple[str, ...], attrs=None) -> str:  # noqa: ANN001
        m = Instruction(fresh_name(f"{ins.name}.magnitude", self.taken), opcode, ins.type, operands, attrs or {},
                        ins.loc)
        self.body.append(m)
        self.types[m.name] = m.type
        return m.name
