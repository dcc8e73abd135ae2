"""Check a rewrite rule numerically: apply it at the root of a left-hand side term
and compare both sides on random inputs with the reference interpreter.

    rhs = check_rule(rule, lhs)            # asserts the rule fires and every RHS agrees
    assert not fire(rule, lhs)             # a negative example: the precondition rejects

The LHS is a term over ``parameter`` leaves (and constants). It goes into a fresh
TensorEGraph; the rule runs at the LHS root's node; every ``Class(id)`` in a
result is replaced by the LHS subterm of that class, so both sides become
evaluable modules (``convert.to_module``). Exact rules must agree bit for bit
(any NaN matches any NaN: payloads are not part of the semantics); others within
``compare_outputs``' float tolerance. ``undef`` leaves of a result (bytes a rule
leaves undefined because they are overwritten) get fresh random values for every
seed and occurrence: the check is that their value does not matter.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from ..ir.attrs import Literal
from ..ir.dtypes import DType
from ..reference import evaluate
from ..reference.compare import compare_outputs
from .convert import to_module
from .isa_rules import UNDEF
from .rules import ANY, Rule
from .tensor_egraph import TensorEGraph
from .terms import Class, Term, post_order


class RuleCheckError(AssertionError):
    pass


def subterms(t: Term) -> Iterator[Term]:
    """Every distinct subterm of ``t`` (by identity: shared ones once), ``t`` first."""
    seen: set[int] = set()
    stack = [t]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        stack.extend(a for a in reversed(x.args) if isinstance(a, Term))


def fire(rule: Rule, lhs: Term) -> list[Term]:
    """The rule's results at the LHS root, with classes replaced by LHS subterms."""
    eg = TensorEGraph()
    refs = {t: eg.add(t) for t in subterms(lhs)}
    view = eg.flush()
    term_of = {eg.class_of(r): t for t, r in refs.items()}
    root = eg.class_of(refs[lhs])
    kids = tuple(eg.class_of(refs[a]) for a in lhs.args if isinstance(a, Term))
    node = next(n for n in view.nodes(root)
                if n.op == lhs.op and n.children == kids and dict(n.attrs) == dict(lhs.attrs))
    if lhs.op not in rule.roots and ANY not in rule.roots:
        raise RuleCheckError(f"rule {rule.name} does not match at '{lhs.op}' nodes")
    return [_substitute(t, term_of) for t in rule.apply(view, root, node)]


def _substitute(t: Term | Class, term_of: dict[int, Term]) -> Term:
    if isinstance(t, Class):
        return term_of[t.id]
    return Term(t.op, t.type, tuple(_substitute(a, term_of) for a in t.args), t.attrs)


def parameters(t: Term) -> list[Term]:
    """The parameter leaves of ``t`` by parameter number (numbers must be 0..n-1)."""
    params = {s.attrs["parameter_number"]: s for s in subterms(t) if s.op == "parameter"}
    if sorted(params) != list(range(len(params))):
        raise RuleCheckError(f"parameter numbers {sorted(params)} are not 0..{len(params) - 1}")
    return [params[i] for i in range(len(params))]


def random_value(dtype: DType, shape: Sequence[int], rng: np.random.Generator) -> np.ndarray:
    """Full-range integers (so wrap-around shows) and normal floats, with edge values
    (INT_MIN, INT_MAX, 0, -1; -0, +0, ±1) at random places; random preds."""
    if dtype.is_pred:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.is_int:
        info = np.iinfo(dtype.np)
        x = rng.integers(info.min, info.max, size=shape, dtype=dtype.np, endpoint=True)
        edges = [info.min, info.max, 0] + ([-1] if dtype.is_signed else [])
    else:
        x = (rng.standard_normal(size=shape) * 3).astype(dtype.np)
        edges = [-0.0, 0.0, 1.0, -1.0]
    flat = x.reshape(-1)
    k = min(len(edges), flat.size // 2)
    flat[rng.choice(flat.size, size=k, replace=False)] = np.array(edges[:k]).astype(dtype.np)
    return x


def evaluate_term(t: Term, params: Sequence[Term], args: Sequence[np.ndarray]) -> np.ndarray:
    """``t`` on ``args`` for ``params`` (numbered 0..n-1; ``t`` may use only some)."""
    ordered = sorted(params, key=lambda p: p.attrs["parameter_number"])
    return evaluate(to_module([t], params=[p.type for p in ordered]), list(args))[0]


def fill_undef(t: Term, rng: np.random.Generator) -> Term:
    """``t`` with every ``undef`` leaf replaced by random values, drawn anew for each distinct
    leaf (a subterm shared, as a tiled kernel shares its pieces, is rebuilt once)."""
    done: dict[int, Term] = {}
    for x in post_order([t]):
        if x.op == UNDEF:
            value = random_value(x.type.dtype, x.type.shape, rng)
            done[id(x)] = Term("constant", x.type, (), {"literal": Literal(x.type.dtype, value)})
        else:
            args = tuple(done[id(a)] if isinstance(a, Term) else a for a in x.args)
            same = all(n is o for n, o in zip(args, x.args))
            done[id(x)] = x if same else Term(x.op, x.type, args, x.attrs)
    return done[id(t)]


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "biu":
        return bool(np.array_equal(a, b))
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    both_nan = np.isnan(fa) & np.isnan(fb)
    raw_a = np.ascontiguousarray(a).view(np.dtype(f"u{a.dtype.itemsize}"))
    raw_b = np.ascontiguousarray(b).view(np.dtype(f"u{b.dtype.itemsize}"))
    return bool(((raw_a == raw_b) | both_nan).all())


def check_equivalent(lhs: Term, rhs: Term, *, exact: bool, seeds: Sequence[int] = (0, 1)) -> None:
    """Both terms on the same random inputs agree (bitwise when ``exact``, else within
    the float tolerance of ``compare_outputs``)."""
    if not rhs.type.same_shape_dtype(lhs.type):
        raise RuleCheckError(f"RHS type {rhs.type} differs from LHS type {lhs.type}")
    params = parameters(lhs)
    extra = {s.attrs["parameter_number"] for s in subterms(rhs) if s.op == "parameter"} - set(range(len(params)))
    if extra:
        raise RuleCheckError(f"RHS uses parameters {sorted(extra)} the LHS does not have")
    for seed in seeds:
        rng = np.random.default_rng(seed)
        args = [random_value(p.type.dtype, p.type.shape, rng) for p in params]
        want, got = evaluate_term(lhs, params, args), evaluate_term(fill_undef(rhs, rng), params, args)
        if exact:
            if not same_bits(got, want):
                raise RuleCheckError(f"seed {seed}: RHS differs from LHS bitwise\nLHS {want}\nRHS {got}\n{rhs}")
        else:
            problems = compare_outputs([got], [want])
            if problems:
                raise RuleCheckError(f"seed {seed}: {'; '.join(problems)}\n{rhs}")


def check_rule(rule: Rule, lhs: Term, *, seeds: Sequence[int] = (0, 1), float_order: bool = False) -> list[Term]:
    """Assert that ``rule`` fires at ``lhs`` and that every result equals ``lhs``.
    ``float_order``: the rule is exact up to float summation order, so float
    results are compared with tolerance even though the rule is exact."""
    results = fire(rule, lhs)
    if not results:
        raise RuleCheckError(f"rule {rule.name} did not fire on {lhs.op} {lhs.type}")
    exact = rule.exact and not (float_order and lhs.type.dtype.is_float)
    for rhs in results:
        check_equivalent(lhs, rhs, exact=exact, seeds=seeds)
    return results
