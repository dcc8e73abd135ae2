"""z3 proofs of axioms over symbolic shapes (TensorRight-style index encodings).

A tensor is an uninterpreted function from an index tuple (z3 Ints) to an
element of an uninterpreted sort; its dimensions are symbolic positive Ints.
Each operator maps the element at an output index to an element of its operands
(slice: start + i*stride, concat: a case split on the offset, pad: the padding
value outside the operand, ...). A rule is proved when, for all shapes and
attributes meeting the rule's precondition, the right-hand side is well formed,
has the left-hand side's shape, and agrees at every in-bounds index: the
negation is unsat. Attribute arithmetic comes from the rule's own helpers
(``compose_slice_dim``, ``compose_perm``, ``unpermute_slice``,
``transpose_of_broadcast``, ``compose_broadcast_dims``, ``compose_reverse``,
``convert_chain_exact``), which work on z3 terms as on ints; finite attribute
choices (permutations, dimension sets) are enumerated.

Elementwise operators are uninterpreted pointwise functions, which proves the
movement rules and the splits for every elementwise operator at once. The
algebraic rules are proved on z3 bit-vectors (integers of 8 and 32 bits, signed
and unsigned; wrapping arithmetic) and IEEE floats (f16, bf16, f32 with
round-to-nearest-even; ``==`` is z3's structural equality, so +0 and -0 differ
and NaN equals NaN), with maximum/minimum modelled as the reference interpreter
computes them (NaN propagates, maximum(-0, +0) = +0).

Proved (``PROOFS``): slice-slice, slice-full, slice-concat-within,
slice-concat-distribute, concat-merge-slices, concat-single, concat-flatten,
concat-binarize, pad-noop, slice-pad, reverse-reverse, reverse-noop,
slice-transpose, slice-broadcast, transpose-transpose, transpose-noop,
broadcast-noop, broadcast-broadcast, broadcast-as-concat (the step of an induction on the
copies: one row, then the rest), transpose-broadcast,
transpose-elementwise, slice-elementwise, reshape-elementwise (2-D to 1-D), broadcast-elementwise, vector-as-row,
every ``<op>-split``, add-comm, multiply-comm, maximum-comm, minimum-comm,
and-comm, or-comm, xor-comm, maximum-idem, minimum-idem, maximum-absorb, minimum-absorb, maximum-as-clamp,
minimum-as-clamp, clamp-as-minmax, clamp-clamp, subtract-as-add-negate, negate-negate,
add-zero, multiply-one, multiply-negone, negate-as-multiply, multiply-pow2-shift,
divide-pow2-shift, convert-convert (all integer type chains), constant-narrow, convert-int-of-bitcast,
minimum-nonnegative-unsigned, convert-clamped-float-via-int (f16 and f32 into s8 and u8), convert-int-truncate,
elementwise-widen (integers of 8 and 16 bits, every operator; bf16 and f16 negate, maximum and minimum
here, add and subtract in a slow test, multiply numerically only), copy-intro and copy-elim; and the layout axioms slice-bitcast-convert, slice-reshape-strided
(strided, whole-row and one-row windows), slice-reshape (a split and a merge group),
bitcast-convert-concat, reshape-concat (row blocks to 1-D, column blocks to [R, 2, K]),
transpose-concat, transpose-squeeze, transpose-reshape, bitcast-convert-splat (bytes) and
concat-strided-store (two column blocks), with bitcast-convert modelled per byte.
Reshapes are row-major (``reshape``: the element at the same linear position): proved are
reshape-reshape (ranks 1 to 3 each, with the lemma that a linear position comes back from
its index, ``round_trip``), reshape-noop, transpose-as-reshape, broadcast-as-reshape,
broadcast-squeeze, reshape-broadcast-scalar, dot-unit-batch, pad-concat and
concat-zero-elementwise (given op(0, 0) = 0, the rule's precondition); transpose-dot-swap
given that DOT does not depend on the order of its two vectors.
The dot rules dot-split-lhs, dot-split-rhs, dot-split-batch (with and without batch
dimensions, either contracting dimension), dot-rhs-transpose, dot-lhs-transpose,
dot-fold-transpose-rhs and dot-fold-transpose-lhs (every permutation of a 2-D operand and
of a 3-D one with a batch dimension) are
proved with a dot's element as an uninterpreted function of the two contracted vectors
(z3 arrays) and their length: every dot, integer or float, is one such function.
Reductions and integer dots are left folds (``Fold``) over their vectors, with lemmas
proved by induction (a base and a step claim each: splitting a fold, an idempotent fold
absorbing its init, and a sum of a row times a column with one nonzero, the selector):
reduce-split-reduced (integer add from 0; max, min, and, or from any init; 8 and 32 bits),
reduce-split-kept (any fold), reduce-unit (each reducer from its identity, integers and
f16/bf16/f32), dot-split-contract, dot-outer-product, dot-identity, negate-as-dot,
reverse-as-dot (either dimension), reduce-as-dot, broadcast-as-dot, broadcast-sums-dot and convert-as-dot
(integers, wrapping).
dot-widen-result (integers: a product's low bits come from its operands' low bits, and a
sum's from its terms', by induction), dot-convert-operands-int, dot-convert-operands-float
and convert-noop are proved for the reference's dot, which converts its operands to its
accumulator type (the result type for integers, f32 for floats of at most 32 bits) before
it multiplies.
Bitcasts at the bit level (``bitcast_bits``: elements as raw bits, chunks lowest first):
bitcast-convert-chain (every chain of 8-, 16- and 32-bit types the rule rewrites) and
bitcast-convert-reshape (a same-width bitcast reinterprets each element alone).
Not proved here (checked numerically only): the inexact float rules (*-float,
add-zero-float). Two need no proof: bitcast-convert-noop (a bitcast to its own type is the
identity by definition) and elementwise-of-constants (its right-hand side is the reference
interpreter's value of its left-hand side).
"""
from __future__ import annotations

import functools
import itertools
from types import SimpleNamespace
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import z3

from ..ir.dtypes import DTYPES, DType
from ..ir.ops import ELEMENTWISE
from .axioms import (
    COMMUTATIVE, compose_broadcast_dims, compose_perm, compose_reverse, compose_slice_dim,
    _folded, convert_chain_exact, free_dims, transpose_of_broadcast, unpermute_slice,
)
from .layout_axioms import squeeze_perm

Elem = z3.DeclareSort("Elem")
Spec = tuple  # (start, stride, count) per dimension, z3 Ints or ints


@dataclass(frozen=True)
class Sym:
    """A symbolic tensor: its shape and its element at an index."""

    shape: tuple
    at: Callable[..., z3.ExprRef]


_fresh = itertools.count()


def ints(prefix: str, n: int) -> list[z3.ArithRef]:
    k = next(_fresh)
    return [z3.Int(f"{prefix}{k}_{i}") for i in range(n)]


def tensor(name: str, rank: int, shape: Sequence | None = None,
           sort: z3.SortRef = Elem) -> tuple[Sym, list[z3.BoolRef]]:
    """A tensor of symbolic (or given) shape and the facts about its dims; its elements of
    ``sort`` (uninterpreted by default; bit-vectors or floats where a claim computes)."""
    dims = list(shape) if shape is not None else ints(name + "_n", rank)
    f = z3.Function(f"{name}{next(_fresh)}", *([z3.IntSort()] * rank), sort)
    return Sym(tuple(dims), lambda *i: f(*i)), [d >= 1 for d in dims if isinstance(d, z3.ArithRef)]


def scalar(name: str) -> z3.ExprRef:
    return z3.Const(f"{name}{next(_fresh)}", Elem)


# ---------------------------------------------------------------- operators


def slice_(x: Sym, spec: Sequence[Spec]) -> Sym:
    return Sym(tuple(c for _, _, c in spec),
               lambda *i: x.at(*(s + k * t for k, (s, t, _) in zip(i, spec))))


def slice_ok(x: Sym, spec: Sequence[Spec]) -> z3.BoolRef:
    return z3.And([z3.And(s >= 0, t >= 1, c >= 0, z3.Implies(c > 0, s + (c - 1) * t <= n - 1))
                   for (s, t, c), n in zip(spec, x.shape)])


def full(x: Sym) -> list[Spec]:
    return [(0, 1, n) for n in x.shape]


def concat(xs: Sequence[Sym], d: int) -> Sym:
    offs = [0]
    for x in xs:
        offs.append(offs[-1] + x.shape[d])

    def at(*i):
        expr = xs[-1].at(*_shift(i, d, offs[-2]))
        for k in range(len(xs) - 2, -1, -1):
            expr = z3.If(i[d] < offs[k + 1], xs[k].at(*_shift(i, d, offs[k])), expr)
        return expr

    shape = list(xs[0].shape)
    shape[d] = offs[-1]
    return Sym(tuple(shape), at)


def concat_ok(xs: Sequence[Sym], d: int) -> z3.BoolRef:
    return z3.And([a == b for x in xs[1:] for k, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if k != d])


def _shift(i: Sequence, d: int, off) -> tuple:
    return tuple(v - off if k == d else v for k, v in enumerate(i))


def transpose(x: Sym, perm: Sequence[int]) -> Sym:
    def at(*i):
        src = [None] * len(perm)
        for j, p in enumerate(perm):
            src[p] = i[j]
        return x.at(*src)

    return Sym(tuple(x.shape[p] for p in perm), at)


def broadcast(x: Sym, shape: Sequence, dims: Sequence[int]) -> Sym:
    """XLA broadcast; an operand dimension of size 1 may stretch (degenerate)."""
    return Sym(tuple(shape), lambda *i: x.at(*(z3.If(x.shape[k] == 1, 0, i[d]) for k, d in enumerate(dims))))


def broadcast_ok(x: Sym, shape: Sequence, dims: Sequence[int]) -> z3.BoolRef:
    return z3.And([z3.Or(x.shape[k] == 1, x.shape[k] == shape[d]) for k, d in enumerate(dims)])


def reverse(x: Sym, dims: Sequence[int]) -> Sym:
    return Sym(x.shape, lambda *i: x.at(*(x.shape[k] - 1 - v if k in dims else v for k, v in enumerate(i))))


def pad(x: Sym, value: z3.ExprRef, lohi: Sequence[tuple]) -> Sym:
    """Edge padding (interior 0); negative lo/hi crop."""
    def at(*i):
        inside = z3.And([z3.And(v - lo >= 0, v - lo < n) for v, (lo, _), n in zip(i, lohi, x.shape)])
        return z3.If(inside, x.at(*(v - lo for v, (lo, _) in zip(i, lohi))), value)

    return Sym(tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, lohi)), at)


def elementwise(f: z3.FuncDeclRef, *xs: Sym | z3.ExprRef) -> Sym:
    """f applied pointwise; a bare element (a scalar operand, e.g. a clamp bound) is passed as is."""
    shaped = [x for x in xs if isinstance(x, Sym)]
    return Sym(shaped[0].shape, lambda *i: f(*(x.at(*i) if isinstance(x, Sym) else x for x in xs)))


def flatten2(x: Sym) -> Sym:
    """reshape of a 2-D tensor to 1-D (row-major)."""
    n0, n1 = x.shape
    return Sym((n0 * n1,), lambda t: x.at(t / n1, t % n1))


# ---------------------------------------------------------------- obligations


def same(lhs: Sym, rhs: Sym, assume: Sequence[z3.BoolRef] = (), rhs_ok: z3.BoolRef | bool = True,
         lemmas: Callable[..., list[z3.BoolRef]] | None = None) -> z3.BoolRef:
    """Claim: under ``assume``, rhs is well formed, has lhs's shape and lhs's elements.
    ``lemmas(*index)`` gives instances of proved lemmas (``euclid``) about the index,
    assumed too: instances of a valid formula are valid, so the claim stays sound."""
    idx = ints("i", len(lhs.shape))
    inside = z3.And([z3.And(0 <= i, i < n) for i, n in zip(idx, lhs.shape)])
    shapes = z3.And([a == b for a, b in zip(lhs.shape, rhs.shape)]) if lhs.shape else z3.BoolVal(True)
    known = z3.And(lemmas(*idx)) if lemmas else z3.BoolVal(True)
    body = z3.And(rhs_ok, shapes, z3.Implies(z3.And(inside, known), lhs.at(*idx) == rhs.at(*idx)))
    return z3.Implies(z3.And(list(assume)), body)


def euclid(q, r, b) -> z3.BoolRef:
    """Uniqueness of integer division: b >= 1 and 0 <= r < b give (q*b + r) / b == q and
    (q*b + r) % b == r. z3 proves this for free q, r, b at once (``EUCLID``), but not
    always instances such as (a*b + i) % b == i % b, which nonlinear claims need."""
    return z3.Implies(z3.And(b >= 1, r >= 0, r < b), z3.And((q * b + r) / b == q, (q * b + r) % b == r))


EUCLID = euclid(*z3.Ints("euclid_q euclid_r euclid_b"))


def valid(claim: z3.BoolRef, timeout_ms: int = 20000) -> bool:
    """The claim is valid: its negation is unsat. Checked in a context of its own: in the
    shared one, z3's search depends on every term made before (nonlinear reshape claims
    went from under a second to a timeout with the tests that happened to run first)."""
    ctx = z3.Context()
    s = z3.Solver(ctx=ctx)
    s.set(timeout=timeout_ms)
    s.add(z3.Not(claim).translate(ctx))
    return s.check() == z3.unsat


PROOFS: dict[str, Callable[[], list[z3.BoolRef]]] = {}


def proves(*names: str):
    def wrap(fn: Callable[[], list[z3.BoolRef]]):
        for n in names:
            PROOFS[n] = fn
        return fn

    return wrap


def prove(name: str) -> bool:
    """Every obligation of rule ``name``'s encoding is valid."""
    return all(valid(c) for c in PROOFS[name]())


def spec_vars(rank: int) -> list[Spec]:
    return [tuple(ints("s", 3)) for _ in range(rank)]


# ---------------------------------------------------------------- slice / concat / pad / reverse


@proves("slice-slice")
def _slice_slice() -> list[z3.BoolRef]:
    x, facts = tensor("x", 1)
    inner_spec, outer_spec = spec_vars(1), spec_vars(1)
    inner = slice_(x, inner_spec)
    (s1, t1, c1), (s2, t2, _) = outer_spec[0], inner_spec[0]
    start, stride = compose_slice_dim(s1, t1, s2, t2)
    rhs_spec = [(start, stride, c1)]
    assume = facts + [slice_ok(x, inner_spec), slice_ok(inner, outer_spec)]
    return [same(slice_(inner, outer_spec), slice_(x, rhs_spec), assume, slice_ok(x, rhs_spec))]


@proves("slice-full")
def _slice_full() -> list[z3.BoolRef]:
    x, facts = tensor("x", 2)
    return [same(slice_(x, full(x)), x, facts)]


@proves("slice-concat-within")
def _slice_concat_within() -> list[z3.BoolRef]:
    x0, f0 = tensor("x", 1)
    x1, f1 = tensor("y", 1)
    cat = concat([x0, x1], 0)
    spec = spec_vars(1)
    s, t, c = spec[0]
    last = s + (c - 1) * t
    offs = [0, x0.shape[0], x0.shape[0] + x1.shape[0]]
    claims = []
    for k, x in enumerate((x0, x1)):
        sub = [(s - offs[k], t, c)]
        pre = f0 + f1 + [slice_ok(cat, spec), c >= 1, offs[k] <= s, last < offs[k + 1]]
        claims.append(same(slice_(cat, spec), slice_(x, sub), pre, slice_ok(x, sub)))
    return claims


@proves("slice-concat-distribute")
def _slice_concat_distribute() -> list[z3.BoolRef]:
    x0, f0 = tensor("x", 2)
    x1, f1 = tensor("y", 2, (ints("n", 1)[0], x0.shape[1]))
    cat = concat([x0, x1], 0)
    a, b = ints("ab", 2)
    other = spec_vars(1)[0]
    spec = [(a, 1, b - a), other]
    offs = [0, x0.shape[0], x0.shape[0] + x1.shape[0]]
    parts, oks = [], []
    for k, x in enumerate((x0, x1)):
        lo, hi = _max(a, offs[k]), _min(b, offs[k + 1])
        sub = [(lo - offs[k], 1, hi - lo), other]
        parts.append(slice_(x, sub))
        oks.append(slice_ok(x, sub))
    touches_both = z3.And(a < offs[1], offs[1] < b)
    pre = f0 + f1 + [x1.shape[0] >= 1, slice_ok(cat, spec), touches_both]
    return [same(slice_(cat, spec), concat(parts, 0), pre, z3.And(oks + [concat_ok(parts, 0)]))]


def _max(a, b):
    return z3.If(a >= b, a, b)


def _min(a, b):
    return z3.If(a <= b, a, b)


@proves("concat-merge-slices")
def _concat_merge_slices() -> list[z3.BoolRef]:
    x, facts = tensor("x", 1)
    a, t, c1, c2 = ints("m", 4)
    p, q = [(a, t, c1)], [(a + c1 * t, t, c2)]
    merged = [(a, t, c1 + c2)]
    pre = facts + [c1 >= 1, c2 >= 1, slice_ok(x, p), slice_ok(x, q)]
    return [same(concat([slice_(x, p), slice_(x, q)], 0), slice_(x, merged), pre, slice_ok(x, merged))]


def _three(rank: int, d: int) -> tuple[list[Sym], list[z3.BoolRef]]:
    first, facts = tensor("a", rank)
    xs = [first]
    for name in ("b", "c"):
        shape = [ints("n", 1)[0] if k == d else first.shape[k] for k in range(rank)]
        x, f = tensor(name, rank, shape)
        xs.append(x)
        facts += f + [shape[d] >= 1]
    return xs, facts


@proves("concat-flatten")
def _concat_flatten() -> list[z3.BoolRef]:
    (a, b, c), facts = _three(2, 1)
    return [same(concat([a, concat([b, c], 1)], 1), concat([a, b, c], 1), facts)]


@proves("concat-binarize")
def _concat_binarize() -> list[z3.BoolRef]:
    (a, b, c), facts = _three(2, 0)
    return [same(concat([a, b, c], 0), concat([a, concat([b, c], 0)], 0), facts)]


@proves("concat-single")
def _concat_single() -> list[z3.BoolRef]:
    x, facts = tensor("x", 2)
    return [same(concat([x], 1), x, facts)]


@proves("pad-noop")
def _pad_noop() -> list[z3.BoolRef]:
    x, facts = tensor("x", 2)
    return [same(pad(x, scalar("v"), [(0, 0), (0, 0)]), x, facts)]


@proves("slice-pad")
def _slice_pad() -> list[z3.BoolRef]:
    x, facts = tensor("x", 1)
    lo, hi = ints("p", 2)
    padded = pad(x, scalar("v"), [(lo, hi)])
    spec = spec_vars(1)
    s, t, c = spec[0]
    last = s + (c - 1) * t
    sub = [(s - lo, t, c)]
    pre = facts + [padded.shape[0] >= 0, slice_ok(padded, spec), c >= 1, s >= lo, last < lo + x.shape[0]]
    return [same(slice_(padded, spec), slice_(x, sub), pre, slice_ok(x, sub))]


def _subsets(rank: int) -> list[tuple[int, ...]]:
    return [c for k in range(rank + 1) for c in itertools.combinations(range(rank), k)]


@proves("reverse-reverse")
def _reverse_reverse() -> list[z3.BoolRef]:
    claims = []
    for inner, outer in itertools.product(_subsets(2), repeat=2):
        if not inner:
            continue
        x, facts = tensor("x", 2)
        dims = compose_reverse(inner, outer)
        rhs = reverse(x, dims) if dims else x
        claims.append(same(reverse(reverse(x, inner), outer), rhs, facts))
    return claims


@proves("reverse-noop")
def _reverse_noop() -> list[z3.BoolRef]:
    x, facts = tensor("x", 2, (1, ints("n", 1)[0]))
    return [same(reverse(x, (0,)), x, facts)]


@proves("slice-transpose")
def _slice_transpose() -> list[z3.BoolRef]:
    claims = []
    for perm in itertools.permutations(range(3)):
        x, facts = tensor("x", 3)
        t = transpose(x, perm)
        spec = spec_vars(3)
        sub = list(unpermute_slice(spec, perm))
        claims.append(same(slice_(t, spec), transpose(slice_(x, sub), perm), facts + [slice_ok(t, spec)],
                           slice_ok(x, sub)))
    return claims


@proves("slice-broadcast")
def _slice_broadcast() -> list[z3.BoolRef]:
    claims = []
    for dims in ((0,), (1,)):
        for degenerate in (False, True):
            out = ints("o", 2)
            x, facts = tensor("x", 1, (1,) if degenerate else (out[dims[0]],))
            b = broadcast(x, out, dims)
            spec = spec_vars(2)
            # the rule: the broadcast dim's slice when sizes match, else [0:1] of the size-1 dim
            sub = [(0, 1, 1)] if degenerate else [spec[dims[0]]]
            pre = facts + [o >= 1 for o in out] + [slice_ok(b, spec)]
            if degenerate:
                pre.append(out[dims[0]] != 1)
            rhs = broadcast(slice_(x, sub), tuple(c for _, _, c in spec), dims)
            claims.append(same(slice_(b, spec), rhs, pre, slice_ok(x, sub)))
    return claims


# ---------------------------------------------------------------- transpose / broadcast / reshape


@proves("transpose-transpose")
def _transpose_transpose() -> list[z3.BoolRef]:
    claims = []
    for p, q in itertools.product(itertools.permutations(range(3)), repeat=2):
        x, facts = tensor("x", 3)
        claims.append(same(transpose(transpose(x, p), q), transpose(x, compose_perm(p, q)), facts))
    return claims


@proves("transpose-noop")
def _transpose_noop() -> list[z3.BoolRef]:
    x, facts = tensor("x", 3)
    return [same(transpose(x, (0, 1, 2)), x, facts)]


@proves("broadcast-noop")
def _broadcast_noop() -> list[z3.BoolRef]:
    x, facts = tensor("x", 2)
    return [same(broadcast(x, x.shape, (0, 1)), x, facts)]


@proves("broadcast-broadcast")
def _broadcast_broadcast() -> list[z3.BoolRef]:
    claims = []
    for inner in ((0,), (1,)):
        for outer in itertools.combinations(range(3), 2):
            x, facts = tensor("x", 1)
            mid, out = ints("m", 2), ints("o", 3)
            b1 = broadcast(x, mid, inner)
            dims = compose_broadcast_dims(inner, outer)
            pre = facts + [d >= 1 for d in mid + out] + [broadcast_ok(x, mid, inner), broadcast_ok(b1, out, outer)]
            claims.append(same(broadcast(b1, out, outer), broadcast(x, out, dims), pre, broadcast_ok(x, out, dims)))
    return claims


@proves("broadcast-as-concat")
def _broadcast_as_concat() -> list[z3.BoolRef]:
    """The rule's n copies by induction on n: the broadcast to n along an added dimension is
    the broadcast to 1 there followed by the broadcast to n - 1 (symbolic n >= 2 and other
    dims, the operand's dim stretched or not); concat-flatten then gives one concatenation."""
    claims = []
    for d, dims in ((0, (1,)), (1, (0,))):
        for degenerate in (False, True):
            out = ints("o", 2)
            x, facts = tensor("x", 1, (1,) if degenerate else (out[dims[0]],))
            one, rest = list(out), list(out)
            one[d], rest[d] = 1, out[d] - 1
            rhs = concat([broadcast(x, one, dims), broadcast(x, rest, dims)], d)
            pre = facts + [o >= 1 for o in out] + [out[d] >= 2]
            claims.append(same(broadcast(x, out, dims), rhs, pre, concat_ok([broadcast(x, one, dims),
                                                                            broadcast(x, rest, dims)], d)))
    return claims


@proves("transpose-broadcast")
def _transpose_broadcast() -> list[z3.BoolRef]:
    claims = []
    for dims in itertools.combinations(range(3), 2):
        for perm in itertools.permutations(range(3)):
            x, facts = tensor("x", 2)
            out = ints("o", 3)
            sigma, new_dims = transpose_of_broadcast(dims, perm)
            xt = transpose(x, sigma)
            shape = tuple(out[p] for p in perm)
            pre = facts + [d >= 1 for d in out] + [broadcast_ok(x, out, dims)]
            claims.append(same(transpose(broadcast(x, out, dims), perm), broadcast(xt, shape, new_dims), pre,
                               broadcast_ok(xt, shape, new_dims)))
    return claims


def _pointwise(arity: int) -> z3.FuncDeclRef:
    return z3.Function(f"f{next(_fresh)}", *([Elem] * arity), Elem)


@proves("transpose-elementwise")
def _transpose_elementwise() -> list[z3.BoolRef]:
    claims = []
    for perm in itertools.permutations(range(3)):
        x, fx = tensor("x", 3)
        y, fy = tensor("y", 3, x.shape)
        f = _pointwise(2)
        rhs = elementwise(f, transpose(x, perm), transpose(y, perm))
        claims.append(same(transpose(elementwise(f, x, y), perm), rhs, fx + fy))
    return claims


@proves("broadcast-elementwise")
def _broadcast_elementwise() -> list[z3.BoolRef]:
    """For operands of any shape (the rule takes one-element ones), rank 1 or 2 into rank
    2 or 3 at every choice of dimensions, a clamp-like scalar operand kept as it is."""
    claims = []
    for r in (1, 2):
        for dims in itertools.combinations(range(r + 1), r):
            x, fx = tensor("x", r)
            y, fy = tensor("y", r, x.shape)
            f, lo = _pointwise(3), scalar("lo")
            out = ints("o", r + 1)
            pre = fx + fy + [d >= 1 for d in out] + [broadcast_ok(x, out, dims)]
            rhs = elementwise(f, lo, broadcast(x, out, dims), broadcast(y, out, dims))
            claims.append(same(broadcast(elementwise(f, lo, x, y), out, dims), rhs, pre))
    return claims


@proves("slice-elementwise")
def _slice_elementwise() -> list[z3.BoolRef]:
    x, fx = tensor("x", 2)
    y, fy = tensor("y", 2, x.shape)
    f, lo = _pointwise(3), scalar("lo")  # a clamp-like op with one scalar operand
    spec = spec_vars(2)
    lhs = slice_(elementwise(f, lo, x, y), spec)
    return [same(lhs, elementwise(f, lo, slice_(x, spec), slice_(y, spec)), fx + fy + [slice_ok(x, spec)],
                 slice_ok(x, spec))]


@proves("vector-as-row")
def _vector_as_row() -> list[z3.BoolRef]:
    x, facts = tensor("x", 1)
    return [same(flatten2(unflatten2(x, 1, x.shape[0])), x, facts)]


@proves("reshape-elementwise")
def _reshape_elementwise() -> list[z3.BoolRef]:
    x, fx = tensor("x", 2)
    y, fy = tensor("y", 2, x.shape)
    f = _pointwise(2)
    return [same(flatten2(elementwise(f, x, y)), elementwise(f, flatten2(x), flatten2(y)), fx + fy)]


def _split_claims() -> list[z3.BoolRef]:
    """op(x, ..) = concat(op(x[:p], ..), op(x[p:], ..)) along either dim, any 0 < p < n, for
    unary, binary and ternary ops, and for a clamp with scalar bounds (kept unsliced)."""
    claims = []
    for d, (arrays, scalars) in itertools.product((0, 1), ((1, 0), (2, 0), (3, 0), (1, 2))):
        first, facts = tensor("x", 2)
        xs: list = [first]
        for _ in range(arrays - 1):
            y, fy = tensor("y", 2, first.shape)
            xs.append(y)
            facts += fy
        bounds = [scalar("b") for _ in range(scalars)]
        (p,) = ints("p", 1)
        n = first.shape[d]
        lo, hi = _halves_at(first, d, p)
        f = _pointwise(arrays + scalars)
        halves = [elementwise(f, *bounds, *(slice_(x, s) for x in xs)) for s in (lo, hi)]
        rhs_ok = z3.And([slice_ok(x, s) for x in xs for s in (lo, hi)])
        claims.append(same(elementwise(f, *bounds, *xs), concat(halves, d), facts + [0 < p, p < n], rhs_ok))
    return claims


proves(*(f"{op}-split" for op in sorted(ELEMENTWISE)))(_split_claims)


# A dot's element depends only on the two contracted vectors and their length (the sum of
# their products is one such function), so a claim proved for an uninterpreted DOT holds for
# every dot, integer or float, whatever its order of summation.
_VECTOR = z3.ArraySort(z3.IntSort(), Elem)
DOT = z3.Function("dot", _VECTOR, _VECTOR, z3.IntSort(), Elem)


def dot(a: Sym, b: Sym, lc: int, rc: int, lb: Sequence[int] = (), rb: Sequence[int] = ()) -> Sym:
    """XLA dot with one contracting dimension: batch dims, then a's free dims, then b's."""
    fa, fb = free_dims(len(a.shape), lb, (lc,)), free_dims(len(b.shape), rb, (rc,))

    def vector(x: Sym, batch: Sequence[int], free: Sequence[int], c: int, ib, ifree):
        def index(k):
            at = [None] * len(x.shape)
            for d, v in list(zip(batch, ib)) + list(zip(free, ifree)) + [(c, k)]:
                at[d] = v
            return at
        k = z3.Int(f"k{next(_fresh)}")
        return z3.Lambda([k], x.at(*index(k)))

    def at(*i):
        ib, ia, ja = i[:len(lb)], i[len(lb):len(lb) + len(fa)], i[len(lb) + len(fa):]
        return DOT(vector(a, lb, fa, lc, ib, ia), vector(b, rb, fb, rc, ib, ja), a.shape[lc])

    shape = [a.shape[d] for d in lb] + [a.shape[d] for d in fa] + [b.shape[d] for d in fb]
    return Sym(tuple(shape), at)


def dot_ok(a: Sym, b: Sym, lc: int, rc: int, lb: Sequence[int] = (), rb: Sequence[int] = ()) -> z3.BoolRef:
    return z3.And([a.shape[lc] == b.shape[rc]] + [a.shape[x] == b.shape[y] for x, y in zip(lb, rb)])


def _halves_at(x: Sym, d: int, p) -> tuple[list[Spec], list[Spec]]:
    lo = [(0, 1, p) if k == d else (0, 1, n) for k, n in enumerate(x.shape)]
    hi = [(p, 1, x.shape[d] - p) if k == d else (0, 1, n) for k, n in enumerate(x.shape)]
    return lo, hi


# (lhs rank, lhs contracting dim, rhs rank, rhs contracting dim, batch dims): the forms claimed
_DOT_FORMS = [(2, 1, 2, 0, ()), (2, 0, 2, 0, ()), (2, 1, 2, 1, ()), (3, 2, 3, 1, ((0, 0),)),
              (3, 1, 2, 0, ())]


def _dot_operands(ra: int, lc: int, rb_: int, rc: int, batch) -> tuple[Sym, Sym, tuple, tuple, list]:
    a, fa = tensor("a", ra)
    b, fb = tensor("b", rb_)
    lb, rb = tuple(x for x, _ in batch), tuple(y for _, y in batch)
    return a, b, lb, rb, fa + fb + [dot_ok(a, b, lc, rc, lb, rb)]


@proves("dot-split-lhs")
def _dot_split_lhs() -> list[z3.BoolRef]:
    """dot(a, b) = concat(dot(a[:p], b), dot(a[p:], b)) along each free dimension of a."""
    claims = []
    for ra, lc, rb_, rc, batch in _DOT_FORMS:
        a, b, lb, rb, facts = _dot_operands(ra, lc, rb_, rc, batch)
        for i, d in enumerate(free_dims(ra, lb, (lc,))):
            (p,) = ints("p", 1)
            lo, hi = _halves_at(a, d, p)
            rhs = concat([dot(slice_(a, s), b, lc, rc, lb, rb) for s in (lo, hi)], len(lb) + i)
            claims.append(same(dot(a, b, lc, rc, lb, rb), rhs, facts + [0 < p, p < a.shape[d]],
                               z3.And(slice_ok(a, lo), slice_ok(a, hi))))
    return claims


@proves("dot-split-rhs")
def _dot_split_rhs() -> list[z3.BoolRef]:
    """dot(a, b) = concat(dot(a, b[.., :p]), dot(a, b[.., p:])) along each free dimension of b."""
    claims = []
    for ra, lc, rb_, rc, batch in _DOT_FORMS:
        a, b, lb, rb, facts = _dot_operands(ra, lc, rb_, rc, batch)
        base = len(lb) + len(free_dims(ra, lb, (lc,)))
        for i, d in enumerate(free_dims(rb_, rb, (rc,))):
            (p,) = ints("p", 1)
            lo, hi = _halves_at(b, d, p)
            rhs = concat([dot(a, slice_(b, s), lc, rc, lb, rb) for s in (lo, hi)], base + i)
            claims.append(same(dot(a, b, lc, rc, lb, rb), rhs, facts + [0 < p, p < b.shape[d]],
                               z3.And(slice_ok(b, lo), slice_ok(b, hi))))
    return claims


@proves("dot-split-batch")
def _dot_split_batch() -> list[z3.BoolRef]:
    """dot(a, b) = concat(dot(a[:p], b[:p]), dot(a[p:], b[p:])) along a batch dimension."""
    a, b, lb, rb, facts = _dot_operands(3, 2, 3, 1, ((0, 0),))
    (p,) = ints("p", 1)
    (alo, ahi), (blo, bhi) = _halves_at(a, 0, p), _halves_at(b, 0, p)
    rhs = concat([dot(slice_(a, x), slice_(b, y), 2, 1, lb, rb) for x, y in ((alo, blo), (ahi, bhi))], 0)
    ok = z3.And([slice_ok(a, alo), slice_ok(a, ahi), slice_ok(b, blo), slice_ok(b, bhi)])
    return [same(dot(a, b, 2, 1, lb, rb), rhs, facts + [0 < p, p < a.shape[0]], ok)]


@proves("dot-rhs-transpose")
def _dot_rhs_transpose() -> list[z3.BoolRef]:
    """dot(a, b) contracting b's dim 1 = dot(a, transpose(b)) contracting its dim 0."""
    claims = []
    for lc in (0, 1):
        a, b, lb, rb, facts = _dot_operands(2, lc, 2, 1, ())
        claims.append(same(dot(a, b, lc, 1), dot(a, transpose(b, (1, 0)), lc, 0), facts))
    return claims


@proves("dot-lhs-transpose")
def _dot_lhs_transpose() -> list[z3.BoolRef]:
    """dot(a, b) contracting a's dim 0 = dot(transpose(a), b) contracting its dim 1."""
    claims = []
    for rc in (0, 1):
        a, b, lb, rb, facts = _dot_operands(2, 0, 2, rc, ())
        claims.append(same(dot(a, b, 0, rc), dot(transpose(a, (1, 0)), b, 1, rc), facts))
    return claims


def _fold_claims(side: str) -> list[z3.BoolRef]:
    """dot-fold-transpose-<side>: a transposed operand read through the rule's own
    dimension mapping (``_folded``), for every permutation of a 2-D operand and of a 3-D
    one with a batch dimension, each contracting dimension (one)."""
    claims = []
    for rank in (2, 3):
        for perm, c in itertools.product(itertools.permutations(range(rank)), range(rank)):
            for batch in ([()] if rank == 2 else [(d,) for d in range(rank) if d != c]):
                dims = _folded(None, SimpleNamespace(attrs={"dimensions": perm}), batch, (c,))
                if dims is None:
                    continue
                x, fx = tensor("x", rank)
                other, fo = tensor("o", 2 + len(batch))
                ob, oc = tuple(range(len(batch))), 1 + len(batch)  # the other operand: batch first, contracted last
                t = transpose(x, perm)
                if side == "rhs":
                    lhs, rhs = dot(other, t, oc, c, ob, batch), dot(other, x, oc, dims[1][0], ob, dims[0])
                    ok = dot_ok(other, t, oc, c, ob, batch)
                else:
                    lhs, rhs = dot(t, other, c, oc, batch, ob), dot(x, other, dims[1][0], oc, dims[0], ob)
                    ok = dot_ok(t, other, c, oc, batch, ob)
                claims.append(same(lhs, rhs, fx + fo + [ok]))
    return claims


proves("dot-fold-transpose-rhs")(lambda: _fold_claims("rhs"))
proves("dot-fold-transpose-lhs")(lambda: _fold_claims("lhs"))


@proves("copy-intro", "copy-elim")
def _copy() -> list[z3.BoolRef]:
    x, facts = tensor("x", 2)
    copy = Sym(x.shape, x.at)  # copy is the identity on elements
    return [same(copy, x, facts), same(x, copy, facts)]


# ---------------------------------------------------------------- element algebra: bit-vectors and IEEE floats

_INT_WIDTHS = (8, 32)
_FLOAT_SORTS = {"f16": z3.Float16(), "bf16": z3.FPSort(8, 8), "f32": z3.Float32()}
_RM = z3.RNE()


def _ref_max(a, b):
    """maximum as the reference computes it: NaN propagates; of two zeros, -0 only if both are."""
    zeros = z3.And(z3.fpIsZero(a), z3.fpIsZero(b))
    both_neg = z3.And(z3.fpIsNegative(a), z3.fpIsNegative(b))
    s = a.sort()
    return z3.If(z3.fpIsNaN(a), a, z3.If(z3.fpIsNaN(b), b, z3.If(
        zeros, z3.If(both_neg, z3.fpMinusZero(s), z3.fpPlusZero(s)), z3.If(z3.fpGT(a, b), a, b))))


def _ref_min(a, b):
    zeros = z3.And(z3.fpIsZero(a), z3.fpIsZero(b))
    any_neg = z3.Or(z3.fpIsNegative(a), z3.fpIsNegative(b))
    s = a.sort()
    return z3.If(z3.fpIsNaN(a), a, z3.If(z3.fpIsNaN(b), b, z3.If(
        zeros, z3.If(any_neg, z3.fpMinusZero(s), z3.fpPlusZero(s)), z3.If(z3.fpLT(a, b), a, b))))


def _bv_ops(signed: bool) -> dict[str, Callable]:
    return {
        "add": lambda a, b: a + b, "multiply": lambda a, b: a * b, "and": lambda a, b: a & b,
        "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
        "maximum": lambda a, b: z3.If(a > b if signed else z3.UGT(a, b), a, b),
        "minimum": lambda a, b: z3.If(a < b if signed else z3.ULT(a, b), a, b),
    }


def _fp_ops() -> dict[str, Callable]:
    return {"add": lambda a, b: z3.fpAdd(_RM, a, b), "multiply": lambda a, b: z3.fpMul(_RM, a, b),
            "maximum": _ref_max, "minimum": _ref_min}


def _bv_cases():
    for bits, signed in itertools.product(_INT_WIDTHS, (True, False)):
        yield z3.BitVecs(f"a{next(_fresh)} b{next(_fresh)}", bits), _bv_ops(signed), signed


def _fp_cases():
    for sort in _FLOAT_SORTS.values():
        yield z3.FPs(f"a{next(_fresh)} b{next(_fresh)}", sort), _fp_ops()


def _commutes(op: str) -> list[z3.BoolRef]:
    claims = [ops[op](a, b) == ops[op](b, a) for (a, b), ops, _ in _bv_cases()]
    claims += [ops[op](a, b) == ops[op](b, a) for (a, b), ops in _fp_cases() if op in ops]
    return claims


for _op in COMMUTATIVE:
    proves(f"{_op}-comm")(lambda op=_op: _commutes(op))


def _idempotent(op: str) -> list[z3.BoolRef]:
    return ([ops[op](a, a) == a for (a, _), ops, _ in _bv_cases()]
            + [ops[op](a, a) == a for (a, _), ops in _fp_cases()])


def _absorbs(op: str) -> list[z3.BoolRef]:
    return ([ops[op](ops[op](a, b), b) == ops[op](a, b) for (a, b), ops, _ in _bv_cases()]
            + [ops[op](ops[op](a, b), b) == ops[op](a, b) for (a, b), ops in _fp_cases()])


proves("maximum-idem")(lambda: _idempotent("maximum"))
proves("minimum-idem")(lambda: _idempotent("minimum"))
proves("maximum-absorb")(lambda: _absorbs("maximum"))
proves("minimum-absorb")(lambda: _absorbs("minimum"))


def _clamp(ops, lo, x, hi):
    return ops["minimum"](ops["maximum"](x, lo), hi)  # the reference's clamp


def _extremes_bv(a, signed: bool):
    bits = a.size()
    top = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
    bottom = -(1 << (bits - 1)) if signed else 0
    return z3.BitVecVal(top, bits), z3.BitVecVal(bottom, bits)


@proves("maximum-as-clamp")
def _maximum_as_clamp() -> list[z3.BoolRef]:
    claims = []
    for (x, s), ops, signed in _bv_cases():
        top, _ = _extremes_bv(x, signed)
        claims.append(ops["maximum"](x, s) == _clamp(ops, s, x, top))
    for (x, s), ops in _fp_cases():
        claims.append(ops["maximum"](x, s) == _clamp(ops, s, x, z3.fpPlusInfinity(x.sort())))
    return claims


@proves("minimum-as-clamp")
def _minimum_as_clamp() -> list[z3.BoolRef]:
    claims = []
    for (x, s), ops, signed in _bv_cases():
        _, bottom = _extremes_bv(x, signed)
        claims.append(ops["minimum"](x, s) == _clamp(ops, bottom, x, s))
    for (x, s), ops in _fp_cases():
        claims.append(ops["minimum"](x, s) == _clamp(ops, z3.fpMinusInfinity(x.sort()), x, s))
    return claims


@proves("clamp-as-minmax")
def _clamp_as_minmax() -> list[z3.BoolRef]:
    """With scalar bounds: clamp(lo, x, hi) at each index = min(max(x, broadcast(lo)), broadcast(hi))."""
    x, facts = tensor("x", 2)
    lo, hi = tensor("lo", 0, ())[0], tensor("hi", 0, ())[0]
    mx, mn = _pointwise(2), _pointwise(2)
    clamp = Sym(x.shape, lambda *i: mn(mx(x.at(*i), lo.at()), hi.at()))
    rhs = elementwise(mn, elementwise(mx, x, broadcast(lo, x.shape, ())), broadcast(hi, x.shape, ()))
    return [same(clamp, rhs, facts)]


@proves("clamp-clamp")
def _clamp_clamp() -> list[z3.BoolRef]:
    """Pointwise, for bounds with max(lo1, lo2) <= min(hi1, hi2) (for floats: no NaN, and
    no two bounds compared, nor the new lo and hi, zeros of opposite sign)."""
    claims = []
    for (x, lo1), ops, signed in _bv_cases():
        hi1, lo2, hi2 = (z3.BitVec(f"k{next(_fresh)}", x.size()) for _ in range(3))
        mx, mn = ops["maximum"], ops["minimum"]
        lo, hi = mx(lo1, lo2), mn(hi1, hi2)
        le = (lambda a, b: a <= b) if signed else z3.ULE
        claims.append(z3.Implies(le(lo, hi), _clamp(ops, lo2, _clamp(ops, lo1, x, hi1), hi2) == _clamp(ops, lo, x, hi)))
    for (x, lo1), ops in _fp_cases():
        hi1, lo2, hi2 = (z3.FP(f"k{next(_fresh)}", x.sort()) for _ in range(3))
        mx, mn = ops["maximum"], ops["minimum"]
        lo, hi = mx(lo1, lo2), mn(hi1, hi2)
        same_zero = [z3.Or(z3.Not(z3.And(z3.fpIsZero(a), z3.fpIsZero(b))), a == b) for a, b in ((lo1, lo2), (hi1, hi2), (lo, hi))]
        ok = z3.And(*[z3.Not(z3.fpIsNaN(b)) for b in (lo1, hi1, lo2, hi2)], *same_zero, z3.fpLEQ(lo, hi))
        claims.append(z3.Implies(ok, _clamp(ops, lo2, _clamp(ops, lo1, x, hi1), hi2) == _clamp(ops, lo, x, hi)))
    return claims


@proves("subtract-as-add-negate")
def _subtract() -> list[z3.BoolRef]:
    claims = [a - b == a + (-b) for (a, b), _, _ in _bv_cases()]
    claims += [z3.fpSub(_RM, a, b) == z3.fpAdd(_RM, a, z3.fpNeg(b)) for (a, b), _ in _fp_cases()]
    return claims


@proves("negate-negate")
def _negate_negate() -> list[z3.BoolRef]:
    return [-(-a) == a for (a, _), _, _ in _bv_cases()] + [z3.fpNeg(z3.fpNeg(a)) == a for (a, _), _ in _fp_cases()]


@proves("add-zero")
def _add_zero() -> list[z3.BoolRef]:
    claims = [a + 0 == a for (a, _), _, _ in _bv_cases()]
    claims += [z3.fpAdd(_RM, a, z3.fpMinusZero(a.sort())) == a for (a, _), _ in _fp_cases()]
    return claims


def add_positive_zero_counterexample() -> z3.ModelRef | None:
    """Why add-zero-float is not exact: x + (+0) != x has a model (x = -0)."""
    a = z3.FP("a", z3.Float32())
    s = z3.Solver()
    s.add(z3.Not(z3.fpAdd(_RM, a, z3.fpPlusZero(a.sort())) == a))
    return s.model() if s.check() == z3.sat else None


@proves("multiply-one")
def _multiply_one() -> list[z3.BoolRef]:
    claims = [a * 1 == a for (a, _), _, _ in _bv_cases()]
    claims += [z3.fpMul(_RM, a, z3.FPVal(1.0, a.sort())) == a for (a, _), _ in _fp_cases()]
    return claims


@proves("multiply-negone")
def _multiply_negone() -> list[z3.BoolRef]:
    claims = [a * -1 == -a for (a, _), _, signed in _bv_cases() if signed]
    claims += [z3.fpMul(_RM, a, z3.FPVal(-1.0, a.sort())) == z3.fpNeg(a) for (a, _), _ in _fp_cases()]
    return claims


@proves("negate-as-multiply")
def _negate_as_multiply() -> list[z3.BoolRef]:
    return _multiply_negone()  # the same identity, read the other way


@proves("multiply-pow2-shift")
def _multiply_pow2_shift() -> list[z3.BoolRef]:
    claims = []
    for (a, k), _, _ in _bv_cases():
        bits = a.size()
        claims.append(z3.Implies(z3.ULT(k, bits), a * (z3.BitVecVal(1, bits) << k) == a << k))
    return claims


@proves("divide-pow2-shift")
def _divide_pow2_shift() -> list[z3.BoolRef]:
    claims = []
    for (a, k), _, signed in _bv_cases():
        if not signed:
            bits = a.size()
            claims.append(z3.Implies(z3.ULT(k, bits), z3.UDiv(a, z3.BitVecVal(1, bits) << k) == z3.LShR(a, k)))
    return claims


# ---------------------------------------------------------------- conversions between integer types


INT_TYPES = [DTYPES[n] for n in ("s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64")]


def convert_bv(x: z3.BitVecRef, src: DType, dst: DType) -> z3.BitVecRef:
    """XLA integer convert: extend by the source's signedness, or keep the low bits (wrap)."""
    if dst.bits > src.bits:
        return (z3.SignExt if src.is_signed else z3.ZeroExt)(dst.bits - src.bits, x)
    return z3.Extract(dst.bits - 1, 0, x) if dst.bits < src.bits else x


def convert_chain_claim(t1: DType, t2: DType, t3: DType) -> z3.BoolRef:
    x = z3.BitVec(f"x{next(_fresh)}", t1.bits)
    return convert_bv(convert_bv(x, t1, t2), t2, t3) == convert_bv(x, t1, t3)


@proves("convert-convert")
def _convert_convert() -> list[z3.BoolRef]:
    """Every integer chain the rule accepts (convert_chain_exact) is an identity."""
    return [convert_chain_claim(a, b, c) for a, b, c in itertools.product(INT_TYPES, repeat=3)
            if convert_chain_exact(a, b, c)]


@proves("constant-narrow")
def _constant_narrow() -> list[z3.BoolRef]:
    """A value of T within the range of a narrower integer type D (what the rule checks
    of every element) comes back unchanged from D: convert(convert(x, D), T) = x."""
    claims = []
    for t, d in itertools.product(INT_TYPES, repeat=2):
        if d.bits >= t.bits:
            continue
        x = z3.BitVec(f"x{next(_fresh)}", t.bits)
        info = np.iinfo(d.np)
        if t.is_signed:
            inside = z3.And(info.min <= x, x <= info.max)
        else:
            inside = z3.ULE(x, z3.BitVecVal(info.max, t.bits))
        claims.append(z3.Implies(inside, convert_bv(convert_bv(x, t, d), d, t) == x))
    return claims


def float_to_int_bv(x: z3.FPRef, dst: DType) -> z3.BitVecRef:
    """The reference's float->int convert: truncate toward zero, saturate, NaN -> 0."""
    bits = dst.bits
    top, bottom = _extremes_bv(z3.BitVec("t", bits), dst.is_signed)
    above = z3.FPVal(2.0 ** (bits - 1 if dst.is_signed else bits), x.sort())
    below = z3.FPVal(-(2.0 ** (bits - 1)) if dst.is_signed else -1.0, x.sort())
    inside = (z3.fpToSBV if dst.is_signed else z3.fpToUBV)(z3.RTZ(), x, z3.BitVecSort(bits))
    return z3.If(z3.fpIsNaN(x), z3.BitVecVal(0, bits),
                 z3.If(z3.fpGEQ(x, above), top, z3.If(z3.fpLEQ(x, below), bottom, inside)))


@proves("convert-clamped-float-via-int")
def _convert_clamped_float_via_int() -> list[z3.BoolRef]:
    """For float bounds lo <= hi (not NaN) whose conversions L, H to the signed type W of the
    float's width satisfy D.min <= L <= 0 <= H <= D.max: convert(clamp(lo, x, hi), D) =
    convert(clamp(L, convert(x, W), H), D), for f16 (W = s16) and f32 (W = s32) into s8 and u8."""
    claims = []
    for fname, wname in (("f16", "s16"), ("f32", "s32")):
        w = DTYPES[wname]
        for dname in ("s8", "u8"):
            d = DTYPES[dname]
            x, lo, hi = z3.FPs(f"x{next(_fresh)} lo{next(_fresh)} hi{next(_fresh)}", _FLOAT_SORTS[fname])
            big, small = _extremes_bv(z3.BitVec("t", w.bits), True)
            dmax, dmin = (z3.BitVecVal(int(v), w.bits) for v in (np.iinfo(d.np).max, np.iinfo(d.np).min))
            lw, hw = float_to_int_bv(lo, w), float_to_int_bv(hi, w)
            pre = z3.And(z3.Not(z3.fpIsNaN(lo)), z3.Not(z3.fpIsNaN(hi)), z3.fpLEQ(lo, hi),
                         dmin <= lw, lw <= 0, 0 <= hw, hw <= dmax)
            ops, iops = _fp_ops(), _bv_ops(True)
            lhs = float_to_int_bv(_clamp(ops, lo, x, hi), d)
            rhs = convert_bv(_clamp(iops, lw, float_to_int_bv(x, w), hw), w, d)
            claims.append(z3.Implies(pre, lhs == rhs))
    return claims


@proves("minimum-nonnegative-unsigned")
def _minimum_nonnegative_unsigned() -> list[z3.BoolRef]:
    """Signed and unsigned minimum agree on values that are both >= 0 as signed."""
    claims = []
    for (a, k), ops, signed in _bv_cases():
        if signed:
            claims.append(z3.Implies(z3.And(a >= 0, k >= 0), ops["minimum"](a, k) == _bv_ops(False)["minimum"](a, k)))
    return claims


@proves("convert-int-of-bitcast")
def _convert_int_of_bitcast() -> list[z3.BoolRef]:
    """A bitcast between integer types of one width keeps the bits; converting to a type
    no wider keeps the low bits whatever the signedness (every such triple of types)."""
    claims = []
    for z, s, d in itertools.product(INT_TYPES, repeat=3):
        if z.bits == s.bits and d.bits <= s.bits:
            x = z3.BitVec(f"x{next(_fresh)}", z.bits)
            claims.append(convert_bv(x, s, d) == convert_bv(x, z, d))
    return claims


# ---------------------------------------------------------------- layouts: views, strided windows and stores
#
# bitcast-convert is modelled per element: to a narrower type, byte k of element x is
# byte(x, k) (an uninterpreted function); to a wider type of w bytes, element i is
# join(x[i, 0], .., x[i, w - 1]) (w = 2 and 4). A reshape between row-major shapes
# keeps the flat index: from 1-D to [R, C] the element (r, c) is x[r * C + c], from
# [R, C] to 1-D element t is x[t / C, t % C] (``flatten2``).

_byte = z3.Function("byte", Elem, z3.IntSort(), Elem)


def narrow(x: Sym, w) -> Sym:
    """bitcast-convert to a type ``w`` times narrower: a trailing byte dimension."""
    return Sym(tuple(x.shape) + (w,), lambda *i: _byte(x.at(*i[:-1]), i[-1]))


def widen(x: Sym, w: int) -> Sym:
    """bitcast-convert to a type ``w`` times wider: the trailing dimension (of size w) joined."""
    join = z3.Function(f"join{w}", *([Elem] * w), Elem)
    return Sym(tuple(x.shape[:-1]), lambda *i: join(*(x.at(*i, k) for k in range(w))))


def unflatten2(x: Sym, rows, cols) -> Sym:
    """reshape of a 1-D tensor to [rows, cols] (row-major)."""
    return Sym((rows, cols), lambda r, c: x.at(r * cols + c))


@proves("slice-bitcast-convert")
def _slice_bitcast_convert() -> list[z3.BoolRef]:
    claims = []
    x, facts = tensor("x", 2)  # equal widths: bitcast is elementwise
    f = _pointwise(1)
    spec = spec_vars(2)
    claims.append(same(slice_(elementwise(f, x), spec), elementwise(f, slice_(x, spec)), facts + [slice_ok(x, spec)],
                       slice_ok(x, spec)))
    x, facts = tensor("x", 2)  # to a narrower type: the byte dimension is taken whole
    (w,) = ints("w", 1)
    spec = spec_vars(2)
    lhs = slice_(narrow(x, w), spec + [(0, 1, w)])
    claims.append(same(lhs, narrow(slice_(x, spec), w), facts + [w >= 1, slice_ok(x, spec)], slice_ok(x, spec)))
    for w in (2, 4):  # to a wider type: the source's trailing dimension is taken whole
        x, facts = tensor("x", 2, (ints("n", 1)[0], w))
        spec = spec_vars(1)
        sub = spec + [(0, 1, w)]
        claims.append(same(slice_(widen(x, w), spec), widen(slice_(x, sub), w), facts + [slice_ok(widen(x, w), spec)],
                           slice_ok(x, sub)))
    return claims


@proves("slice-reshape-strided")
def _slice_reshape_strided() -> list[z3.BoolRef]:
    """A [n, m] window at (r0, c0) of F viewed as [R, C], as strided_window builds it: the
    strided form when 1 < n and m < C, one contiguous slice when m = C or n = 1."""
    claims = []
    for case in ("strided", "rows", "one row"):
        f, facts = tensor("f", 1)
        rows, cols, r0, c0, n, m = ints("w", 6)
        if case == "rows":
            c0, m = 0, cols
        elif case == "one row":
            n = 1
        shape_ok = [rows >= 1, cols >= 1, f.shape[0] == rows * cols, n >= 1, m >= 1, r0 >= 0, c0 >= 0,
                    r0 + n <= rows, c0 + m <= cols]
        lhs = slice_(unflatten2(f, rows, cols), [(r0, 1, n), (c0, 1, m)])
        start = r0 * cols + c0
        if case == "strided":
            span = (n - 1) * cols + m
            win = slice_(f, [(start, 1, span)])
            padded = pad(win, scalar("zero"), [(0, cols - m)])
            rhs = slice_(unflatten2(padded, n, cols), [(0, 1, n), (0, 1, m)])
            ok = z3.And(slice_ok(f, [(start, 1, span)]), padded.shape[0] == n * cols)
        else:
            win = slice_(f, [(start, 1, n * m)])
            rhs = unflatten2(win, n, m)
            ok = slice_ok(f, [(start, 1, n * m)])
        claims.append(same(lhs, rhs, facts + shape_ok, ok))
    return claims


@proves("slice-reshape")
def _slice_reshape() -> list[z3.BoolRef]:
    """The two group shapes: a split [N] -> [A, B] sliced [a:b] x [0:B] is the flat run
    [a*B, b*B); a merge [A, B] -> [A*B] sliced [a*B, b*B) is rows [a:b] of x."""
    x, facts = tensor("x", 1)
    na, nb, a, k = ints("g", 4)
    pre = facts + [na >= 1, nb >= 1, x.shape[0] == na * nb, a >= 0, k >= 1, a + k <= na]
    lhs = slice_(unflatten2(x, na, nb), [(a, 1, k), (0, 1, nb)])
    sub = [(a * nb, 1, k * nb)]
    split = same(lhs, unflatten2(slice_(x, sub), k, nb), pre, slice_ok(x, sub))
    y, facts = tensor("y", 2)
    a, k = ints("m", 2)
    b = y.shape[1]
    pre = facts + [a >= 0, k >= 1, a + k <= y.shape[0]]
    sub2 = [(a, 1, k), (0, 1, b)]
    merge = same(slice_(flatten2(y), [(a * b, 1, k * b)]), flatten2(slice_(y, sub2)), pre, slice_ok(y, sub2),
                 lemmas=lambda i: [euclid(a + i / b, i % b, b)])  # (a*b + i) / b == a + i / b, and % b alike
    return [split, merge]


@proves("bitcast-convert-concat")
def _bitcast_convert_concat() -> list[z3.BoolRef]:
    claims = []
    for d in (0, 1):
        (a, b, _), facts = _three(2, d)
        (w,) = ints("w", 1)
        claims.append(same(narrow(concat([a, b], d), w), concat([narrow(a, w), narrow(b, w)], d), facts + [w >= 1]))
        f = _pointwise(1)
        claims.append(same(elementwise(f, concat([a, b], d)), concat([elementwise(f, a), elementwise(f, b)], d), facts))
    for w in (2, 4):  # wider: along the first dimension of x[n, 2, w]
        (a, b, _), facts = _three(3, 0)
        a, b = (Sym((x.shape[0], 2, w), x.at) for x in (a, b))
        claims.append(same(widen(concat([a, b], 0), w), concat([widen(a, w), widen(b, w)], 0), facts))
    return claims


@proves("reshape-concat")
def _reshape_concat() -> list[z3.BoolRef]:
    """Row blocks [n0, C] and [n1, C] flattened are consecutive runs; and the column halves of
    [R, 2K] blocked as [R, 2, K] (T(16,16)'s reshape) are the halves along the new dim."""
    x0, f0 = tensor("x", 2)
    x1, f1 = tensor("y", 2, (ints("n", 1)[0], x0.shape[1]))
    n0, c = x0.shape
    rows = same(flatten2(concat([x0, x1], 0)), concat([flatten2(x0), flatten2(x1)], 0), f0 + f1 + [x1.shape[0] >= 1],
                lemmas=lambda i: [euclid(i / c - n0, i % c, c)])  # (i - n0*c) / c == i / c - n0, and % c alike
    y0, g0 = tensor("a", 2)
    y1, g1 = tensor("b", 2, y0.shape)
    r, k = y0.shape
    cat = concat([y0, y1], 1)  # [R, 2K] -> [R, 2, K]: (i, h, j) is column h*K + j
    lhs = Sym((r, 2, k), lambda i, h, j: cat.at(i, h * k + j))
    pieces = [Sym((r, 1, k), lambda i, h, j, y=y: y.at(i, h * k + j)) for y in (y0, y1)]
    cols = same(lhs, concat(pieces, 1), g0 + g1)
    return [rows, cols]


@proves("transpose-concat")
def _transpose_concat() -> list[z3.BoolRef]:
    claims = []
    for d in range(3):
        for perm in itertools.permutations(range(3)):
            (a, b, _), facts = _three(3, d)
            rhs = concat([transpose(a, perm), transpose(b, perm)], list(perm).index(d))
            claims.append(same(transpose(concat([a, b], d), perm), rhs, facts))
    return claims


@proves("transpose-squeeze")
def _transpose_squeeze() -> list[z3.BoolRef]:
    """x with a size-1 dimension u: transpose(x, p) = reshape(transpose(squeeze(x), p'), ..),
    where adding or dropping size-1 dimensions is a reshape that keeps every index."""
    claims = []
    for u in range(3):
        for perm in itertools.permutations(range(3)):
            dims = ints("d", 2)
            shape = list(dims)
            shape.insert(u, 1)
            x, facts = tensor("x", 3, shape)
            squeezed = Sym(tuple(dims), lambda i, j, x=x, u=u: x.at(*([i, j][:u] + [0] + [i, j][u:])))
            _, p2 = squeeze_perm([2, 2, 2][:u] + [1] + [2, 2, 2][u:2], perm)
            inner = transpose(squeezed, p2)
            lhs = transpose(x, perm)
            pos = list(perm).index(u)  # where the size-1 dimension lands

            def at(*i, inner=inner, pos=pos):
                return inner.at(*(v for k, v in enumerate(i) if k != pos))

            claims.append(same(lhs, Sym(lhs.shape, at), facts))
    return claims


@proves("transpose-reshape")
def _transpose_reshape() -> list[z3.BoolRef]:
    """The two group shapes: a merge x[A, B, C] -> [A, B*C] transposed is x transposed to
    [B, C, A], merged; a split x[N, C] -> [A, B, C] (N = A*B) transposed by (2, 0, 1) is x
    transposed, split."""
    x, facts = tensor("x", 3)
    a, b, c = x.shape
    merged = Sym((a, b * c), lambda i, t: x.at(i, t / c, t % c))
    moved = transpose(x, (1, 2, 0))
    rhs = Sym((b * c, a), lambda t, i: moved.at(t / c, t % c, i))
    merge = same(transpose(merged, (1, 0)), rhs, facts)
    y, facts = tensor("y", 2)
    na, nb = ints("s", 2)
    pre = facts + [na >= 1, nb >= 1, y.shape[0] == na * nb]
    split = Sym((na, nb, y.shape[1]), lambda i, j, k: y.at(i * nb + j, k))
    yt = transpose(y, (1, 0))
    rhs = Sym((y.shape[1], na, nb), lambda k, i, j: yt.at(k, i * nb + j))
    return [merge, same(transpose(split, (2, 0, 1)), rhs, pre)]


@proves("bitcast-convert-splat")
def _bitcast_convert_splat() -> list[z3.BoolRef]:
    """Bytes all equal to b make every element of a narrower or wider type the same."""
    b = z3.BitVec("b", 8)
    word = z3.Concat(b, b, b, b)
    return [z3.Extract(8 * k + 7, 8 * k, word) == b for k in range(4)] + \
        [z3.Concat(z3.Extract(7, 0, word), z3.Extract(15, 8, word)) == z3.Concat(b, b)]


def store(m: Sym, old: Sym, stride) -> Sym:
    """The strided store semantics (store_rows) per byte: u = row * stride + col of the
    window keeps old's byte unless col < W, where the row of m is written."""
    width = m.shape[1]

    def at(u):
        row, col = u / stride, u % stride
        return z3.If(col < width, m.at(row, col), old.at(u))

    return Sym(((m.shape[0] - 1) * stride + width,), at)


def strided_store_claim(chained: bool = True) -> z3.BoolRef:
    """Two column blocks a [R, Wa] and b [R, Wb] of a row-major byte matrix, as
    strided_stores writes them: a over undefined bytes, then b over what a's store left
    (``chained``; else over undefined bytes, which is wrong). Claimed at every byte (i, j)
    of the matrix, flat index i * (Wa + Wb) + j. Fixed names: the same formula every time."""
    rows, wa, wb = z3.Ints("R Wa Wb")
    stride = wa + wb
    ints2 = (z3.IntSort(), z3.IntSort())
    a = Sym((rows, wa), z3.Function("blockA", *ints2, Elem))
    b = Sym((rows, wb), z3.Function("blockB", *ints2, Elem))
    span0 = (rows - 1) * stride + wa
    h0 = store(a, Sym((span0,), z3.Function("undef0", z3.IntSort(), Elem)), stride)
    if chained:
        old1 = concat([slice_(h0, [(wa, 1, span0 - wa)]), Sym((wb,), z3.Function("undef1", z3.IntSort(), Elem))], 0)
    else:
        old1 = Sym(((rows - 1) * stride + wb,), z3.Function("undef2", z3.IntSort(), Elem))
    rhs = concat([slice_(h0, [(0, 1, wa)]), store(b, old1, stride)], 0)
    i, j = z3.Ints("i j")
    pre = z3.And(rows >= 2, wa >= 1, wb >= 1, 0 <= i, i < rows, 0 <= j, j < stride)
    return z3.Implies(pre, concat([a, b], 1).at(i, j) == rhs.at(i * stride + j))


@proves("concat-strided-store")
def _concat_strided_store() -> list[z3.BoolRef]:
    """Two column blocks (strided_stores with two pieces): every byte of the matrix is
    written, the second block's store keeping the first block's bytes between its rows."""
    return [strided_store_claim()]


# ---------------------------------------------------------------- reshapes, unit dimensions, zeros


def reshape(x: Sym, shape: Sequence) -> Sym:
    """Row-major reshape: the element at index i is x's at the same linear position."""
    return Sym(tuple(shape), lambda *i: x.at(*_unlinear(_linear(i, shape), x.shape)))


def _linear(i: Sequence, shape: Sequence):
    lin = 0
    for v, n in zip(i, shape):
        lin = lin * n + v
    return lin


def _unlinear(lin, shape: Sequence) -> list:
    idx = []
    for n in reversed(shape):
        idx.append(lin % n)
        lin = lin / n
    return idx[::-1]


def round_trip(lin, shape: Sequence) -> z3.BoolRef:
    """Lemma: a linear position inside ``shape`` comes back from its index unchanged."""
    inside = z3.And([0 <= lin, lin < _prod(shape)] + [n >= 1 for n in shape])
    return z3.Implies(inside, _linear(_unlinear(lin, shape), shape) == lin)


def _prod(xs: Sequence):
    p = 1
    for v in xs:
        p = p * v
    return p


# (x, intermediate, result) ranks claimed: every combination of ranks 1 to 3
_RESHAPE_RANKS = list(itertools.product((1, 2, 3), repeat=3))


@proves("reshape-reshape")
def _reshape_reshape() -> list[z3.BoolRef]:
    claims = [round_trip(z3.Int(f"l{next(_fresh)}"), ints("s", r)) for r in (1, 2, 3)]  # the lemma
    for r0, r1, r2 in _RESHAPE_RANKS:
        x, facts = tensor("x", r0)
        s1, s2 = ints("s", r1), ints("t", r2)
        pre = facts + [v >= 1 for v in s1 + s2] + [_prod(s1) == _prod(x.shape), _prod(s2) == _prod(x.shape)]
        claims.append(same(reshape(reshape(x, s1), s2), reshape(x, s2), pre,
                           lemmas=lambda *i, s1=s1, s2=s2: [round_trip(_linear(i, s2), s1)]))
    return claims


@proves("reshape-noop")
def _reshape_noop() -> list[z3.BoolRef]:
    claims = []
    for r in (1, 2, 3):
        x, facts = tensor("x", r)
        n = x.shape

        def lemmas(*i, n=n):  # the linear position's quotients and remainders, innermost first
            return [euclid(i[0] * n[1] + i[1], i[2], n[2]), euclid(i[0], i[1], n[1])] if len(i) == 3 else \
                [euclid(i[0], i[1], n[1])] if len(i) == 2 else []

        claims.append(same(reshape(x, x.shape), x, facts, lemmas=lemmas))
    return claims


def _unit_shapes(rank: int, units: Sequence[int]) -> tuple[list, list]:
    """A shape of ``rank`` with size 1 at ``units`` and symbolic sizes elsewhere."""
    dims = ints("d", rank)
    return [1 if k in units else d for k, d in enumerate(dims)], [d >= 1 for d in dims]


@proves("transpose-as-reshape")
def _transpose_as_reshape() -> list[z3.BoolRef]:
    """Every permutation of a rank-2 or rank-3 tensor that keeps its dimensions of size
    other than 1 in order (the rule's condition), for every set of size-1 dimensions."""
    claims = []
    for rank in (2, 3):
        for units in _subsets(rank):
            for perm in itertools.permutations(range(rank)):
                big = [d for d in perm if d not in units]
                if tuple(perm) == tuple(range(rank)) or big != sorted(big):
                    continue
                shape, facts = _unit_shapes(rank, units)
                x, _ = tensor("x", rank, shape)
                t = transpose(x, perm)
                claims.append(same(t, reshape(x, t.shape), facts))
    return claims


@proves("broadcast-as-reshape")
def _broadcast_as_reshape() -> list[z3.BoolRef]:
    """A broadcast that only adds size-1 dimensions (operand dims placed in order) of a
    rank-1 or rank-2 operand, to every rank up to 3, is a reshape."""
    claims = []
    for r in (1, 2):
        for out_rank in range(r + 1, 4):
            for dims in itertools.combinations(range(out_rank), r):
                x, facts = tensor("x", r)
                shape = [1] * out_rank
                for k, d in enumerate(dims):
                    shape[d] = x.shape[k]
                claims.append(same(broadcast(x, shape, dims), reshape(x, shape), facts))
    return claims


@proves("broadcast-squeeze")
def _broadcast_squeeze() -> list[z3.BoolRef]:
    """broadcast(x, dims) = broadcast(reshape(x, x without its size-1 dims), their dims), for
    a rank-2 or rank-3 operand with one or two size-1 dimensions, into rank 3 or 4."""
    claims = []
    for r in (2, 3):
        for units in _subsets(r):
            if not units or len(units) == r:
                continue
            for out_rank in (r, r + 1):
                for dims in itertools.combinations(range(out_rank), r):
                    shape, facts = _unit_shapes(r, units)
                    x, _ = tensor("x", r, shape)
                    out = ints("o", out_rank)
                    keep = [k for k in range(r) if k not in units]
                    for k, d in enumerate(dims):  # the operand's big dims keep their size
                        if k in keep:
                            out[d] = shape[k]
                    lhs = broadcast(x, out, dims)
                    rhs = broadcast(reshape(x, [shape[k] for k in keep]), out, [dims[k] for k in keep])
                    claims.append(same(lhs, rhs, facts + [v >= 1 for v in out if isinstance(v, z3.ArithRef)]))
    return claims


@proves("reshape-broadcast-scalar")
def _reshape_broadcast_scalar() -> list[z3.BoolRef]:
    claims = []
    for r1, r2 in itertools.product((1, 2, 3), repeat=2):
        s = scalar("s")
        one = Sym((), lambda: s)
        a, b = ints("a", r1), ints("b", r2)
        pre = [v >= 1 for v in a + b] + [_prod(a) == _prod(b)]
        claims.append(same(reshape(broadcast(one, a, ()), b), broadcast(one, b, ()), pre))
    return claims


@proves("dot-unit-batch")
def _dot_unit_batch() -> list[z3.BoolRef]:
    """dot(a[1, m, k], b[1, k, n]) batched over the unit dim = reshape(dot(a', b'), [1, m, n]),
    a' and b' the operands reshaped without it; either contracting dimension of b. Dropping
    the unit dimension is claimed to be the index map (0, i, j) -> (i, j) first: the dot
    then reads its vectors through that map (DOT sees whole arrays, out-of-range entries too)."""
    claims = []
    for rc in (1, 2):
        m, k, n = ints("d", 3)
        a, fa = tensor("a", 3, (1, m, k))
        b, fb = tensor("b", 3, (1, k, n) if rc == 1 else (1, n, k))
        facts = fa + fb + [m >= 1, k >= 1, n >= 1]
        a1, b1 = (Sym(x.shape[1:], lambda i, j, x=x: x.at(0, i, j)) for x in (a, b))
        claims += [same(reshape(a, a1.shape), a1, facts), same(reshape(b, b1.shape), b1, facts)]
        lhs = dot(a, b, 2, rc, (0,), (0,))
        claims.append(same(lhs, reshape(dot(a1, b1, 1, rc - 1), (1, m, n)), facts,
                           lemmas=lambda _, i, j: [euclid(i, j, n)]))
    return claims


@proves("transpose-dot-swap")
def _transpose_dot_swap() -> list[z3.BoolRef]:
    """transpose(dot(a, b)) = dot(b, a) for 2-D operands, each contracting dimension, given
    that a dot of two vectors does not depend on their order (Σ u_k v_k = Σ v_k u_k: each
    product commutes, the sum runs over the same k), stated for DOT once."""
    u, v = z3.Consts("u v", _VECTOR)
    (n,) = z3.Ints("n")
    symmetric = z3.ForAll([u, v, n], DOT(u, v, n) == DOT(v, u, n))
    claims = []
    for lc, rc in itertools.product((0, 1), repeat=2):
        a, b, lb, rb, facts = _dot_operands(2, lc, 2, rc, ())
        claims.append(z3.Implies(symmetric, same(transpose(dot(a, b, lc, rc), (1, 0)), dot(b, a, rc, lc), facts)))
    return claims


def concat_zero_claim(arity: int, d: int, first: bool, keeps_zero: bool = True) -> z3.BoolRef:
    """concat(op(x, ..), 0) = op(concat(x, 0), ..) along d (zeros after x when ``first``),
    assuming op(0, ..) = 0 when ``keeps_zero``."""
    zero = scalar("zero")
    x, facts = tensor("x", 2)
    xs = [x] + [tensor("y", 2, x.shape)[0] for _ in range(arity - 1)]
    (n,) = ints("z", 1)
    zeros = broadcast(Sym((), lambda: zero), [n if k == d else x.shape[k] for k in range(2)], ())
    f = _pointwise(arity)

    def pair(t: Sym) -> list[Sym]:
        return [t, zeros] if first else [zeros, t]

    lhs = concat(pair(elementwise(f, *xs)), d)
    rhs = elementwise(f, *(concat(pair(y), d) for y in xs))
    keeps = [f(*([zero] * arity)) == zero] if keeps_zero else []
    return same(lhs, rhs, facts + [n >= 1] + keeps)


@proves("concat-zero-elementwise")
def _concat_zero_elementwise() -> list[z3.BoolRef]:
    """Along either dimension, zeros on either side, for a unary and a binary op that maps
    zeros to zero (the rule's precondition)."""
    return [concat_zero_claim(*c) for c in itertools.product((1, 2), (0, 1), (True, False))]


@proves("pad-concat")
def _pad_concat() -> list[z3.BoolRef]:
    """pad(x, v) of a rank-2 x = concat(broadcast(v), pad'(x, v), broadcast(v)) along its first
    padded dimension d, pad' padding the other dimension (edge padding, none negative);
    the broadcasts are left out where d's padding is 0, as the rule does."""
    claims = []
    for d, ends in itertools.product((0, 1), ((True, True), (False, True), (True, False))):
        x, facts = tensor("x", 2)
        v = scalar("v")
        lo, hi, p, q = ints("p", 4)
        other = (p, q) if d == 0 else (0, 0)  # d is the first padded dimension
        pads = [(lo, hi), other] if d == 0 else [other, (lo, hi)]
        rest = [(0, 0), other] if d == 0 else [other, (0, 0)]
        inner = pad(x, v, rest)

        def fill(n) -> list[Sym]:
            shape = list(inner.shape)
            shape[d] = n
            return [broadcast(Sym((), lambda: v), shape, ())]

        pre = facts + [p >= 0, q >= 0, lo >= 1 if ends[0] else lo == 0, hi >= 1 if ends[1] else hi == 0]
        pieces = (fill(lo) if ends[0] else []) + [inner] + (fill(hi) if ends[1] else [])
        claims.append(same(pad(x, v, pads), concat(pieces, d), pre, concat_ok(pieces, d)))
    return claims


# ---------------------------------------------------------------- reductions and sums (folds)
# A reduction (and a dot: the sum of its products) is a left fold F(u, n) = F(u, n - 1) ⊕ u[n - 1],
# F(u, 0) = init, over the vector u (a z3 array). F is uninterpreted; each claim assumes the
# instances of that definition it needs, and of the lemmas below, which are proved by
# induction (a base claim and a step claim each; ``fold_lemma_claims``). Instances of valid
# formulas are valid, so a rule's claim that holds under them holds. For the operators
# the rules fold with (integer add, max, min, and, or) any order of combination gives the
# left fold's value: they are associative and commutative.


@dataclass(frozen=True)
class Fold:
    op: Callable
    init: z3.ExprRef
    sort: z3.SortRef
    f: z3.FuncDeclRef

    def __call__(self, u, n) -> z3.ExprRef:
        return self.f(u, n)

    def base(self, u) -> z3.BoolRef:
        return self.f(u, 0) == self.init

    def step(self, u, n) -> z3.BoolRef:
        """F(u, n + 1) = F(u, n) ⊕ u[n] for n >= 0."""
        return z3.Implies(n >= 0, self.f(u, n + 1) == self.op(self.f(u, n), z3.Select(u, n)))

    def split(self, u, p, m) -> z3.BoolRef:
        """Lemma: F(u, p + m) = F(u, p) ⊕ F(u shifted by p, m) for p, m >= 0."""
        return z3.Implies(z3.And(p >= 0, m >= 0), self.f(u, p + m) == self.op(self.f(u, p), self.f(shift(u, p), m)))

    def absorbs(self, u, p) -> z3.BoolRef:
        """Lemma (idempotent ⊕): F(u, p) ⊕ init = F(u, p) for p >= 0."""
        return z3.Implies(p >= 0, self.op(self.f(u, p), self.init) == self.f(u, p))


def fold(op: Callable, init: z3.ExprRef) -> Fold:
    sort = init.sort()
    return Fold(op, init, sort, z3.Function(f"fold{next(_fresh)}", z3.ArraySort(z3.IntSort(), sort), z3.IntSort(),
                                            sort))


def _row_array(f: Callable) -> z3.ArrayRef:
    """The vector k -> f(k)."""
    k = z3.Int(f"k{next(_fresh)}")
    return z3.Lambda([k], f(k))


def shift(u, p):
    return _row_array(lambda k: z3.Select(u, k + p))


def fold_lemma_claims(fl: Fold, identity: bool) -> list[z3.BoolRef]:
    """Base and step of the induction on m for ``split`` (with init ⊕'s identity, or
    ``absorbs`` for an idempotent, commutative, associative ⊕), and on p for ``absorbs``."""
    u = z3.Const(f"u{next(_fresh)}", z3.ArraySort(z3.IntSort(), fl.sort))
    p, m = z3.Ints(f"p{next(_fresh)} m{next(_fresh)}")
    su = shift(u, p)
    claims = []
    if not identity:
        claims.append(z3.Implies(fl.base(u), fl.absorbs(u, 0)))
        claims.append(z3.Implies(z3.And(p >= 0, fl.absorbs(u, p), fl.step(u, p)), fl.absorbs(u, p + 1)))
    else:
        x = z3.Const(f"x{next(_fresh)}", fl.sort)
        claims.append(fl.op(x, fl.init) == x)
    end = fl.absorbs(u, p) if not identity else fl.op(fl(u, p), fl.init) == fl(u, p)
    claims.append(z3.Implies(z3.And(p >= 0, fl.base(su), end), fl.split(u, p, 0)))
    claims.append(z3.Implies(z3.And(p >= 0, m >= 0, fl.split(u, p, m), fl.step(u, p + m), fl.step(su, m)),
                             fl.split(u, p, m + 1)))
    return claims


def bv_tensor(name: str, rank: int, bits: int, shape: Sequence | None = None) -> tuple[Sym, list[z3.BoolRef]]:
    return tensor(name, rank, shape, z3.BitVecSort(bits))


def _row(x: Sym, d: int, i) -> z3.ArrayRef:
    """The vector of rank-2 x along d at index i of the other dimension."""
    return _row_array(lambda k: x.at(i, k) if d == 1 else x.at(k, i))


def _reduce_folds() -> list[tuple[Fold, bool, Callable]]:
    """(fold, init is ⊕'s identity, make a tensor) for the reductions the split rule takes:
    integer add from 0, and max, min, and, or from any init, on 8- and 32-bit integers."""
    out = []
    for bits, signed in itertools.product((8, 32), (True, False)):
        ops = _bv_ops(signed)
        make = functools.partial(bv_tensor, bits=bits)
        out.append((fold(ops["add"], z3.BitVecVal(0, bits)), True, make))
        for name in ("maximum", "minimum", "and", "or"):
            out.append((fold(ops[name], z3.BitVec(f"init{next(_fresh)}", bits)), False, make))
    return out


@proves("reduce-split-reduced")
def _reduce_split_reduced() -> list[z3.BoolRef]:
    """reduce(x, init) over d = reduce(x[..p], init) ⊕ reduce(x[p..], init), x rank 2, either
    dimension reduced, 0 < p < n: integer add from 0; max, min, and, or from any init."""
    claims = []
    for fl, identity, make in _reduce_folds():
        claims += fold_lemma_claims(fl, identity)
        for d in (0, 1):
            x, facts = make("x", 2)
            (p,) = ints("p", 1)
            n = x.shape[d]
            lo, hi = _halves_at(x, d, p)
            xl, xh = slice_(x, lo), slice_(x, hi)
            at = (lambda i: fl(_row(x, d, i), n))
            lhs = Sym((x.shape[1 - d],), at)
            rhs = Sym((x.shape[1 - d],), lambda i: fl.op(fl(_row(xl, d, i), p), fl(_row(xh, d, i), n - p)))
            claims.append(same(lhs, rhs, facts + [0 < p, p < n], lemmas=lambda i: [fl.split(_row(x, d, i), p, n - p)]))
    return claims


def dot_products(a: Sym, b: Sym, lc: int, rc: int, i, j) -> z3.ArrayRef:
    """The products of row i of a and column j of b along their contracted dimensions."""
    return _row_array(lambda k: (a.at(i, k) if lc == 1 else a.at(k, i)) * (b.at(k, j) if rc == 0 else b.at(j, k)))


def sum_dot(a: Sym, b: Sym, lc: int, rc: int, fl: Fold) -> Sym:
    """A 2-D integer dot as the fold (sum) of its products along the contracted vectors."""
    return Sym((a.shape[1 - lc], b.shape[1 - rc]), lambda i, j: fl(dot_products(a, b, lc, rc, i, j), a.shape[lc]))


def int_sum(bits: int) -> Fold:
    """A wrapping integer sum of ``bits`` bits from 0."""
    return fold(lambda x, y: x + y, z3.BitVecVal(0, bits))


def _int_sums() -> list[Fold]:
    return [int_sum(8), int_sum(32)]


@proves("dot-split-contract")
def _dot_split_contract() -> list[z3.BoolRef]:
    """dot(a, b) = dot(a[.., :p], b[:p]) + dot(a[.., p:], b[p:]) for 2-D integer operands,
    each pair of contracting dimensions, 0 < p < K (wrapping sums of 8 and 32 bits)."""
    claims = []
    for fl in _int_sums():
        bits = fl.sort.size()
        claims += fold_lemma_claims(fl, True)
        for lc, rc in itertools.product((0, 1), repeat=2):
            a, fa = bv_tensor("a", 2, bits)
            b, fb = bv_tensor("b", 2, bits)
            (p,) = ints("p", 1)
            n = a.shape[lc]
            (al, ah), (bl, bh) = _halves_at(a, lc, p), _halves_at(b, rc, p)
            lhs = sum_dot(a, b, lc, rc, fl)
            lo = sum_dot(slice_(a, al), slice_(b, bl), lc, rc, fl)
            hi = sum_dot(slice_(a, ah), slice_(b, bh), lc, rc, fl)
            rhs = Sym(lhs.shape, lambda i, j: lo.at(i, j) + hi.at(i, j))
            pre = fa + fb + [n == b.shape[rc], 0 < p, p < n]
            claims.append(same(lhs, rhs, pre, lemmas=lambda i, j, a=a, b=b, lc=lc, rc=rc, p=p, n=n, fl=fl: [
                fl.split(dot_products(a, b, lc, rc, i, j), p, n - p)]))
    return claims


@proves("reduce-split-kept")
def _reduce_split_kept() -> list[z3.BoolRef]:
    """reduce(x) = concat(reduce(x[:p]), reduce(x[p:])) along a kept dimension, x rank 2 or 3,
    one dimension reduced: the reduction of each kept index reads the same vector (any fold)."""
    claims = []
    fl = fold(lambda x, y: z3.Function("comb", Elem, Elem, Elem)(x, y), scalar("init"))
    for rank in (2, 3):
        for red in range(rank):
            kept = [d for d in range(rank) if d != red]
            for ki, d in enumerate(kept):
                x, facts = tensor("x", rank)
                (p,) = ints("p", 1)

                def reduced(t: Sym) -> Sym:
                    def at(*i):
                        return fl(_row_array(lambda k: t.at(*i[:red], k, *i[red:])), t.shape[red])
                    return Sym(tuple(t.shape[e] for e in kept), at)

                lo, hi = _halves_at(x, d, p)
                rhs = concat([reduced(slice_(x, lo)), reduced(slice_(x, hi))], ki)
                claims.append(same(reduced(x), rhs, facts + [0 < p, p < x.shape[d]]))
    return claims


def _one_step(fl: Fold, u) -> list[z3.BoolRef]:
    """The fold's definition for a vector of length 1: F(u, 1) = init ⊕ u[0]."""
    return [fl.base(u), fl.step(u, z3.IntVal(0))]


def _identities() -> list[tuple[Fold, Callable]]:
    """(fold from ⊕'s identity, make a tensor): integer add 0, multiply 1, max from the
    lowest and min from the highest value; float add -0, multiply 1, max -inf, min +inf."""
    out = []
    for bits, signed in itertools.product((8, 32), (True, False)):
        ops = _bv_ops(signed)
        top, bottom = _extremes_bv(z3.BitVec("t", bits), signed)
        make = functools.partial(bv_tensor, bits=bits)
        for name, init in (("add", 0), ("multiply", 1), ("maximum", bottom), ("minimum", top)):
            out.append((fold(ops[name], z3.BitVecVal(init, bits) if isinstance(init, int) else init), make))
    for sort in _FLOAT_SORTS.values():
        ops = _fp_ops()
        make = functools.partial(tensor, sort=sort)
        for name, init in (("add", z3.fpMinusZero(sort)), ("multiply", z3.FPVal(1.0, sort)),
                           ("maximum", z3.fpMinusInfinity(sort)), ("minimum", z3.fpPlusInfinity(sort))):
            if name == "multiply" and sort == z3.Float32():
                continue  # z3's f32 multiplier took 0.2 to 9 s: f16 and bf16 only (f32 numerically)
            out.append((fold(ops[name], init), make))
    return out


@proves("reduce-unit")
def _reduce_unit() -> list[z3.BoolRef]:
    """reduce(x[n, 1]) over its size-1 dimension, from ⊕'s identity, = reshape(x, [n]):
    integer add, multiply, max, min (8 and 32 bits), and f16, bf16, f32 (add from -0;
    multiply by 1 in f16 and bf16 only)."""
    claims = []
    for fl, make in _identities():
        x, facts = make("x", 2, shape=(ints("n", 1)[0], 1))
        lhs = Sym((x.shape[0],), lambda i: fl(_row(x, 1, i), 1))
        claims.append(same(lhs, reshape(x, (x.shape[0],)), facts, lemmas=lambda i: _one_step(fl, _row(x, 1, i))))
    return claims


@proves("dot-outer-product")
def _dot_outer_product() -> list[z3.BoolRef]:
    """An integer dot contracting a size-1 dimension of each 2-D operand = multiply of the
    operands broadcast, without that dimension (one product per element, wrapping)."""
    claims = []
    for fl in _int_sums():
        bits = fl.sort.size()
        for lc, rc in itertools.product((0, 1), repeat=2):
            m, n = ints("d", 2)
            a, fa = bv_tensor("a", 2, bits, (m, 1) if lc == 1 else (1, m))
            b, fb = bv_tensor("b", 2, bits, (1, n) if rc == 0 else (n, 1))
            lhs = sum_dot(a, b, lc, rc, fl)
            # the operands without their size-1 dimension: the reshape is that index map
            sa, sb = (Sym((x.shape[0] * x.shape[1],), lambda i, x=x: x.at(*((i, 0) if x.shape[1] == 1 else (0, i))))
                      for x in (a, b))
            claims += [same(reshape(a, (m,)), sa, fa), same(reshape(b, (n,)), sb, fb)]
            # broadcast into dimensions of the operands' own sizes (none stretches: without
            # broadcast's size-1 case split, which sends z3 into 32-bit multiplier equivalence)
            left, right = Sym((m, n), lambda i, j: sa.at(i)), Sym((m, n), lambda i, j: sb.at(j))
            claims += [same(broadcast(sa, (m, n), (0,)), left, fa), same(broadcast(sb, (m, n), (1,)), right, fb)]
            rhs = Sym((m, n), lambda i, j: left.at(i, j) * right.at(i, j))
            claims.append(same(lhs, rhs, fa + fb, lemmas=lambda i, j, a=a, b=b, lc=lc, rc=rc, fl=fl: _one_step(
                fl, dot_products(a, b, lc, rc, i, j))))
    return claims


def selected(x, s, c):
    """The product vector of a row x with a column holding c at s and zeros elsewhere:
    x[k] * (k == s ? c : 0), written (k == s ? x[k] * c : x[k] * 0), the same value, so
    that z3 simplifies the products by the constants instead of building multipliers."""
    return _row_array(lambda k: z3.If(k == s, z3.Select(x, k) * c, z3.Select(x, k) * (0 * c)))


def selector_claims(fl: Fold, c) -> list[z3.BoolRef]:
    """Lemma by induction on m >= 0, for every s: the sum of x[k] * (k == s ? c : 0) over
    k < m is x[s] * c when 0 <= s < m, else 0 (base and step), for the constant c."""
    x = z3.Const(f"x{next(_fresh)}", z3.ArraySort(z3.IntSort(), fl.sort))
    s, m = z3.Ints(f"s{next(_fresh)} m{next(_fresh)}")
    v = selected(x, s, c)
    base = z3.Implies(fl.base(v), selector_lemma(fl, x, s, c, 0))
    step = z3.Implies(z3.And(m >= 0, selector_lemma(fl, x, s, c, m), fl.step(v, m)),
                      selector_lemma(fl, x, s, c, m + 1))
    return [base, step]


def selector_lemma(fl: Fold, x, s, c, m) -> z3.BoolRef:
    return z3.Implies(m >= 0, fl(selected(x, s, c), m) == z3.If(z3.And(0 <= s, s < m), z3.Select(x, s) * c, 0 * c))


@proves("dot-identity", "negate-as-dot", "reverse-as-dot")
def _matrix_dots() -> list[z3.BoolRef]:
    """x = dot(x, I), -x = dot(x, -I), reverse(x, {1}) = dot(x, J), reverse(x, {0}) = dot(J, x)
    for 2-D integer x (8 and 32 bits, wrapping): each column of the constant holds one
    nonzero, so each sum is one product (the selector lemma)."""
    claims = []
    for fl in _int_sums():
        bits = fl.sort.size()
        one, neg = z3.BitVecVal(1, bits), z3.BitVecVal(-1, bits)
        claims += selector_claims(fl, one) + selector_claims(fl, neg)
        x, facts = bv_tensor("x", 2, bits)
        r, n = x.shape

        def times(c, flip=False, x=x, fl=fl, n=n):  # x · M, M[k, j] = c if k == j (k == n-1-j with flip)
            def at(i, j):
                s = n - 1 - j if flip else j
                return fl(selected(_row(x, 1, i), s, c), n)
            return Sym(x.shape, at), (lambda i, j: [selector_lemma(fl, _row(x, 1, i), n - 1 - j if flip else j, c, n)])

        for c, want in ((one, x), (neg, Sym(x.shape, lambda i, j, x=x: -x.at(i, j))), (one, reverse(x, (1,)))):
            rhs, lem = times(c, flip=want is not x and c is one)
            claims.append(same(want, rhs, facts, lemmas=lem))
        # J · x: column j of x against row i of J, whose one is at m - 1 - i (the product
        # J[i, k] * x[k, j] is written x[k, j] * J[i, k]: it commutes)
        col = (lambda j, x=x: _row(x, 0, j))
        lhs = Sym(x.shape, lambda i, j, fl=fl, r=r, col=col: fl(selected(col(j), r - 1 - i, one), r))
        claims.append(same(reverse(x, (0,)), lhs, facts,
                           lemmas=lambda i, j, fl=fl, r=r, col=col, one=one: [selector_lemma(fl, col(j), r - 1 - i,
                                                                                                one, r)]))
    return claims


@proves("reduce-as-dot", "broadcast-as-dot", "broadcast-sums-dot")
def _ones_dots() -> list[z3.BoolRef]:
    """reduce_add(x, 0) over one dim = the matmul with a row or column of ones (reshaped; a
    1-D x: the dot with ones[n]); broadcast(v[n]) along either dim = v as a column times a
    row of ones, or a column of ones times v as a row; row sums broadcast along the columns
    = x . ones[n, p], column sums along the rows = ones[p, m] . x (8- and 32-bit integers)."""
    claims = []
    for fl in _int_sums():
        bits = fl.sort.size()
        one = z3.BitVecVal(1, bits)
        x, facts = bv_tensor("x", 2, bits)
        m, n = x.shape
        (p,) = ints("p", 1)
        for d in (0, 1):  # sums along 1 - d, broadcast along the other dimension of the result
            shape = (m, p) if d == 0 else (p, n)
            lhs = Sym(shape, lambda i, j, d=d, x=x, fl=fl: fl(_row(x, 1 - d, i if d == 0 else j), x.shape[1 - d]))
            if d == 0:
                rhs = Sym(shape, lambda i, j, x=x, fl=fl: fl(_row_array(lambda k: x.at(i, k) * one), n))
            else:
                rhs = Sym(shape, lambda i, j, x=x, fl=fl: fl(_row_array(lambda k: one * x.at(k, j)), m))
            claims.append(same(lhs, rhs, facts + [p >= 1]))
        for d in (0, 1):  # sums along d; ones[1, m]·x or x·ones[n, 1]
            lhs = Sym((x.shape[1 - d],), lambda i, d=d, x=x, fl=fl: fl(_row(x, d, i), x.shape[d]))
            if d == 0:
                prod = Sym((1, n), lambda _, j, x=x, fl=fl: fl(_row_array(lambda k: one * x.at(k, j)), m))
            else:
                prod = Sym((m, 1), lambda i, _, x=x, fl=fl: fl(_row_array(lambda k: x.at(i, k) * one), n))
            claims.append(same(lhs, reshape(prod, lhs.shape), facts))
        y, facts = bv_tensor("y", 1, bits)
        total = Sym((), lambda y=y, fl=fl: fl(_row_array(lambda k: y.at(k)), y.shape[0]))
        claims.append(same(total, Sym((), lambda y=y, fl=fl: fl(_row_array(lambda k: y.at(k) * one), y.shape[0])),
                           facts))
        for d in (0, 1):  # v[n] to [n, m] along 0, or v[m] to [n, m] along 1
            v, facts = bv_tensor("v", 1, bits)
            (other,) = ints("m", 1)
            shape = (v.shape[0], other) if d == 0 else (other, v.shape[0])
            if d == 0:
                col = reshape(v, (v.shape[0], 1))
                vec = (lambda i, j, col=col: _row_array(lambda k: col.at(i, k) * one))
            else:
                row = reshape(v, (1, v.shape[0]))
                vec = (lambda i, j, row=row: _row_array(lambda k: one * row.at(k, j)))
            rhs = Sym(shape, lambda i, j, vec=vec, fl=fl: fl(vec(i, j), 1))
            claims.append(same(broadcast(v, shape, (d,)), rhs, facts + [other >= 1],
                               lemmas=lambda i, j, vec=vec, fl=fl: _one_step(fl, vec(i, j))))
    return claims


@proves("convert-as-dot")
def _convert_as_dot() -> list[z3.BoolRef]:
    """convert(x, T) = dot(x, I) -> T for 2-D integer x and a wider (or equal) integer T that
    holds every value of x's type: the dot converts its operands to T, then sums."""
    claims = []
    for src, dst in itertools.product(INT_TYPES, repeat=2):
        if dst.bits < src.bits or (src.is_signed and not dst.is_signed) or dst.bits > 32 or src.bits == 16:
            continue
        fl = int_sum(dst.bits)
        one = z3.BitVecVal(1, dst.bits)
        claims += selector_claims(fl, one)
        x, facts = bv_tensor("x", 2, src.bits)
        n = x.shape[1]

        def conv(i, x=x, src=src, dst=dst):
            return _row_array(lambda k: convert_bv(x.at(i, k), src, dst))

        def at(i, j, x=x, src=src, dst=dst, fl=fl, n=n):
            eye = (lambda k: z3.If(k == j, z3.BitVecVal(1, src.bits), z3.BitVecVal(0, src.bits)))
            return fl(_row_array(lambda k: convert_bv(x.at(i, k), src, dst) * convert_bv(eye(k), src, dst)), n)

        lhs = Sym(x.shape, lambda i, j, x=x, src=src, dst=dst: convert_bv(x.at(i, j), src, dst))
        claims.append(same(lhs, Sym(x.shape, at), facts,
                           lemmas=lambda i, j, fl=fl, conv=conv, one=one, n=n: [
                               selector_lemma(fl, conv(i), j, one, n)]))
    return claims


# An integer dot as the reference computes it: each operand converted to the result type,
# the products summed in it (wrapping).
def _products(a, b, sa: DType, sb: DType, t: DType) -> z3.ArrayRef:
    """The product vector of arrays a (of type sa) and b (sb) in type t."""
    return _row_array(lambda k: convert_bv(z3.Select(a, k), sa, t) * convert_bv(z3.Select(b, k), sb, t))


def widen_claims(sa: DType, sb: DType, narrow_t: DType, wide_t: DType) -> list[z3.BoolRef]:
    """The dot's sum of products in the narrow type is the low bits of its sum in the wide
    one. (1) Each product's low bits come from its operands' (``product_low``, for all
    operands of types sa, sb). (2) By induction on m, for any vectors un, uw with
    un[k] = low bits of uw[k] at every k (what (1) gives the two product vectors): the
    narrow sum of un over k < m is the low bits of the wide sum of uw (base and step; the
    step uses the hypothesis at k = m, with the vectors opaque)."""
    fn, fw = int_sum(narrow_t.bits), int_sum(wide_t.bits)
    x, y = z3.BitVec(f"x{next(_fresh)}", sa.bits), z3.BitVec(f"y{next(_fresh)}", sb.bits)
    wide = convert_bv(x, sa, wide_t) * convert_bv(y, sb, wide_t)
    product_low = convert_bv(wide, wide_t, narrow_t) == convert_bv(x, sa, narrow_t) * convert_bv(y, sb, narrow_t)
    un = z3.Const(f"un{next(_fresh)}", z3.ArraySort(z3.IntSort(), z3.BitVecSort(narrow_t.bits)))
    uw = z3.Const(f"uw{next(_fresh)}", z3.ArraySort(z3.IntSort(), z3.BitVecSort(wide_t.bits)))
    (m,) = z3.Ints(f"m{next(_fresh)}")

    def low(k) -> z3.BoolRef:
        return z3.Implies(k >= 0, fn(un, k) == convert_bv(fw(uw, k), wide_t, narrow_t))

    base = z3.Implies(z3.And(fn.base(un), fw.base(uw)), low(0))
    agree = z3.Select(un, m) == convert_bv(z3.Select(uw, m), wide_t, narrow_t)
    step = z3.Implies(z3.And(m >= 0, low(m), fn.step(un, m), fw.step(uw, m), agree), low(m + 1))
    return [product_low, base, step]


@proves("dot-widen-result")
def _dot_widen_result() -> list[z3.BoolRef]:
    """dot(a, b) -> s8/s16/u8/u16 = convert(dot(a, b) -> s32/u32) for 8-bit integer operands:
    the lemma for every operand and result type (an element of the dot is such a sum)."""
    claims = []
    for sa, sb in itertools.product([DTYPES["s8"], DTYPES["u8"]], repeat=2):
        for t in (DTYPES[n] for n in ("s8", "s16", "u8", "u16")):
            claims += widen_claims(sa, sb, t, DTYPES["s32" if t.is_signed else "u32"])
    return claims


@proves("dot-convert-operands-int")
def _dot_convert_operands_int() -> list[z3.BoolRef]:
    """dot(a, b) -> T = dot(convert(a, T), convert(b, T)) -> T: the dot converts its operands
    to T (the reference's accumulator for an integer result) either way, and converting a
    value of T to T keeps it; every pair of 8-bit operand types, T of 8 to 32 bits."""
    claims = []
    for sa, sb in itertools.product([DTYPES["s8"], DTYPES["u8"]], repeat=2):
        for t in (DTYPES[n] for n in ("s8", "u8", "s16", "s32", "u32")):
            a = z3.Const(f"a{next(_fresh)}", z3.ArraySort(z3.IntSort(), z3.BitVecSort(sa.bits)))
            b = z3.Const(f"b{next(_fresh)}", z3.ArraySort(z3.IntSort(), z3.BitVecSort(sb.bits)))
            ca = _row_array(lambda k: convert_bv(z3.Select(a, k), sa, t))
            cb = _row_array(lambda k: convert_bv(z3.Select(b, k), sb, t))
            fl = int_sum(t.bits)
            (n,) = z3.Ints(f"n{next(_fresh)}")
            claims.append(fl(_products(a, b, sa, sb, t), n) == fl(_products(ca, cb, t, t, t), n))
    return claims


def _to_f32(x: z3.ExprRef, src: DType) -> z3.ExprRef:
    """The reference's convert to f32 (exact for the types the rule takes)."""
    f32 = z3.Float32()
    if src.is_float:
        return z3.fpFPToFP(_RM, x, f32)
    return (z3.fpSignedToFP if src.is_signed else z3.fpUnsignedToFP)(_RM, x, f32)


@proves("dot-convert-operands-float")
def _dot_convert_operands_float() -> list[z3.BoolRef]:
    """dot(a, b) -> T = dot(convert(a, f32), convert(b, f32)) -> T for bf16, f16 and 8-bit
    integer operands: the dot accumulates in f32 (the reference's accumulator for a float
    result of at most 32 bits), so it converts its operands to f32 either way. Claimed: an
    operand converted to f32 and then by the dot is what the dot converts it to (NaN and
    -0 included); the products, their sum and the rounding to T then agree term by term."""
    claims = []
    sorts = {"bf16": z3.FPSort(8, 8), "f16": z3.Float16(), "s8": z3.BitVecSort(8), "u8": z3.BitVecSort(8)}
    for name, sort in sorts.items():
        v = z3.Const(f"v{next(_fresh)}", sort)
        src = DTYPES[name]
        claims.append(_to_f32(_to_f32(v, src), DTYPES["f32"]) == _to_f32(v, src))
    return claims


@proves("convert-noop")
def _convert_noop() -> list[z3.BoolRef]:
    """convert(x) to x's own type = x: for the integer types (the model keeps the bits) and
    f16, bf16, f32 (rounding a value to its own format keeps it, NaN and -0 included)."""
    claims = []
    for t in INT_TYPES:
        x = z3.BitVec(f"x{next(_fresh)}", t.bits)
        claims.append(convert_bv(x, t, t) == x)
    for sort in _FLOAT_SORTS.values():
        v = z3.FP(f"v{next(_fresh)}", sort)
        claims.append(z3.fpFPToFP(_RM, v, sort) == v)
    return claims


# ---------------------------------------------------------------- bitcasts at the bit level
# An element is its raw bits (a bit-vector of its type's width). A bitcast to a narrower type
# splits each element into a trailing dimension of chunks, lowest bits first (little-endian,
# as the reference's numpy views); to a wider one it joins the trailing dimension.


def bitcast_bits(x: Sym, src: int, dst: int) -> Sym:
    if dst < src:
        w = src // dst
        return Sym(tuple(x.shape) + (w,), lambda *i: _chunk(x.at(*i[:-1]), i[-1], dst, w))
    if dst > src:
        w = dst // src
        return Sym(tuple(x.shape[:-1]), lambda *i: z3.Concat(*(x.at(*i, k) for k in reversed(range(w)))))
    return x


def _chunk(v: z3.BitVecRef, k, bits: int, w: int) -> z3.BitVecRef:
    """Chunk k (lowest first) of ``bits`` bits of v; k an index in [0, w)."""
    out = z3.Extract(bits * w - 1, bits * (w - 1), v)
    for j in reversed(range(w - 1)):
        out = z3.If(k == j, z3.Extract(bits * (j + 1) - 1, bits * j, v), out)
    return out


@proves("bitcast-convert-chain")
def _bitcast_convert_chain() -> list[z3.BoolRef]:
    """bitcast(bitcast(x, T2), T3) = reshape(bitcast(x, T3)) (x itself when T3 has x's width)
    for every chain of 8-, 16- and 32-bit types the rule rewrites: narrowing twice, narrowing
    and widening back, widening and narrowing to at most x's width (widening twice, or back
    up past x's width, has no single bitcast from x: the rule skips it)."""
    claims = []
    for b1, b2, b3 in itertools.product((8, 16, 32), repeat=3):
        if b1 == b2 or b2 == b3:
            continue
        (n,) = ints("n", 1)
        if b1 > b2 > b3 or (b1 > b2 and b3 == b1):  # x[n] narrowed, then narrowed or widened back
            x, facts = bv_tensor("x", 1, b1, (n,))
        elif b1 < b2 > b3 and b3 <= b1:  # x[n, b2/b1] widened, then narrowed
            x, facts = bv_tensor("x", 2, b1, (n, b2 // b1))
        else:
            continue
        lhs = bitcast_bits(bitcast_bits(x, b1, b2), b2, b3)
        claims.append(same(lhs, reshape(bitcast_bits(x, b1, b3), lhs.shape), facts + [n >= 1]))
    return claims


@proves("bitcast-convert-reshape")
def _bitcast_convert_reshape() -> list[z3.BoolRef]:
    """bitcast(reshape(x), T) = reshape(bitcast(x, T)) when T has x's width: such a bitcast
    reinterprets each element alone (an uninterpreted function of its bits), so it commutes
    with the reshape; the rank combinations of reshape-reshape's first two."""
    claims = []
    for r0, r1 in sorted({(a, b) for a, b, _ in _RESHAPE_RANKS}):
        x, facts = tensor("x", r0)
        s = ints("s", r1)
        g = _pointwise(1)
        pre = facts + [v >= 1 for v in s] + [_prod(s) == _prod(x.shape)]
        claims.append(same(elementwise(g, reshape(x, s)), reshape(elementwise(g, x), s), pre))
    return claims


# ---------------------------------------------------------------- narrow arithmetic through a wider type

_NARROW_INTS = [DTYPES[n] for n in ("s8", "u8", "s16", "u16")]


def _bv_op(op: str, signed: bool):
    if op == "subtract":
        return lambda a, b: a - b
    if op == "negate":
        return lambda a, b: -a
    return _bv_ops(signed)[op]


def _fp_op(op: str):
    return {"subtract": lambda a, b: z3.fpSub(_RM, a, b), "negate": lambda a, b: z3.fpNeg(a)}.get(op) or _fp_ops()[op]


@proves("convert-int-truncate")
def _convert_int_truncate() -> list[z3.BoolRef]:
    """The low N bits of an s32, masked, are below 2^N: the unsigned saturating
    narrowing keeps them, and a bitcast to sN keeps the bits (N = 8, 16)."""
    claims = []
    for d in _NARROW_INTS:
        x = z3.BitVec(f"x{next(_fresh)}", 32)
        top = z3.BitVecVal(2 ** d.bits - 1, 32)
        masked = x & top
        low = z3.If(z3.ULT(masked, top), masked, top)
        claims.append(z3.Extract(d.bits - 1, 0, low) == convert_bv(x, DTYPES["s32"], d))
    return claims


@proves("elementwise-widen")
def _elementwise_widen() -> list[z3.BoolRef]:
    """Integers: op in the narrow type = the s32 op of the extended operands, narrowed
    (wrapping ops keep low bits; maximum and minimum keep values, the extension keeping
    the order). Floats: the narrow op, correctly rounded, = the f32 op rounded to the
    narrow type (f32's 24 bits are at least twice bf16's 8 and f16's 11, plus two)."""
    from ..isel.axioms import WIDENED

    s32 = DTYPES["s32"]
    claims = []
    for d, op in itertools.product(_NARROW_INTS, sorted(WIDENED)):
        a, b = z3.BitVecs(f"a{next(_fresh)} b{next(_fresh)}", d.bits)
        wide = _bv_op(op, True)(convert_bv(a, d, s32), convert_bv(b, d, s32))
        claims.append(convert_bv(wide, s32, d) == _bv_op(op, d.is_signed)(a, b))
    return claims + widened_float_claims(("negate", "maximum", "minimum"))


def widened_float_claims(ops) -> list[z3.BoolRef]:  # noqa: ANN001
    """elementwise-widen's claims for bf16 and f16 and the operators ``ops`` (add and
    subtract take z3 20-50 s each: tests/test_axioms.py proves them as a slow test)."""
    f32 = _FLOAT_SORTS["f32"]
    claims = []
    for name, op in itertools.product(("bf16", "f16"), ops):
        a, b = z3.FPs(f"a{next(_fresh)} b{next(_fresh)}", _FLOAT_SORTS[name])
        wide = _fp_op(op)(z3.fpFPToFP(_RM, a, f32), z3.fpFPToFP(_RM, b, f32))
        claims.append(z3.fpFPToFP(_RM, wide, _FLOAT_SORTS[name]) == _fp_op(op)(a, b))
    return claims
