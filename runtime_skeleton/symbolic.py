"""Algebras for the generated address functions h(i), constraints e and latencies.

A generated package writes each of them once, as a Python function over an
algebra ``x`` for the operations Python cannot overload uniformly (and/or/not,
floor division, modulo, min/max); + - * and comparisons are native. Passing
``PY`` evaluates concretely (the simulator); ``Z3`` builds z3 terms; the
allocator passes its own CP-SAT algebra. One definition, every consumer.
"""
from __future__ import annotations

from typing import Any


class PyAlgebra:
    """Concrete evaluation with Python integers."""

    @staticmethod
    def and_(*xs: Any) -> bool:
        return all(xs)

    @staticmethod
    def or_(*xs: Any) -> bool:
        return any(xs)

    @staticmethod
    def not_(x: Any) -> bool:
        return not x

    @staticmethod
    def div(a: int, b: int) -> int:
        return a // b

    @staticmethod
    def mod(a: int, b: int) -> int:
        return a % b

    @staticmethod
    def min(*xs: int) -> int:
        return min(xs)

    @staticmethod
    def max(*xs: int) -> int:
        return max(xs)


class Z3Algebra:
    """z3 terms (integer division and modulo are floor-based for positive divisors)."""

    def __init__(self) -> None:
        import z3

        self.z3 = z3

    def and_(self, *xs: Any) -> Any:
        return self.z3.And(*xs)

    def or_(self, *xs: Any) -> Any:
        return self.z3.Or(*xs)

    def not_(self, x: Any) -> Any:
        return self.z3.Not(x)

    def div(self, a: Any, b: Any) -> Any:
        return a / b

    def mod(self, a: Any, b: Any) -> Any:
        return a % b

    def min(self, *xs: Any) -> Any:
        out = xs[0]
        for v in xs[1:]:
            out = self.z3.If(v < out, v, out)
        return out

    def max(self, *xs: Any) -> Any:
        out = xs[0]
        for v in xs[1:]:
            out = self.z3.If(v > out, v, out)
        return out


PY = PyAlgebra()
