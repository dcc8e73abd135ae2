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
    """z3 terms, with Python's floor division and floor modulo.

    z3's integer ``div`` and ``mod`` are Euclidean: they agree with Python's ``//`` and
    ``%`` for a positive divisor, but for a negative one ``7 div -2`` is -3 where ``7 // -2``
    is -4. So a negative divisor divides the negated operands (``a // b == -a // -b``,
    ``a % b == -(-a % -b)``), decided on its value when it is a constant and with ``If``
    otherwise. Two Python integers give a Python integer (``7 / 2`` would be 3.5). A zero
    divisor gives z3's unspecified value (Python raises): callers that need a divisor
    non-zero prove it (isa_lang/checker.py does, over the attributes an instruction allows).
    """

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
        if isinstance(a, int) and isinstance(b, int):
            return a // b
        if isinstance(b, int):
            return a / b if b > 0 else (-a) / (-b)
        return self.z3.If(b > 0, a / b, (-a) / (-b))

    def mod(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int):
            return a % b
        if isinstance(b, int):
            return a % b if b > 0 else -((-a) % (-b))
        return self.z3.If(b > 0, a % b, -((-a) % (-b)))

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
