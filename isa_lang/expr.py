"""Symbolic integer/boolean expressions over instruction attributes and constants.

One small AST serves every consumer: concrete evaluation (simulator), z3 terms
(the checker), Python source (generated packages) and, later, CP-SAT linear
expressions (allocation). Division and modulo are Python's floor division and
floor modulo for every sign (``Z3Algebra`` encodes them so in z3, whose own
``div``/``mod`` round differently for a negative divisor); a constant zero divisor
is a type error (``kind``), and the checker proves every other divisor non-zero
wherever the instruction's constraints hold.
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from runtime_skeleton.errors import SourceLoc
from runtime_skeleton.symbolic import PY, Z3Algebra


@dataclass(frozen=True)
class Expr:
    loc: SourceLoc | None = field(default=None, compare=False, repr=False, kw_only=True)

    def free_vars(self) -> frozenset[str]:
        return frozenset().union(*(c.free_vars() for c in self.children()))

    def children(self) -> tuple[Expr, ...]:
        return ()


@dataclass(frozen=True)
class Const(Expr):
    value: int | bool

    def __str__(self) -> str:
        return str(self.value).lower() if isinstance(self.value, bool) else str(self.value)


@dataclass(frozen=True)
class Var(Expr):
    name: str

    def free_vars(self) -> frozenset[str]:
        return frozenset({self.name})

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class BinOp(Expr):
    """Arithmetic (+ - * / %), comparison (== != < <= > >=) or logic (and or)."""

    op: str
    lhs: Expr
    rhs: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.lhs, self.rhs)

    def __str__(self) -> str:
        return f"({self.lhs} {self.op} {self.rhs})"


@dataclass(frozen=True)
class UnOp(Expr):
    op: str  # "-" or "not"
    arg: Expr

    def children(self) -> tuple[Expr, ...]:
        return (self.arg,)

    def __str__(self) -> str:
        return f"({self.op} {self.arg})" if self.op == "not" else f"(-{self.arg})"


@dataclass(frozen=True)
class Call(Expr):
    """Builtins: min(a, b, ...), max(a, b, ...)."""

    fn: str
    args: tuple[Expr, ...]

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def __str__(self) -> str:
        return f"{self.fn}({', '.join(map(str, self.args))})"


ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul}
COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
ALGEBRA_OPS = {"/": "div", "%": "mod", "and": "and_", "or": "or_", "not": "not_", "min": "min", "max": "max"}
BUILTINS = ("min", "max")


def fold(e: Expr, env: Mapping[str, Any], x: Any) -> Any:
    """Evaluate over an algebra ``x`` (see runtime_skeleton.symbolic)."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Var):
        return env[e.name]
    if isinstance(e, UnOp):
        a = fold(e.arg, env, x)
        return x.not_(a) if e.op == "not" else -a
    if isinstance(e, Call):
        return getattr(x, e.fn)(*(fold(a, env, x) for a in e.args))
    assert isinstance(e, BinOp)
    a, b = fold(e.lhs, env, x), fold(e.rhs, env, x)
    if e.op in ALGEBRA_OPS:
        return getattr(x, ALGEBRA_OPS[e.op])(a, b)
    return (ARITH.get(e.op) or COMPARE[e.op])(a, b)


class ExprTypeError(Exception):
    """An expression mixes integers and conditions, or divides by zero: ``at`` is the
    offending subexpression (its loc locates the error)."""

    def __init__(self, message: str, at: Expr) -> None:
        super().__init__(message)
        self.at = at


def kind(e: Expr) -> str:
    """"int" or "bool": the expression's type, checked all the way down (iterative: a long
    sum is a deep tree). Attributes are integers; arithmetic, min and max take integers;
    comparisons take integers and give a condition; and, or and not take conditions. A
    division or modulo by a constant zero is an error too."""
    out: dict[int, str] = {}
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        x, done = stack.pop()
        if not done:
            stack.append((x, True))
            stack.extend((c, False) for c in x.children())
            continue
        args = [out[id(c)] for c in x.children()]
        if isinstance(x, Const):
            out[id(x)] = "bool" if isinstance(x.value, bool) else "int"
            continue
        if isinstance(x, Var):
            out[id(x)] = "int"
            continue
        logic = isinstance(x, BinOp) and x.op in ("and", "or") or isinstance(x, UnOp) and x.op == "not"
        want = "bool" if logic else "int"
        for c, k in zip(x.children(), args):
            if k != want:
                what = "a condition" if want == "bool" else "an integer"
                raise ExprTypeError(f"'{_op_name(x)}' needs {what}, got '{c}'", c if c.loc else x)
        if isinstance(x, BinOp) and x.op in ("/", "%") and not x.rhs.free_vars() and evaluate(x.rhs, {}) == 0:
            raise ExprTypeError(f"division by zero in '{x}'", x)
        out[id(x)] = "bool" if logic or (isinstance(x, BinOp) and x.op in COMPARE) else "int"
    return out[id(e)]


def _op_name(x: Expr) -> str:
    return x.fn if isinstance(x, Call) else x.op  # type: ignore[attr-defined]


def evaluate(e: Expr, env: Mapping[str, int]) -> int | bool:
    """Evaluate with Python integers (exact; floor division)."""
    return fold(e, env, PY)


def to_z3(e: Expr, env: Mapping[str, Any]) -> Any:
    """Build a z3 term; env maps names to z3 Int terms or Python ints."""
    z = fold(e, env, _z3_algebra())
    if isinstance(z, bool | int):
        import z3

        return z3.BoolVal(z) if isinstance(z, bool) else z3.IntVal(z)
    return z


@cache
def _z3_algebra() -> Z3Algebra:
    return Z3Algebra()


def to_python(e: Expr, rename: Callable[[str], str] = lambda n: n, x: str = "x") -> str:
    """Python source over the algebra named ``x`` (used by the generator)."""
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, Var):
        return rename(e.name)
    if isinstance(e, UnOp):
        arg = to_python(e.arg, rename, x)
        return f"{x}.not_({arg})" if e.op == "not" else f"(-{arg})"
    if isinstance(e, Call):
        return f"{x}.{e.fn}({', '.join(to_python(a, rename, x) for a in e.args)})"
    assert isinstance(e, BinOp)
    if e.op in ("and", "or"):
        terms = ", ".join(to_python(t, rename, x) for t in _flatten(e, e.op))
        return f"{x}.{ALGEBRA_OPS[e.op]}({terms})"
    a, b = to_python(e.lhs, rename, x), to_python(e.rhs, rename, x)
    if e.op in ALGEBRA_OPS:
        return f"{x}.{ALGEBRA_OPS[e.op]}({a}, {b})"
    return f"({a} {e.op} {b})"


def _flatten(e: Expr, op: str) -> list[Expr]:
    if isinstance(e, BinOp) and e.op == op:
        return _flatten(e.lhs, op) + _flatten(e.rhs, op)
    return [e]


def conjunction(es: list[Expr] | tuple[Expr, ...]) -> Expr:
    if not es:
        return Const(True)
    out = es[0]
    for e in es[1:]:
        out = BinOp("and", out, e, loc=e.loc)
    return out
