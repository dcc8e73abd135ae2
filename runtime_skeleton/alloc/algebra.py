"""The CP-SAT algebra for the generated h(i) and e (see symbolic.py).

Arithmetic and comparisons are OR-tools' own operator overloads (a comparison
over variables is a ``BoundedLinearExpression``); this class supplies the rest.
Conjunctions stay lazy (``Conj``) so that the common case, e = a conjunction of
linear constraints, becomes plain linear constraints; disjunction and negation
reify their operands into literals with both implications.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ortools.sat.python import cp_model

BIG = 1 << 40  # domain of auxiliary integer variables (div/mod/min/max results)


@dataclass(frozen=True)
class Conj:
    parts: tuple[Any, ...]


class CpSatAlgebra:
    def __init__(self, model: cp_model.CpModel) -> None:
        self.m = model

    # -- boolean structure ---------------------------------------------------------------
    def and_(self, *xs: Any) -> Any:
        parts = []
        for x in xs:
            if x is True:
                continue
            if x is False:
                return False
            parts.extend(x.parts if isinstance(x, Conj) else (x,))
        return True if not parts else Conj(tuple(parts))

    def or_(self, *xs: Any) -> Any:
        if any(x is True for x in xs):
            return True
        lits = [self.literal(x) for x in xs if x is not False]
        if not lits:
            return False
        b = self.m.new_bool_var("")
        self.m.add_bool_or(lits).only_enforce_if(b)
        self.m.add_bool_and([lit.Not() for lit in lits]).only_enforce_if(b.Not())
        return b

    def not_(self, x: Any) -> Any:
        if isinstance(x, bool):
            return not x
        return self.literal(x).Not()

    def literal(self, x: Any) -> Any:
        """A literal equivalent to the condition x."""
        if isinstance(x, bool):
            return self.m.new_constant(int(x))
        if isinstance(x, Conj):
            lits = [self.literal(p) for p in x.parts]
            b = self.m.new_bool_var("")
            self.m.add_bool_and(lits).only_enforce_if(b)
            self.m.add_bool_or([lit.Not() for lit in lits]).only_enforce_if(b.Not())
            return b
        if isinstance(x, cp_model.BoundedLinearExpression):
            expr = sum(c * v for v, c in zip(x.vars, x.coeffs)) + x.offset
            b = self.m.new_bool_var("")
            self.m.add_linear_expression_in_domain(expr, x.bounds).only_enforce_if(b)
            self.m.add_linear_expression_in_domain(expr, x.bounds.complement()).only_enforce_if(b.Not())
            return b
        return x  # already a literal

    def require(self, x: Any, enforce: list | None = None) -> bool:
        """Add x as a hard constraint (under the enforcement literals); False if x is
        trivially false."""
        if x is True:
            return True
        if x is False:
            if enforce:
                self.m.add_bool_or([e.Not() for e in enforce])
                return True
            return False
        for part in x.parts if isinstance(x, Conj) else (x,):
            if isinstance(part, cp_model.BoundedLinearExpression):
                ct = self.m.add(part)
            else:
                ct = self.m.add_bool_or([self.literal(part)])
            if enforce:
                ct.only_enforce_if(enforce)
        return True

    # -- integer operations ----------------------------------------------------------------
    def _aux(self, fn, *args: Any) -> Any:  # noqa: ANN001
        v = self.m.new_int_var(-BIG, BIG, "")
        fn(v, *args)
        return v

    def div(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int):
            return a // b
        return self._aux(self.m.add_division_equality, a, b)  # operands are non-negative addresses

    def mod(self, a: Any, b: Any) -> Any:
        if isinstance(a, int) and isinstance(b, int):
            return a % b
        return self._aux(self.m.add_modulo_equality, a, b)

    def min(self, *xs: Any) -> Any:
        if all(isinstance(x, int) for x in xs):
            return min(xs)
        return self._aux(self.m.add_min_equality, list(xs))

    def max(self, *xs: Any) -> Any:
        if all(isinstance(x, int) for x in xs):
            return max(xs)
        return self._aux(self.m.add_max_equality, list(xs))
