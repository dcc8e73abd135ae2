"""Value ranges of a kernel's integer values: interval analysis (LLVM's ConstantRange, XLA's
range inference), one forward pass over the entry computation.

Each integer value gets the interval [lo, hi] that holds every element of it on every input:
a parameter its type's range, a constant the range of its literal, data movement (broadcast,
reshape, slice, reverse, transpose, concatenation, padding) the hull of what it moves, and
arithmetic the interval of its exact result when that fits its type. Where the exact result
can leave the type (the operator wraps), the value gets its type's whole range, which is
always sound. Floating-point and tuple values get no range.

``simplify`` reads the ranges: a clamp, maximum or minimum that the ranges show to be one of
its operands is that operand, and a value whose range is one number is that constant.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .graph import Computation, Instruction, Module, combiner
from .ops import VALUE_MOVES
from .types import TensorType

Range = tuple[int, int]

# operators whose every element is an element of one of their operands (or a padding value)
MOVES = VALUE_MOVES | {"dynamic-slice", "select"}


def type_range(t: TensorType) -> Range:
    info = np.iinfo(t.dtype.np)
    return int(info.min), int(info.max)


def value_ranges(module: Module) -> dict[str, Range]:
    """Instruction name -> the range of its values, for the entry computation's integer values."""
    comp = module.entry_computation
    ranges: dict[str, Range] = {}
    for inst in comp.instructions:
        if isinstance(inst.type, TensorType) and inst.type.dtype.is_int:
            ranges[inst.name] = fitted(inst.type, _transfer(module, comp, inst, ranges))
    return ranges


def fitted(t: TensorType, r: Range | None) -> Range:
    """``r`` when every value in it is one of ``t``'s (no wrap-around), else ``t``'s range."""
    whole = type_range(t)
    if r is None or r[0] < whole[0] or r[1] > whole[1]:
        return whole
    return r


def exact(module: Module, comp: Computation, inst: Instruction, ranges: dict[str, Range]) -> bool:
    """Whether ``inst`` computes its exact (unwrapped) result on every input."""
    r = _transfer(module, comp, inst, ranges)
    return r is not None and fitted(inst.type, r) == r  # type: ignore[arg-type]


def _transfer(module: Module, comp: Computation, inst: Instruction, ranges: dict[str, Range]) -> Range | None:
    """The exact range of ``inst``'s result from its operands' ranges (None: unknown)."""
    op = inst.opcode
    if op == "constant":
        arr = inst.attrs["literal"].array
        return (int(arr.min()), int(arr.max())) if arr.size else None
    if op == "iota":
        return 0, max(0, inst.type.shape[inst.attrs["iota_dimension"]] - 1)  # type: ignore[union-attr]
    rs = [ranges.get(o) for o in inst.operands]
    if op == "convert":
        return rs[0]  # an integer operand's values, when the new type holds them (else None: wraps)
    if op == "select":
        rs = rs[1:]
    elif op in ("dynamic-slice",):
        rs = rs[:1]
    if op in MOVES:
        return _hull(rs)
    if op in _ARITHMETIC and all(r is not None for r in rs):
        return _ARITHMETIC[op](*rs)  # type: ignore[arg-type]
    if op == "clamp" and all(r is not None for r in rs):
        lo, x, hi = rs  # XLA: min(max(x, lo), hi)
        return _minimum(_maximum(x, lo), hi)  # type: ignore[arg-type]
    if op == "reduce" and len(rs) == 2 and all(r is not None for r in rs):
        return _reduced(module, inst, rs[0], rs[1])  # type: ignore[arg-type]
    if op == "dot" and all(r is not None for r in rs):
        lhs = comp[inst.operands[0]].type
        k = math.prod(lhs.shape[d] for d in inst.attrs["lhs_contracting_dims"])  # type: ignore[union-attr]
        p = _multiply(rs[0], rs[1])  # type: ignore[arg-type]
        return k * p[0], k * p[1]  # a sum of k products
    return None


def _hull(rs: list[Range | None]) -> Range | None:
    if not rs or any(r is None for r in rs):
        return None
    return min(r[0] for r in rs), max(r[1] for r in rs)  # type: ignore[index]


def _multiply(a: Range, b: Range) -> Range:
    corners = [x * y for x in a for y in b]
    return min(corners), max(corners)


def _maximum(a: Range, b: Range) -> Range:
    return max(a[0], b[0]), max(a[1], b[1])


def _minimum(a: Range, b: Range) -> Range:
    return min(a[0], b[0]), min(a[1], b[1])


_ARITHMETIC: dict[str, Callable[..., Range]] = {
    "add": lambda a, b: (a[0] + b[0], a[1] + b[1]),
    "subtract": lambda a, b: (a[0] - b[1], a[1] - b[0]),
    "negate": lambda a: (-a[1], -a[0]),
    "multiply": _multiply,
    "maximum": _maximum,
    "minimum": _minimum,
    "abs": lambda a: (0 if a[0] <= 0 <= a[1] else min(abs(a[0]), abs(a[1])), max(abs(a[0]), abs(a[1]))),
}


def _reduced(module: Module, inst: Instruction, x: Range, init: Range) -> Range | None:
    """A reduce whose computation is an add, maximum or minimum of its two parameters."""
    op = combiner(module.computations.get(inst.attrs.get("to_apply", "")))
    operand = module.entry_computation[inst.operands[0]].type
    n = math.prod(operand.shape[d] for d in inst.attrs["dimensions"])  # type: ignore[union-attr]
    if n == 0 and op is not None:
        return init
    if op == "add":
        return init[0] + n * x[0], init[1] + n * x[1]
    if op in ("maximum", "minimum"):
        return _ARITHMETIC[op](x, init)
    return None
