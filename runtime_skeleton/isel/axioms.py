"""Target-independent IR-to-IR rewrites: the foundational axioms R of Act §2.1/§5.2.1.

Each rule is an identity in the spirit of XLA's algebraic simplifier and
TensorRight's verified rules, sound for the XLA semantics the reference
interpreter implements. ``exact=True`` means bit-for-bit equal results on every
input (NaN payloads and NaN signs aside: numpy does not pin those down either);
``exact=False`` means equal up to float rounding (regrouped sums, the sign of a
zero sum, inf*0 in an identity matmul), each such rule saying why in its doc.
Rules that are exact only for integers come in two: ``name`` for integer types
(exact) and ``name-float`` for float types (exact=False). The rules in
``SUM_ORDER_ONLY`` restructure dots (row/column/batch splits, transposed
operands): bit-exact for integers, and for floats equal up to the order in which
the matmul adds the same products, which XLA does not fix.

Groups: slice/concat/pad/reverse algebra; reshape/transpose/bitcast/convert
fusion and movement through elementwise ops; tiling splits (Act §5.2.3,
Fig. 36); identity matmuls (x = x·I, reductions and broadcasts as matmuls with
ones, negation and reversal as matmuls); max/min/clamp; elementwise algebra;
dot algebra; copy introduction; and, in ``layout_axioms``, strided tile windows
and strided read-modify-write stores of byte-flattened tensors with the moves of
slices, concatenations and transposes through reshape and bitcast-convert.

Split points. A tiling split cuts a dimension of size n > 1 at
``split_point(n)``, the largest power of two strictly below n, into [0, p) and
[p, n). Both pieces are strictly smaller, so recursive splitting ends at size 1,
and a dimension of size n gives O(n) distinct sub-ranges rather than O(n^2).
A piece larger than a power of two T is cut at a multiple of T, so for every
instruction tile size T (16, 64, 128, ...) the pieces include the aligned
T-tiles covering the dimension plus one smaller remainder (n = 200, T = 64:
[0,64) [64,128) [128,192) [192,200)). A d-dimensional op still has O(n^d)
sub-ops when every dimension is split to the end: bound it with run_rules'
``max_nodes``.

Rules that match any value (``copy-intro``, ``dot-identity``) list the value
producing operators in ``VALUE_ROOTS`` as their roots. Elementwise splits are one
rule per operator (``add-split``, ...) so that the Appendix C.2 filter can tell
them apart. Rules whose right-hand side is only an existing class (``slice-full``:
slice(x) = x) produce no operator; ``rules_for_ops`` always keeps them (they can
only remove operators). Constants built by rules (identity matrices, ones, shift
amounts) are single ``constant`` terms of at most ``MAX_CONSTANT_ELEMENTS``
elements.
"""
from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import ActgenError
from ..ir.attrs import Literal, PadDim, SliceDim, split_padding
from ..ir.dtypes import DTYPES, DType, f32, s8, s32, u32
from ..ir.graph import Computation, combiner
from ..ir.ops import COMMUTATIVE, ELEMENTWISE
from ..ir.shape_inference import ShapeError, infer_type
from ..ir.types import TensorType
from .convert import reducer
from .egraph import ClassId
from .rules import ANY, Applier, Rule, filter_rules, rule
from .terms import Class, ENode, Term, View

AXIOMS: list[Rule] = []
# Operators an axiom's result can only be computed with, all of them (Appendix C.2's filter
# keeps a rule when any operator it produces is useful): convert-int-truncate's mask needs
# an instruction that ands, or it only grows the e-graph (Gemmini requantizes every output),
# and so does elementwise-widen's narrowing of an integer result.
NEEDS: dict[str, frozenset[str]] = {}

VALUE_ROOTS = frozenset({
    "parameter", "input", "constant", "copy", "convert", "bitcast-convert", "reshape", "transpose",
    "broadcast", "slice", "concatenate", "dot", "reduce",
})
# Every operator the rules name, in a pattern below a root or in a result
# (tests/test_obstacles.py checks it against the string constants of the rules' code).
# The rules carry any other operator whole: ``_moved`` rebuilds it over moved operands and
# the splits cut it into pieces of itself, but none matches it below a root or removes it
# (isel/obstacles.py builds on that).
NAMED_OPS = frozenset({
    "add", "and", "bitcast-convert", "broadcast", "clamp", "compare", "concatenate", "constant",
    "convert", "copy", "divide", "dot", "iota", "maximum", "minimum", "multiply", "negate", "or",
    "pad", "reduce", "reshape", "reverse", "select", "shift-left", "shift-right-logical", "slice",
    "subtract", "transpose", "xor",
})
MAX_CONSTANT_ELEMENTS = 1 << 20
COMPUTED = ELEMENTWISE | {"dot", "reduce", "broadcast"}  # operators that compute values, not move them
GLUE_OPS = frozenset({"constant", "slice", "concatenate"})
# Exact, except that a float dot's value may differ in the order the matmul sums
# the same products (XLA leaves that order open; the reference's BLAS picks
# kernels by shape and layout, so splitting rows or transposing an operand can
# change the last bits). Integer dots are bit-exact.
SUM_ORDER_ONLY = frozenset({
    "dot-split-lhs", "dot-split-rhs", "dot-split-batch", "dot-rhs-transpose", "dot-lhs-transpose",
    "dot-fold-transpose-rhs", "dot-fold-transpose-lhs", "transpose-dot-swap",
})

Arg = Term | Class


def axiom(name: str, roots: Iterable[str], produces: Iterable[str], *, exact: bool = True,
          expansive: bool = False, watch_operands: int = 0, needs: Iterable[str] = ()):
    """``rules.rule`` that also registers the rule in AXIOMS (and what it ``needs`` in NEEDS)."""

    def wrap(fn: Applier) -> Rule:
        r = rule(name, roots, produces, exact=exact, expansive=expansive, watch_operands=watch_operands)(fn)
        AXIOMS.append(r)
        if needs:
            NEEDS[name] = frozenset(needs)
        return r

    return wrap


def rules_for_ops(ops: set[str]) -> list[Rule]:
    """Act Appendix C.2 for a target whose instructions use ``ops``: ``filter_rules``
    judging each rule by the operators it produces besides the glue every target
    has (``GLUE_OPS``: constants live in the constant section, Act §6.3; slices and
    concatenations are the identity instructions slice^H/concat^H, §5.2.3). A rule
    that produces only glue (slice-slice, concat-merge-slices) or nothing (x = x
    simplifications) can only remove operators, so it is always kept."""
    judged = {replace(r, produces=r.produces - GLUE_OPS): r for r in AXIOMS}
    kept = {judged[r] for r in filter_rules([r for r in judged if r.produces], set(ops))}
    return [r for r in AXIOMS if (r in kept or not (r.produces - GLUE_OPS)) and NEEDS.get(r.name, frozenset()) <= ops]


# ---------------------------------------------------------------- arithmetic shared with the z3 proofs
# These work on Python ints and on z3 integer expressions alike (proofs.py reuses them).


def split_point(n: int) -> int:
    """The largest power of two strictly smaller than n (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


def compose_slice_dim(outer_start, outer_stride, inner_start, inner_stride):
    """(start, stride) of slice_outer(slice_inner(x)) as one slice of x."""
    return inner_start + outer_start * inner_stride, outer_stride * inner_stride


def compose_perm(inner: Sequence[int], outer: Sequence[int]) -> tuple[int, ...]:
    """transpose(transpose(x, inner), outer) = transpose(x, result)."""
    return tuple(inner[j] for j in outer)


def inverse_perm(perm: Sequence[int]) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for j, p in enumerate(perm):
        inv[p] = j
    return tuple(inv)


def compose_reverse(inner: Iterable[int], outer: Iterable[int]) -> tuple[int, ...]:
    """reverse(reverse(x, inner), outer) = reverse(x, result); () means x itself."""
    return tuple(sorted(set(inner) ^ set(outer)))


def unpermute_slice(spec: Sequence[Any], perm: Sequence[int]) -> tuple:
    """slice(transpose(x, perm), spec) = transpose(slice(x, result), perm)."""
    out: list[Any] = [None] * len(perm)
    for j, p in enumerate(perm):
        out[p] = spec[j]
    return tuple(out)


def compose_broadcast_dims(inner: Sequence[int], outer: Sequence[int]) -> tuple[int, ...]:
    """broadcast(broadcast(x, inner), outer) = broadcast(x, result)."""
    return tuple(outer[d] for d in inner)


def transpose_of_broadcast(dims: Sequence[int], perm: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """transpose(broadcast(x, dims), perm) = broadcast(transpose(x, sigma), new_dims):
    returns (sigma, new_dims)."""
    inv = inverse_perm(perm)
    q = [inv[d] for d in dims]
    sigma = tuple(sorted(range(len(q)), key=q.__getitem__))
    return sigma, tuple(sorted(q))


def count(s: SliceDim) -> int:
    return max(0, (s.limit - s.start + s.stride - 1) // s.stride)


def limit_for(start: int, stride: int, n: int) -> int:
    """The tightest limit of a slice with ``n`` elements."""
    return start + (n - 1) * stride + 1 if n > 0 else start


# ---------------------------------------------------------------- typed term construction


class Make:
    """Term constructors over a snapshot: every term gets its inferred type, so a
    rule cannot produce an ill-typed term (infer_type raises ShapeError)."""

    def __init__(self, view: View):
        self.view = view

    def type(self, x: Arg) -> TensorType:
        return x.type if isinstance(x, Term) else self.view.type(x.id)

    def op(self, opcode: str, args: Sequence[Arg], attrs: dict[str, Any] | None = None,
           declared: TensorType | None = None, computations: dict[str, Computation] | None = None) -> Term:
        attrs = attrs or {}
        t = infer_type(opcode, [self.type(a) for a in args], attrs, computations, declared)
        assert isinstance(t, TensorType)
        return Term(opcode, t, tuple(args), attrs)

    def like(self, node: ENode, args: Sequence[Arg]) -> Term:
        """``node``'s elementwise operator and attributes over new operands."""
        shape = next((self.type(a).shape for a in args if self.type(a).rank), self.type(args[0]).shape)
        return self.op(node.op, args, dict(node.attrs), TensorType(node.type.dtype, shape))

    def slice(self, x: Arg, spec: Sequence[SliceDim]) -> Arg:
        shape = self.type(x).shape
        if all(s == SliceDim(0, n, 1) for s, n in zip(spec, shape)):
            return x
        return self.op("slice", [x], {"slice": tuple(spec)})

    def slice_dim(self, x: Arg, d: int, start: int, limit: int) -> Arg:
        spec = [SliceDim(0, n, 1) for n in self.type(x).shape]
        spec[d] = SliceDim(start, limit, 1)
        return self.slice(x, spec)

    def concat(self, xs: Sequence[Arg], d: int) -> Arg:
        return xs[0] if len(xs) == 1 else self.op("concatenate", xs, {"dimensions": (d,)})

    def transpose(self, x: Arg, perm: Sequence[int]) -> Arg:
        """transpose(x, perm); the reshape it is when perm moves only size-1 dimensions."""
        if tuple(perm) == tuple(range(len(perm))):
            return x
        shape = self.type(x).shape
        big = [d for d in perm if shape[d] != 1]
        if big == sorted(big):
            return self.reshape(x, tuple(shape[d] for d in perm))
        return self.op("transpose", [x], {"dimensions": tuple(perm)})

    def reshape(self, x: Arg, shape: Sequence[int]) -> Arg:
        t = self.type(x)
        if t.shape == tuple(shape):
            return x
        return self.op("reshape", [x], {}, TensorType(t.dtype, tuple(shape)))

    def broadcast(self, x: Arg, shape: Sequence[int], dims: Sequence[int]) -> Arg:
        t = self.type(x)
        if t.shape == tuple(shape) and tuple(dims) == tuple(range(t.rank)):
            return x
        return self.op("broadcast", [x], {"dimensions": tuple(dims)}, TensorType(t.dtype, tuple(shape)))

    def convert(self, x: Arg, dtype: DType) -> Arg:
        t = self.type(x)
        return x if t.dtype == dtype else self.op("convert", [x], {}, TensorType(dtype, t.shape))

    def bitcast(self, x: Arg, dtype: DType) -> Term:
        return self.op("bitcast-convert", [x], {}, TensorType(dtype, ()))

    def constant(self, values: Any, dtype: DType) -> Term:
        arr = np.asarray(values)
        if dtype.is_int and arr.dtype.kind in "iu":
            arr = arr.astype(np.int64).astype(dtype.np)  # wraps (-1 as u8 is 255)
        lit = Literal(dtype, arr)
        return Term("constant", TensorType(dtype, lit.shape), (), {"literal": lit})

    def scalar(self, value: Any, dtype: DType) -> Term:
        return self.constant(np.asarray(value), dtype)

    def dot(self, a: Arg, b: Arg, dtype: DType, lc: Sequence[int], rc: Sequence[int],
            lb: Sequence[int] = (), rb: Sequence[int] = (), base: ENode | None = None) -> Term:
        attrs = dict(base.attrs) if base is not None else {}
        attrs.update(lhs_batch_dims=tuple(lb), lhs_contracting_dims=tuple(lc),
                     rhs_batch_dims=tuple(rb), rhs_contracting_dims=tuple(rc))
        return self.op("dot", [a, b], attrs, TensorType(dtype, ()))

    def redot(self, node: ENode, a: Arg, b: Arg, dtype: DType | None = None) -> Term:
        """``node`` (a dot) over new operands, same dimension numbers."""
        lb, lc, rb, rc = dot_dims(node)
        return self.dot(a, b, dtype or node.type.dtype, lc, rc, lb, rb, base=node)

    def reduce(self, node: ENode, x: Arg, init: Arg) -> Term:
        """``node`` (a one-array reduce) over a new array operand."""
        name = node.attrs["to_apply"]
        return self.op("reduce", [x, init], dict(node.attrs), computations={name: reducer(name)})


# ---------------------------------------------------------------- matching helpers


def kids(node: ENode) -> list[Class]:
    return [Class(c) for c in node.children]


def dot_dims(node: ENode) -> tuple[tuple[int, ...], ...]:
    a = node.attrs
    return tuple(tuple(a.get(k, ())) for k in
                 ("lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims"))


def free_dims(rank: int, *used: Sequence[int]) -> list[int]:
    taken = {d for u in used for d in u}
    return [d for d in range(rank) if d not in taken]


def splat(view: View, c: ClassId) -> np.ndarray | None:
    """The one value (a 0-d array) all elements of class ``c`` have, when the class
    holds a constant with equal elements or a broadcast of a scalar constant."""
    for n in view.find(c, "constant"):
        arr = n.attrs["literal"].array
        if arr.size and _all_same_bits(arr):
            return arr.reshape(-1)[:1].reshape(())
    for n in view.find(c, "broadcast"):
        s = n.children[0]
        if view.type(s).rank == 0:
            for k in view.find(s, "constant"):
                return k.attrs["literal"].array
    return None


def _all_same_bits(arr: np.ndarray) -> bool:
    raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8).reshape(arr.size, -1)
    return bool((raw == raw[0]).all())


def is_zero(v: np.ndarray | None, *, negative: bool | None = None) -> bool:
    """v == 0; for floats, ``negative`` asks for the sign of the zero too."""
    if v is None or v.dtype == np.bool_:
        return False
    if float(v) != 0:
        return False
    return negative is None or v.dtype.kind in "iu" or bool(np.signbit(v)) == negative


def int_value(v: np.ndarray | None) -> int | None:
    """v as an exact integer, or None (floats with fractions, pred)."""
    if v is None or v.dtype == np.bool_:
        return None
    if v.dtype.kind in "iu":
        return int(v)
    f = float(v)
    return int(f) if np.isfinite(f) and f == int(f) else None


def reducer_op(name: str) -> str | None:
    """The opcode of a content-addressed reducer ``ROOT r = op(p0, p1)``, else None."""
    return combiner(reducer(name))


# ---------------------------------------------------------------- 1. slice / concat / pad / reverse


@axiom("slice-slice", {"slice"}, {"slice"}, watch_operands=1)
def slice_slice(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """slice_o(slice_i(x)) = slice(x) with start = s_i + s_o*t_i, stride = t_o*t_i."""
    mk = Make(view)
    for inner in view.find(node.children[0], "slice"):
        spec = []
        for o, i in zip(node.attrs["slice"], inner.attrs["slice"]):
            start, stride = compose_slice_dim(o.start, o.stride, i.start, i.stride)
            spec.append(SliceDim(start, limit_for(start, stride, count(o)), stride))
        yield mk.slice(Class(inner.children[0]), spec)


@axiom("slice-full", {"slice"}, ())
def slice_full(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """slice(x)[0:n:1 in every dim] = x."""
    shape = view.type(node.children[0]).shape
    if all(s.start == 0 and s.limit == n and s.stride == 1 for s, n in zip(node.attrs["slice"], shape)):
        yield Class(node.children[0])


def _concat_offsets(view: View, node: ENode, d: int) -> list[int]:
    offs = [0]
    for k in node.children:
        offs.append(offs[-1] + view.type(k).shape[d])
    return offs


@axiom("slice-concat-within", {"slice"}, {"slice"}, watch_operands=1)
def slice_concat_within(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """slice(concat(x0, .., xn))[a:b:s along d] = slice(xk)[a-o:b-o:s] when [a, b) lies in xk."""
    mk = Make(view)
    spec = node.attrs["slice"]
    for cat in view.find(node.children[0], "concatenate"):
        (d,) = cat.attrs["dimensions"]
        s = spec[d]
        n = count(s)
        if n == 0:
            continue
        last = s.start + (n - 1) * s.stride
        offs = _concat_offsets(view, cat, d)
        for k, x in enumerate(cat.children):
            if offs[k] <= s.start and last < offs[k + 1]:
                sub = list(spec)
                sub[d] = SliceDim(s.start - offs[k], last - offs[k] + 1, s.stride)
                yield mk.slice(Class(x), sub)


@axiom("slice-concat-distribute", {"slice"}, {"slice", "concatenate"}, watch_operands=1)
def slice_concat_distribute(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """slice(concat(x0, .., xn))[a:b:1 along d] = concat of the slices of the xk that [a, b) touches."""
    mk = Make(view)
    spec = node.attrs["slice"]
    for cat in view.find(node.children[0], "concatenate"):
        (d,) = cat.attrs["dimensions"]
        s = spec[d]
        if s.stride != 1:
            continue
        offs = _concat_offsets(view, cat, d)
        parts = []
        for k, x in enumerate(cat.children):
            lo, hi = max(s.start, offs[k]), min(s.limit, offs[k + 1])
            if lo < hi:
                sub = list(spec)
                sub[d] = SliceDim(lo - offs[k], hi - offs[k], 1)
                parts.append(mk.slice(Class(x), sub))
        if len(parts) >= 2:
            yield mk.concat(parts, d)


def _mergeable(view: View, a: ENode, b: ENode, d: int) -> SliceDim | None:
    """The slice along d covering slice a then slice b of the same tensor, if they abut."""
    if a.children != b.children:
        return None
    sa, sb = a.attrs["slice"], b.attrs["slice"]
    if any(x != y for i, (x, y) in enumerate(zip(sa, sb)) if i != d):
        return None
    p, q = sa[d], sb[d]
    if p.stride != q.stride or count(p) == 0 or count(q) == 0 or q.start != p.start + count(p) * p.stride:
        return None
    return SliceDim(p.start, limit_for(p.start, p.stride, count(p) + count(q)), p.stride)


@axiom("concat-merge-slices", {"concatenate"}, {"slice", "concatenate"}, expansive=True, watch_operands=1)
def concat_merge_slices(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """concat(.., slice(x)[a:b], slice(x)[b:e], ..) = concat(.., slice(x)[a:e], ..) (along the concat dim)."""
    mk = Make(view)
    (d,) = node.attrs["dimensions"]
    ops = kids(node)
    for k in range(len(ops) - 1):
        for a in view.find(node.children[k], "slice"):
            for b in view.find(node.children[k + 1], "slice"):
                merged = _mergeable(view, a, b, d)
                if merged is not None:
                    spec = list(a.attrs["slice"])
                    spec[d] = merged
                    one = mk.slice(Class(a.children[0]), spec)
                    yield mk.concat(ops[:k] + [one] + ops[k + 2:], d)


@axiom("concat-single", {"concatenate"}, ())
def concat_single(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """concat(x) = x."""
    if len(node.children) == 1:
        yield Class(node.children[0])


@axiom("concat-flatten", {"concatenate"}, {"concatenate"}, watch_operands=1)
def concat_flatten(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """concat(a, concat(b, c), d) = concat(a, b, c, d) (same dimension)."""
    mk = Make(view)
    dims = node.attrs["dimensions"]
    flat: list[Arg] = []
    changed = False
    for k in node.children:
        inner = [n for n in view.find(k, "concatenate") if n.attrs["dimensions"] == dims and k not in n.children]
        if inner:
            flat.extend(kids(inner[0]))
            changed = True
        else:
            flat.append(Class(k))
    if changed:
        yield mk.concat(flat, dims[0])


@axiom("concat-binarize", {"concatenate"}, {"concatenate"}, expansive=True)
def concat_binarize(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """concat(x0, x1, .., xn) = concat(x0, concat(x1, .., xn)) for n >= 2 (binary concat instructions).
    Expansive, as is concat-merge-slices: on a kernel cut into n row tiles the two build a
    class for every run of rows (a 16-row chain on AMX: 169k e-nodes before its pii graph
    with them among the cheap rules, 12k without)."""
    if len(node.children) >= 3:
        mk = Make(view)
        (d,) = node.attrs["dimensions"]
        ops = kids(node)
        yield mk.concat([ops[0], mk.concat(ops[1:], d)], d)


@axiom("pad-noop", {"pad"}, ())
def pad_noop(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """pad(x, v) with all-zero padding = x."""
    if all(p == PadDim(0, 0, 0) for p in node.attrs["padding"]):
        yield Class(node.children[0])


@axiom("pad-concat", {"pad"}, {"concatenate", "broadcast", "pad"}, expansive=True)
def pad_concat(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """pad(x, v) = concat(broadcast(v), pad'(x, v), broadcast(v)) along its first padded
    dimension, pad' padding the others (edge padding only: no interior, none negative):
    the padding a masked load writes as the zero lanes after the value."""
    pads = node.attrs["padding"]
    if any(p.interior or p.lo < 0 or p.hi < 0 for p in pads):
        return
    found = split_padding(pads)
    if found is None:
        return
    d, rest = found
    mk = Make(view)
    x, v = (Class(k) for k in node.children)
    inner = x if rest is None else mk.op("pad", [x, v], {"padding": rest})
    shape = mk.type(inner).shape

    def fill(n: int) -> list[Arg]:
        return [mk.broadcast(v, shape[:d] + (n,) + shape[d + 1:], ())] if n else []

    yield mk.concat(fill(pads[d].lo) + [inner] + fill(pads[d].hi), d)


@axiom("slice-pad", {"slice"}, {"slice"}, watch_operands=1)
def slice_pad(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """slice(pad(x, v, lo_hi))[a:b:s] = slice(x)[a-lo:b-lo:s] when the slice reads only x."""
    mk = Make(view)
    spec = node.attrs["slice"]
    for pad in view.find(node.children[0], "pad"):
        shape = view.type(pad.children[0]).shape
        sub = []
        for s, p, n in zip(spec, pad.attrs["padding"], shape):
            k = count(s)
            last = s.start + (k - 1) * s.stride
            if k == 0 or p.interior != 0 or s.start < p.lo or last >= p.lo + n:
                break
            sub.append(SliceDim(s.start - p.lo, last - p.lo + 1, s.stride))
        else:
            yield mk.slice(Class(pad.children[0]), sub)


@axiom("reverse-reverse", {"reverse"}, {"reverse"}, watch_operands=1)
def reverse_reverse(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reverse(reverse(x, A), B) = reverse(x, A xor B) (= x when A = B)."""
    for inner in view.find(node.children[0], "reverse"):
        dims = compose_reverse(inner.attrs["dimensions"], node.attrs["dimensions"])
        x = Class(inner.children[0])
        yield Make(view).op("reverse", [x], {"dimensions": dims}) if dims else x


@axiom("reverse-noop", {"reverse"}, ())
def reverse_noop(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reverse(x, dims) = x when every reversed dimension has size <= 1."""
    shape = node.type.shape
    if all(shape[d] <= 1 for d in node.attrs["dimensions"]):
        yield Class(node.children[0])


@axiom("slice-transpose", {"slice"}, {"slice", "transpose"}, watch_operands=1)
def slice_transpose(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """slice(transpose(x, p), s) = transpose(slice(x, s'), p) with s'[p[j]] = s[j]."""
    mk = Make(view)
    for t in view.find(node.children[0], "transpose"):
        perm = t.attrs["dimensions"]
        yield mk.transpose(mk.slice(Class(t.children[0]), unpermute_slice(node.attrs["slice"], perm)), perm)


@axiom("slice-broadcast", {"slice"}, {"slice", "broadcast"}, watch_operands=1)
def slice_broadcast(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """slice(broadcast(x, dims), s) = broadcast(slice(x, s restricted to dims), sliced shape)."""
    mk = Make(view)
    spec = node.attrs["slice"]
    for b in view.find(node.children[0], "broadcast"):
        x = b.children[0]
        xshape, dims = view.type(x).shape, b.attrs["dimensions"]
        sub = [spec[d] if xshape[i] == b.type.shape[d] else SliceDim(0, 1, 1) for i, d in enumerate(dims)]
        yield mk.broadcast(mk.slice(Class(x), sub), node.type.shape, dims)


# ---------------------------------------------------------------- 2. reshape / transpose / bitcast / convert


@axiom("reshape-reshape", {"reshape"}, {"reshape"}, watch_operands=1)
def reshape_reshape(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reshape(reshape(x)) = reshape(x) (= x when the shapes agree)."""
    mk = Make(view)
    for inner in view.find(node.children[0], "reshape"):
        yield mk.reshape(Class(inner.children[0]), node.type.shape)


@axiom("vector-as-row", {ANY}, {"reshape"}, watch_operands=1)
def vector_as_row(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """x = reshape(reshape(x, [1, n]), [n]) for a computed vector x of n elements:
    instructions work on rows ([1, n] registers, [rows, n] tiles), and reshape-elementwise
    then moves the row view down to the operands, where loads produce it. (Vectors that
    only move data, such as the byte chains of layouts, are left alone.)"""
    t = node.type
    if t.rank != 1 or not any(m.op in COMPUTED for m in view.nodes(c)):
        return
    mk = Make(view)
    yield mk.reshape(mk.reshape(Class(c), [1, t.shape[0]]), [t.shape[0]])


@axiom("reshape-noop", {"reshape"}, ())
def reshape_noop(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reshape(x) to x's own shape = x."""
    if view.type(node.children[0]).shape == node.type.shape:
        yield Class(node.children[0])


@axiom("transpose-transpose", {"transpose"}, {"transpose"}, watch_operands=1)
def transpose_transpose(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """transpose(transpose(x, p), q) = transpose(x, p∘q) (= x when that is the identity)."""
    mk = Make(view)
    for inner in view.find(node.children[0], "transpose"):
        yield mk.transpose(Class(inner.children[0]), compose_perm(inner.attrs["dimensions"], node.attrs["dimensions"]))


@axiom("transpose-noop", {"transpose"}, ())
def transpose_noop(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """transpose(x, identity) = x."""
    if tuple(node.attrs["dimensions"]) == tuple(range(node.type.rank)):
        yield Class(node.children[0])


@axiom("transpose-as-reshape", {"transpose"}, {"reshape"})
def transpose_as_reshape(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """transpose(x, p) = reshape(x) when p moves only size-1 dimensions."""
    perm = node.attrs["dimensions"]
    shape = view.type(node.children[0]).shape
    big = [d for d in perm if shape[d] != 1]
    if tuple(perm) != tuple(range(len(perm))) and big == sorted(big):
        yield Make(view).reshape(Class(node.children[0]), node.type.shape)


@axiom("bitcast-convert-noop", {"bitcast-convert"}, ())
def bitcast_convert_noop(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """bitcast-convert(x) to x's own element type = x."""
    if view.type(node.children[0]).same_shape_dtype(node.type):
        yield Class(node.children[0])


@axiom("bitcast-convert-chain", {"bitcast-convert"}, {"bitcast-convert", "reshape"}, watch_operands=1)
def bitcast_convert_chain(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """bitcast(bitcast(x, T2), T3) = reshape(bitcast(x, T3)) (both keep the row-major byte sequence)."""
    mk = Make(view)
    for inner in view.find(node.children[0], "bitcast-convert"):
        x = Class(inner.children[0])
        try:
            direct = mk.bitcast(x, node.type.dtype) if view.type(x.id).dtype != node.type.dtype else x
        except ShapeError:
            continue  # e.g. u8[n,4] -> s32[n] -> s16[n,2]: no single bitcast from u8[n,4] to s16
        yield mk.reshape(direct, node.type.shape)


@axiom("bitcast-convert-reshape", {"bitcast-convert"}, {"bitcast-convert", "reshape"}, watch_operands=1)
def bitcast_convert_reshape(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """bitcast(reshape(x), T) = reshape(bitcast(x, T)) when T has x's bit width."""
    mk = Make(view)
    for r in view.find(node.children[0], "reshape"):
        x = Class(r.children[0])
        if view.type(x.id).dtype.bits == node.type.dtype.bits:
            yield mk.reshape(mk.bitcast(x, node.type.dtype), node.type.shape)


_FLOAT_FORMAT = {"f16": (5, 11), "bf16": (8, 8), "f32": (8, 24), "f64": (11, 53)}  # exponent bits, precision


def holds(src: DType, dst: DType) -> bool:
    """Every value of ``src`` converts to ``dst`` exactly."""
    if src == dst or src.is_pred:
        return True
    if dst.is_pred:
        return False
    if src.is_float:
        if not dst.is_float:
            return False
        (se, sp), (de, dp) = _FLOAT_FORMAT[src.name], _FLOAT_FORMAT[dst.name]
        return de >= se and dp >= sp
    magnitude = src.bits - 1 if src.is_signed else src.bits  # values lie in [-2^m, 2^m)
    if dst.is_float:
        return _FLOAT_FORMAT[dst.name][1] >= magnitude
    if src.is_signed:
        return dst.is_signed and dst.bits >= src.bits
    return dst.bits > src.bits if dst.is_signed else dst.bits >= src.bits


def convert_chain_exact(t1: DType, t2: DType, t3: DType) -> bool:
    """convert(convert(x: t1, t2), t3) == convert(x, t3) for every x. Integer-only
    chains: t2 holds t1, or t3 is no wider than t2 (both keep x's low t3 bits;
    exactly the chains z3 proves, see proofs.py). Otherwise t2 must hold t1, and
    when t2 is a float between integers t3 must hold t1 too (float->int saturates
    where int->int wraps)."""
    if t1.is_int and t2.is_int and t3.is_int:
        return holds(t1, t2) or t3.bits <= t2.bits
    if not holds(t1, t2):
        return False
    if t2.is_float and t1.is_int and t3.is_int:
        return holds(t1, t3)
    return True


@axiom("convert-convert", {"convert"}, {"convert"}, watch_operands=1)
def convert_convert(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """convert(convert(x, T2), T3) = convert(x, T3) when nothing is lost (s8->s32->s64, not f32->bf16->f32)."""
    mk = Make(view)
    for inner in view.find(node.children[0], "convert"):
        x = Class(inner.children[0])
        if convert_chain_exact(view.type(x.id).dtype, inner.type.dtype, node.type.dtype):
            yield mk.convert(x, node.type.dtype)


@axiom("convert-noop", {"convert"}, ())
def convert_noop(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """convert(x) to x's own element type = x."""
    if view.type(node.children[0]).dtype == node.type.dtype:
        yield Class(node.children[0])


@axiom("constant-narrow", {"constant"}, {"convert", "constant"})
def constant_narrow(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """An integer constant = convert(the same values in the narrowest signed, and the
    narrowest unsigned, integer type that holds them all): how a matmul unit with 8-bit
    operands reads the -I, J and ones the matmul rules build in the result's type."""
    t = node.type
    arr = node.attrs["literal"].array
    if not t.dtype.is_int or t.rank == 0 or not arr.size:
        return
    lo, hi = int(arr.min()), int(arr.max())
    for signed in (True, False):
        fits = [d for d in DTYPES.values() if d.is_int and d.is_signed == signed and d.bits < t.dtype.bits
                and np.iinfo(d.np).min <= lo and hi <= np.iinfo(d.np).max]
        if fits:
            mk = Make(view)
            yield mk.convert(mk.constant(arr, min(fits, key=lambda d: d.bits)), t.dtype)


# Declared as producing nothing: a literal is no operator (it lives in the constant section,
# like the glue rules_for_ops discounts), and the rule only removes one, so every target keeps it.
@axiom("elementwise-of-constants", ELEMENTWISE, (), watch_operands=1)
def elementwise_of_constants(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """op(constant a, constant b, ..) = constant(op(a, b, ..)), computed by the reference
    interpreter (XLA's constant folding; jnp.clip's integer bounds on floats arrive as
    convert(constant), which the clamp rules read only as a constant). The result is as
    large as the operands: broadcasts are not expanded. Operands that are broadcasts of
    scalar literals (a zero tensor, ``broadcast(constant(0))``) fold as scalars, and the
    result is the broadcast of the folded scalar, which an instruction making that constant
    on chip (AMX ``vzero``) matches."""
    literals, uniform = [], False
    for x in node.children:
        lit = next((n.attrs["literal"] for n in view.find(x, "constant")), None)
        if lit is None:
            v = splat(view, x)  # no literal here: a broadcast of a scalar one
            if v is None:
                return
            lit, uniform = Literal(view.type(x).dtype, v), True
        literals.append(lit)
    mk = Make(view)
    if not uniform:
        folded = _fold(node, tuple(literals))
        if folded is not None:
            yield mk.constant(folded, node.type.dtype)
    elif all(lit.array.ndim == 0 for lit in literals):
        folded = _fold(node, tuple(literals), TensorType(node.type.dtype, ()))
        if folded is not None:
            yield mk.broadcast(mk.constant(folded, node.type.dtype), node.type.shape, ())


_FOLDED: dict[tuple, np.ndarray | None] = {}


def _fold(node: ENode, literals: tuple[Literal, ...], as_type: TensorType | None = None) -> np.ndarray | None:
    t = as_type or node.type
    key = (node.op, repr(sorted(node.attrs.items())), t, literals)
    if key not in _FOLDED:
        _FOLDED[key] = _evaluate_op(node.op, node.attrs, t, [(lit.array, lit.dtype) for lit in literals])
    return _FOLDED[key]


def _moved(mk: Make, view: View, node: ENode, move: Callable[[Arg], Arg]) -> Iterator[Arg]:
    """For a data-movement ``node`` over an elementwise op: op(move(x), move(y), ..)
    (scalar clamp bounds stay as they are)."""
    for e in _elementwise_nodes(view, node.children[0]):
        yield mk.like(e, [Class(k) if view.type(k).rank == 0 else move(Class(k)) for k in e.children])


def _elementwise_nodes(view: View, c: ClassId) -> list[ENode]:
    return [n for n in view.nodes(c) if n.op in ELEMENTWISE and n.type.rank > 0]


@axiom("transpose-elementwise", {"transpose"}, ELEMENTWISE | {"transpose"}, watch_operands=1)
def transpose_elementwise(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """transpose(op(x, y)) = op(transpose(x), transpose(y)) for elementwise op."""
    mk = Make(view)
    yield from _moved(mk, view, node, lambda x: mk.transpose(x, node.attrs["dimensions"]))


@axiom("slice-elementwise", {"slice"}, ELEMENTWISE | {"slice"}, watch_operands=1)
def slice_elementwise(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """slice(op(x, y)) = op(slice(x), slice(y)) for elementwise op."""
    mk = Make(view)
    yield from _moved(mk, view, node, lambda x: mk.slice(x, node.attrs["slice"]))


@axiom("reshape-elementwise", {"reshape"}, ELEMENTWISE | {"reshape"}, watch_operands=1)
def reshape_elementwise(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reshape(op(x, y)) = op(reshape(x), reshape(y)) for elementwise op."""
    mk = Make(view)
    yield from _moved(mk, view, node, lambda x: mk.reshape(x, node.type.shape))


@axiom("concat-zero-elementwise", {"concatenate"}, ELEMENTWISE | {"concatenate", "broadcast", "constant"},
       watch_operands=1)
def concat_zero_elementwise(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """concat(op(x, y), 0) = op(concat(x, 0), concat(y, 0)), zeros on either side, for an
    elementwise op with op(0, 0) = 0 bit for bit (add, multiply, maximum, convert; not
    divide, nor negate: -0): how a register holding fewer lanes than it has computes. Along
    the innermost dimension only: padded with zero rows (a [1, 64] row to a 16-row tile),
    every elementwise op of a vector kernel got a 16-row copy that only the tiling cut back
    into rows (AMX K5's f32 chain, one register row: 11.9k e-nodes before its program, 2.4k
    without them); instructions that take fewer rows say so by their own attributes."""
    if len(node.children) != 2:
        return
    mk = Make(view)
    d = node.attrs["dimensions"][0]
    if d != node.type.rank - 1:
        return
    for k in (0, 1):
        zero = splat(view, node.children[1 - k])
        if not is_zero(zero, negative=False):
            continue
        rest = view.type(node.children[1 - k]).shape
        for e in _elementwise_nodes(view, node.children[k]):
            dtypes = [view.type(x).dtype for x in e.children]
            if any(view.type(x).rank != e.type.rank for x in e.children) or not _keeps_zero(e, tuple(dtypes)):
                continue
            padded = [[Class(x), mk.broadcast(mk.scalar(0, dt), rest, ())] for x, dt in zip(e.children, dtypes)]
            yield mk.like(e, [mk.concat(p if k == 0 else p[::-1], d) for p in padded])


_KEEPS_ZERO: dict[tuple, bool] = {}


def _keeps_zero(e: ENode, dtypes: tuple[DType, ...]) -> bool:
    """``e``'s op maps zeros of ``dtypes`` to a zero of its own type, bit for bit (the
    reference interpreter decides, once per op, attributes and dtypes)."""
    key = (e.op, repr(sorted(e.attrs.items())), dtypes, e.type.dtype)
    if key not in _KEEPS_ZERO:
        _KEEPS_ZERO[key] = not e.type.dtype.is_pred and _zero_of_zeros(e, dtypes)
    return _KEEPS_ZERO[key]


def _zero_of_zeros(e: ENode, dtypes: tuple[DType, ...]) -> bool:
    got = _evaluate_op(e.op, e.attrs, TensorType(e.type.dtype, (1,)), [(np.zeros(1, dt.np), dt) for dt in dtypes])
    return got is not None and not np.ascontiguousarray(got).view(np.uint8).any()


def _evaluate_op(op: str, attrs: Any, out: TensorType,
                 operands: Sequence[tuple[np.ndarray, DType]]) -> np.ndarray | None:
    """The reference interpreter's value of ``op`` over constant operands (None when it
    or shape inference refuses them)."""
    from ..reference import evaluate
    from .convert import to_module

    mk = Make(View({}))
    try:
        term = mk.op(op, [mk.constant(a, dt) for a, dt in operands], dict(attrs), out)
        return evaluate(to_module([term]), [])[0]
    except (ActgenError, ShapeError):
        return None


@axiom("broadcast-noop", {"broadcast"}, ())
def broadcast_noop(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """broadcast(x) onto x's own shape with dimensions {0, .., r-1} = x."""
    x = view.type(node.children[0])
    if x.shape == node.type.shape and tuple(node.attrs["dimensions"]) == tuple(range(x.rank)):
        yield Class(node.children[0])


@axiom("broadcast-broadcast", {"broadcast"}, {"broadcast"}, watch_operands=1)
def broadcast_broadcast(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """broadcast(broadcast(x, D1), D2) = broadcast(x, D2∘D1)."""
    mk = Make(view)
    outer = node.attrs["dimensions"]
    for inner in view.find(node.children[0], "broadcast"):
        dims = compose_broadcast_dims(inner.attrs["dimensions"], outer)
        yield mk.broadcast(Class(inner.children[0]), node.type.shape, dims)


@axiom("broadcast-squeeze", {"broadcast"}, {"broadcast", "reshape"})
def broadcast_squeeze(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """broadcast(x, dims) = broadcast(reshape(x, x without its size-1 dims), the other dims):
    the row of a broadcast column is a scalar broadcast (AVX-512's vbroadcastss)."""
    x = node.children[0]
    shape = view.type(x).shape
    if 1 not in shape:
        return
    mk = Make(view)
    keep = [i for i, n in enumerate(shape) if n != 1]
    dims = node.attrs["dimensions"]
    yield mk.broadcast(mk.reshape(Class(x), [shape[i] for i in keep]), node.type.shape, [dims[i] for i in keep])


@axiom("broadcast-elementwise", {"broadcast"}, ELEMENTWISE | {"broadcast"}, watch_operands=1)
def broadcast_elementwise(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """broadcast(op(x, y)) = op(broadcast(x), broadcast(y)) for elementwise op, when op's
    value is one element (scalar clamp bounds stay as they are): a vector instruction
    computes on a broadcast scalar in one step, as it would on the scalar, and the scalar
    need not go through memory to be broadcast (a scalar computed in a vector register
    reaches vbroadcastss only by a store and a reload)."""
    if view.type(node.children[0]).size != 1:
        return
    mk = Make(view)
    shape, dims = node.type.shape, node.attrs["dimensions"]
    for e in (n for n in view.nodes(node.children[0]) if n.op in ELEMENTWISE):
        yield mk.like(e, [mk.broadcast(Class(k), shape, dims) if view.type(k).rank == e.type.rank else Class(k)
                          for k in e.children])


@axiom("broadcast-as-reshape", {"broadcast"}, {"reshape"})
def broadcast_as_reshape(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """broadcast(x, dims) that only adds size-1 dimensions (dims increasing) = reshape(x)."""
    t = view.type(node.children[0])
    dims = tuple(node.attrs["dimensions"])
    if t.shape != node.type.shape and t.size == node.type.size and dims == tuple(sorted(dims)):
        yield Make(view).reshape(Class(node.children[0]), node.type.shape)


@axiom("broadcast-as-concat", {"broadcast"}, {"broadcast", "concatenate"}, expansive=True)
def broadcast_as_concat(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """broadcast(x) = concat(b, .., b) along the outermost dimension of size n > 1 when the
    broadcast adds it, b the broadcast with that dimension of size 1: a broadcast row is n
    equal rows in one step (the halving splits need log2(n) rounds, each a slice pushed
    through the broadcast). Only there are the slabs contiguous runs of the row-major
    value; along an inner dimension they interleave (columns: no row-oriented buffer holds
    one, and the strided stores writing 64 of them one after another nest 300 deep)."""
    shape = node.type.shape
    d = next((i for i, n in enumerate(shape) if n > 1), None)
    if d is None or d == len(shape) - 1 or d in node.attrs["dimensions"]:
        return  # not the innermost dimension: its slabs would be single elements, a concatenation of each
    mk = Make(view)
    one = mk.broadcast(Class(node.children[0]), shape[:d] + (1,) + shape[d + 1:], node.attrs["dimensions"])
    yield mk.concat([one] * shape[d], d)


@axiom("transpose-broadcast", {"transpose"}, {"broadcast", "transpose"}, watch_operands=1)
def transpose_broadcast(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """transpose(broadcast(x, D), p) = broadcast(transpose(x, σ), D') (σ = id when p keeps x's dims in order)."""
    mk = Make(view)
    for b in view.find(node.children[0], "broadcast"):
        sigma, dims = transpose_of_broadcast(b.attrs["dimensions"], node.attrs["dimensions"])
        yield mk.broadcast(mk.transpose(Class(b.children[0]), sigma), node.type.shape, dims)


@axiom("reshape-broadcast-scalar", {"reshape"}, {"broadcast"}, watch_operands=1)
def reshape_broadcast_scalar(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reshape(broadcast(s)) = broadcast(s) onto the new shape, s a scalar."""
    mk = Make(view)
    for b in view.find(node.children[0], "broadcast"):
        if view.type(b.children[0]).rank == 0:
            yield mk.broadcast(Class(b.children[0]), node.type.shape, ())


# ---------------------------------------------------------------- 3. tiling splits (Act §5.2.3, Fig. 36)


def _halves(mk: Make, x: Arg, d: int) -> tuple[Arg, Arg]:
    n = mk.type(x).shape[d]
    p = split_point(n)
    return mk.slice_dim(x, d, 0, p), mk.slice_dim(x, d, p, n)


def _split_elementwise(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    mk = Make(view)
    for d, n in enumerate(node.type.shape):
        if n <= 1:
            continue
        halves = [_halves(mk, Class(k), d) if view.type(k).rank else (Class(k), Class(k)) for k in node.children]
        yield mk.concat([mk.like(node, [h[i] for h in halves]) for i in (0, 1)], d)


def _elementwise_split_rule(op: str) -> Rule:
    # One rule per operator, so that the Appendix C.2 filter keeps the split of an
    # operator only where that operator is useful.
    def apply(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
        return _split_elementwise(view, c, node)

    apply.__doc__ = f"{op}(x, ..) = concat({op}(x[:p], ..), {op}(x[p:], ..)) along any dim of size > 1."
    return axiom(f"{op}-split", {op}, {op, "slice", "concatenate"}, expansive=True)(apply)


for _op in sorted(ELEMENTWISE):
    _elementwise_split_rule(_op)


@axiom("dot-split-lhs", {"dot"}, {"dot", "slice", "concatenate"}, expansive=True)
def dot_split_lhs(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(a, b) = concat(dot(a[:p], b), dot(a[p:], b)) along a free (row) dimension of a."""
    mk = Make(view)
    a, b = kids(node)
    lb, lc, _, _ = dot_dims(node)
    for i, d in enumerate(free_dims(mk.type(a).rank, lb, lc)):
        if mk.type(a).shape[d] > 1:
            lo, hi = _halves(mk, a, d)
            yield mk.concat([mk.redot(node, lo, b), mk.redot(node, hi, b)], len(lb) + i)


@axiom("dot-split-rhs", {"dot"}, {"dot", "slice", "concatenate"}, expansive=True)
def dot_split_rhs(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(a, b) = concat(dot(a, b[.., :p]), dot(a, b[.., p:])) along a free (column) dimension of b."""
    mk = Make(view)
    a, b = kids(node)
    lb, lc, rb, rc = dot_dims(node)
    base = len(lb) + len(free_dims(mk.type(a).rank, lb, lc))
    for i, d in enumerate(free_dims(mk.type(b).rank, rb, rc)):
        if mk.type(b).shape[d] > 1:
            lo, hi = _halves(mk, b, d)
            yield mk.concat([mk.redot(node, a, lo), mk.redot(node, a, hi)], base + i)


@axiom("dot-split-batch", {"dot"}, {"dot", "slice", "concatenate"}, expansive=True)
def dot_split_batch(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(a, b) = concat(dot(a[:p], b[:p]), dot(a[p:], b[p:])) along a batch dimension."""
    mk = Make(view)
    a, b = kids(node)
    lb, _, rb, _ = dot_dims(node)
    for i, (dl, dr) in enumerate(zip(lb, rb)):
        if mk.type(a).shape[dl] > 1:
            (a0, a1), (b0, b1) = _halves(mk, a, dl), _halves(mk, b, dr)
            yield mk.concat([mk.redot(node, a0, b0), mk.redot(node, a1, b1)], i)


@axiom("dot-unit-batch", {"dot"}, {"dot", "reshape"})
def dot_unit_batch(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(a, b) with a batch dimension of size 1 = reshape(dot(a', b')), a' and b' without it:
    a batch of one is a plain matmul (how the tiles of a batched matmul, split along the
    batch, reach a 2-D matmul unit)."""
    mk = Make(view)
    a, b = kids(node)
    dims = dot_dims(node)
    for i, dl in enumerate(dims[0]):
        if mk.type(a).shape[dl] == 1:
            a1, b1, (lb1, lc1, rb1, rc1) = drop_unit_batch(mk, a, b, dims, i)
            yield mk.reshape(mk.dot(a1, b1, node.type.dtype, lc1, rc1, lb1, rb1, base=node), node.type.shape)


def unbatched_dot(mk: Make, node: ENode, a: Arg, b: Arg) -> Term:
    """``node`` over a and b, whose batch dimensions are all of size 1, as a dot without
    them (``dot-unit-batch`` for every batch dimension at once, but for the reshape)."""
    dims = dot_dims(node)
    for i in reversed(range(len(dims[0]))):
        a, b, dims = drop_unit_batch(mk, a, b, dims, i)
    lb, lc, rb, rc = dims
    return mk.dot(a, b, node.type.dtype, lc, rc, lb, rb, base=node)


def drop_unit_batch(mk: Make, a: Arg, b: Arg, dims: tuple, i: int) -> tuple[Arg, Arg, tuple]:
    """a and b without their i-th batch dimension (of size 1), and the dot's dimension numbers without it."""
    lb, lc, rb, rc = dims
    dl, dr = lb[i], rb[i]
    return (_drop_dim(mk, a, dl), _drop_dim(mk, b, dr),
            (_renumber(lb[:i] + lb[i + 1:], dl), _renumber(lc, dl), _renumber(rb[:i] + rb[i + 1:], dr), _renumber(rc, dr)))


def _drop_dim(mk: Make, x: Arg, d: int) -> Arg:
    """x without its unit dimension d."""
    shape = mk.type(x).shape
    return mk.reshape(x, shape[:d] + shape[d + 1:])


def _renumber(dims: Sequence[int], dropped: int) -> tuple[int, ...]:
    return tuple(d - (d > dropped) for d in dims)


def _split_contract(view: View, node: ENode) -> Iterator[Arg]:
    mk = Make(view)
    a, b = kids(node)
    _, lc, _, rc = dot_dims(node)
    for dl, dr in zip(lc, rc):
        if mk.type(a).shape[dl] > 1:
            (a0, a1), (b0, b1) = _halves(mk, a, dl), _halves(mk, b, dr)
            yield mk.op("add", [mk.redot(node, a0, b0), mk.redot(node, a1, b1)])


@axiom("dot-split-contract", {"dot"}, {"dot", "slice", "add"}, expansive=True)
def dot_split_contract(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(a, b) = add(dot(a[.., :p], b[:p]), dot(a[.., p:], b[p:])) for integer results (wrapping sums)."""
    if node.type.dtype.is_int:
        yield from _split_contract(view, node)


@axiom("dot-split-contract-float", {"dot"}, {"dot", "slice", "add"}, exact=False, expansive=True)
def dot_split_contract_float(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(a, b) ≈ add(dot(a[.., :p], b[:p]), dot(a[.., p:], b[p:])) for float results (regrouped, rounded sums)."""
    if node.type.dtype.is_float:
        yield from _split_contract(view, node)


@axiom("reduce-split-kept", {"reduce"}, {"reduce", "slice", "concatenate"}, expansive=True)
def reduce_split_kept(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reduce(x, init) = concat(reduce(x[:p], init), reduce(x[p:], init)) along a kept dimension."""
    if len(node.children) != 2 or reducer(node.attrs["to_apply"]) is None:
        return
    mk = Make(view)
    x, init = kids(node)
    kept = free_dims(mk.type(x).rank, node.attrs["dimensions"])
    for i, d in enumerate(kept):
        if mk.type(x).shape[d] > 1:
            lo, hi = _halves(mk, x, d)
            yield mk.concat([mk.reduce(node, lo, init), mk.reduce(node, hi, init)], i)


def _split_reduced(view: View, node: ENode, combine: str) -> Iterator[Arg]:
    mk = Make(view)
    x, init = kids(node)
    for d in node.attrs["dimensions"]:
        if mk.type(x).shape[d] > 1:
            lo, hi = _halves(mk, x, d)
            yield mk.op(combine, [mk.reduce(node, lo, init), mk.reduce(node, hi, init)])


def _reduce_parts(view: View, node: ENode) -> tuple[str | None, np.ndarray | None]:
    if len(node.children) != 2:
        return None, None
    return reducer_op(node.attrs["to_apply"]), splat(view, node.children[1])


def reduce_splits(op: str | None, init: np.ndarray | None, dt: DType) -> bool:
    """Whether reduce_op(x, init) = op(reduce_op(x[:p], init), reduce_op(x[p:], init)) bit for
    bit: op in max/min/and/or (idempotent, any init), or an integer add from 0."""
    return op in ("maximum", "minimum", "and", "or") or (op == "add" and dt.is_int and is_zero(init))


@axiom("reduce-split-reduced", {"reduce"}, {"reduce", "slice", "add", "maximum", "minimum", "and", "or"},
       expansive=True)
def reduce_split_reduced(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reduce_op(x, i) = op(reduce_op(x[:p], i), reduce_op(x[p:], i)) along a reduced dim (``reduce_splits``)."""
    op, init = _reduce_parts(view, node)
    if reduce_splits(op, init, node.type.dtype):
        yield from _split_reduced(view, node, op)  # type: ignore[arg-type]


@axiom("reduce-split-reduced-float", {"reduce"}, {"reduce", "slice", "add"}, exact=False, expansive=True)
def reduce_split_reduced_float(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reduce_add(x, 0) ≈ add(reduce_add(x[:p], 0), reduce_add(x[p:], 0)) for floats (sum order changes)."""
    op, init = _reduce_parts(view, node)
    if op == "add" and node.type.dtype.is_float and is_zero(init):
        yield from _split_reduced(view, node, "add")


def _unit_reduce(view: View, node: ENode) -> tuple[str | None, np.ndarray | None]:
    """(reducer op, init) of a reduce whose reduced dimensions all have size 1, else (None, None)."""
    op, init = _reduce_parts(view, node)
    if init is None or any(view.type(node.children[0]).shape[d] != 1 for d in node.attrs["dimensions"]):
        return None, None
    return op, init


def _is_identity(op: str | None, init: np.ndarray, dt: DType) -> bool:
    """op(init, x) == x bit for bit, for every x of type dt (NaN included)."""
    if op == "add":
        return is_zero(init, negative=True)  # -0 + x = x; +0 + -0 is +0
    if op == "multiply":
        return float(init) == 1
    if op in ("maximum", "minimum"):
        return (float(init) if dt.is_float else int(init)) == _extreme(dt, top=op == "minimum")
    return False


@axiom("reduce-unit", {"reduce"}, {"reshape"})
def reduce_unit(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reduce_op(x, i) = reshape(x) when every reduced dimension has size 1 and i is op's
    identity (integer or -0 add, 1 multiply, the type's lowest max / highest min)."""
    op, init = _unit_reduce(view, node)
    if op is not None and not node.type.dtype.is_pred and _is_identity(op, init, node.type.dtype):
        yield Make(view).reshape(Class(node.children[0]), node.type.shape)


@axiom("reduce-unit-float", {"reduce"}, {"reshape"}, exact=False)
def reduce_unit_float(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reduce_add(x, +0) ≈ reshape(x) for floats over size-1 reduced dimensions (-0 comes out +0)."""
    op, init = _unit_reduce(view, node)
    if op == "add" and node.type.dtype.is_float and is_zero(init, negative=False):
        yield Make(view).reshape(Class(node.children[0]), node.type.shape)


# ---------------------------------------------------------------- 4. identity matmuls


def _small(*shape: int) -> bool:
    return int(np.prod(shape)) <= MAX_CONSTANT_ELEMENTS


_MATRICES: dict[str, Callable[[tuple[int, ...]], np.ndarray]] = {
    "eye": lambda s: np.eye(s[0], dtype=np.int64),
    "neg_eye": lambda s: -np.eye(s[0], dtype=np.int64),
    "flip": lambda s: np.eye(s[0], dtype=np.int64)[::-1],  # J, the anti-diagonal
    "ones": lambda s: np.ones(s, np.int64),
}


@functools.cache
def matrix(kind: str, shape: tuple[int, ...], dtype: DType) -> Term:
    """A constant the matmul rules build (``_MATRICES``), made once per shape and type: the
    identity rules ask for eye(64) at every tile class."""
    return Make(View({})).constant(_MATRICES[kind](shape), dtype)


def _eye_dot(view: View, c: ClassId, node: ENode, ints: bool) -> Iterator[Arg]:
    t = node.type
    if t.rank == 2 and (t.dtype.is_int if ints else t.dtype.is_float) and _small(t.shape[1], t.shape[1]):
        mk = Make(view)
        yield mk.dot(Class(c), matrix("eye", (t.shape[1],) * 2, t.dtype), t.dtype, (1,), (0,))


@axiom("dot-identity", VALUE_ROOTS, {"dot", "constant"}, expansive=True)
def dot_identity(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """x = dot(x, I) for 2-D integer x."""
    yield from _eye_dot(view, c, node, ints=True)


@axiom("dot-identity-float", VALUE_ROOTS, {"dot", "constant"}, exact=False, expansive=True)
def dot_identity_float(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """x ≈ dot(x, I) for 2-D float x: -0 comes out +0, and inf/NaN spread along the row (inf*0 = NaN)."""
    yield from _eye_dot(view, c, node, ints=False)


@axiom("convert-as-dot", {"convert"}, {"dot", "constant"}, expansive=True)
def convert_as_dot(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """convert(x) = dot(x, I) with a wider integer result, for 2-D integer x (how a
    matmul unit widens or moves data: Act's identity matmul, Fig. 17)."""
    x = view.type(node.children[0])
    t = node.type
    if (x.rank == 2 and x.dtype.is_int and t.dtype.is_int and t.dtype.bits >= x.dtype.bits
            and (t.dtype.is_signed or not x.dtype.is_signed) and _small(x.shape[1], x.shape[1])):
        mk = Make(view)
        eye = matrix("eye", (x.shape[1],) * 2, x.dtype)
        yield mk.dot(Class(node.children[0]), eye, t.dtype, (1,), (0,))


def _reduce_as_dot(view: View, node: ENode, ints: bool) -> Iterator[Arg]:
    op, init = _reduce_parts(view, node)
    dims = node.attrs["dimensions"]
    dt = node.type.dtype
    if op != "add" or len(dims) != 1 or not is_zero(init) or not (dt.is_int if ints else dt.is_float):
        return
    mk = Make(view)
    x = Class(node.children[0])
    shape = mk.type(x).shape
    n = shape[dims[0]]
    if mk.type(x).dtype != dt or not _small(n):
        return
    if len(shape) == 2:  # a matmul with a row or a column of ones: ones[1, m]·x sums the columns
        ones = matrix("ones", (1, n) if dims[0] == 0 else (n, 1), dt)
        yield mk.reshape(mk.dot(ones, x, dt, (1,), (0,)) if dims[0] == 0 else mk.dot(x, ones, dt, (1,), (0,)),
                         node.type.shape)
    else:
        yield mk.dot(x, matrix("ones", (n,), dt), dt, dims, (0,))


@axiom("reduce-as-dot", {"reduce"}, {"dot", "constant"}, expansive=True)
def reduce_as_dot(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reduce_add(x, 0) over one dim d = dot(x, ones[n_d]) contracting d, for integers (a 2-D x:
    reshape(ones[1, m]·x) or reshape(x·ones[n, 1]))."""
    yield from _reduce_as_dot(view, node, ints=True)


@axiom("reduce-as-dot-float", {"reduce"}, {"dot", "constant"}, exact=False, expansive=True)
def reduce_as_dot_float(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reduce_add(x, ±0) over one dim ≈ dot(x, ones) for floats (summation order and accumulator change)."""
    yield from _reduce_as_dot(view, node, ints=False)


def _matrix_dot(view: View, node: ENode, ints: bool, kind: str) -> Iterator[Arg]:
    """x op = dot(x, M) for 2-D x of the right kind, M the n x n matrix of ``kind`` (n = columns)."""
    t = node.type
    if t.rank == 2 and (t.dtype.is_int if ints else t.dtype.is_float) and _small(t.shape[1], t.shape[1]):
        mk = Make(view)
        yield mk.dot(Class(node.children[0]), matrix(kind, (t.shape[1],) * 2, t.dtype), t.dtype, (1,), (0,))


@axiom("negate-as-dot", {"negate"}, {"dot", "constant"}, expansive=True)
def negate_as_dot(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """negate(x) = dot(x, -I) for 2-D integer x (wrapping: -INT_MIN = INT_MIN either way)."""
    yield from _matrix_dot(view, node, True, "neg_eye")


@axiom("negate-as-dot-float", {"negate"}, {"dot", "constant"}, exact=False, expansive=True)
def negate_as_dot_float(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """negate(x) ≈ dot(x, -I) for 2-D float x (zero signs and inf/NaN differ as in dot-identity-float)."""
    yield from _matrix_dot(view, node, False, "neg_eye")


def _reverse_dot(view: View, node: ENode, ints: bool) -> Iterator[Arg]:
    t = node.type
    dims = set(node.attrs["dimensions"])
    if t.rank != 2 or not dims or not (t.dtype.is_int if ints else t.dtype.is_float) or not _small(max(t.shape) ** 2):
        return
    mk = Make(view)
    x: Arg = Class(node.children[0])
    if 0 in dims:  # J_m · x reverses the rows
        x = mk.dot(matrix("flip", (t.shape[0],) * 2, t.dtype), x, t.dtype, (1,), (0,))
    if 1 in dims:  # x · J_n reverses the columns
        x = mk.dot(x, matrix("flip", (t.shape[1],) * 2, t.dtype), t.dtype, (1,), (0,))
    yield x


@axiom("reverse-as-dot", {"reverse"}, {"dot", "constant"}, expansive=True)
def reverse_as_dot(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reverse(x, {1}) = dot(x, J), reverse(x, {0}) = dot(J, x) for 2-D integer x (J anti-diagonal)."""
    yield from _reverse_dot(view, node, ints=True)


@axiom("reverse-as-dot-float", {"reverse"}, {"dot", "constant"}, exact=False, expansive=True)
def reverse_as_dot_float(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reverse(x) ≈ dot with the anti-diagonal J for 2-D float x (zero signs, inf/NaN as in dot-identity-float)."""
    yield from _reverse_dot(view, node, ints=False)


def _byte_lane_flip(cols: int, width: int) -> np.ndarray:
    """The 0/1 matrix P with bytes · P = the bytes of a row of ``cols`` elements of ``width``
    bytes each in reversed element order (each element's own bytes kept in order)."""
    n = cols * width
    p = np.zeros((n, n), np.int64)
    src = np.arange(n)
    dst = (cols - 1 - src // width) * width + src % width
    p[src, dst] = 1
    return p


@axiom("reverse-as-byte-dot", {"reverse"}, {"dot", "constant", "convert", "bitcast-convert", "reshape", "clamp"},
       expansive=True)
def reverse_as_byte_dot(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """reverse(x, {1}) of a 2-D x of any element type (or a vector's reverse, as one row) as its
    bytes through an int8 matmul: bitcast(convert_s8(clamp(-128, dot_s32(bytes(x), P), 127)))
    with P the 0/1 matrix that reverses the elements' byte groups. Each result of the dot is one byte of x, so the s32 dot
    cannot overflow and the clamp and the conversion back to s8 are exact: bits in, the same bits out. This is
    how a target whose only lane permutation is an int8 matmul (Gemmini's array) reverses
    the columns of s32 or f32 values, which reverse-as-dot cannot (their values are not int8).
    A reverse along 0 as well stays a reverse of the result's rows. Expansive in general;
    phase 1 runs it among the cheap rules where no store moves one element (phase1.lane_rules)."""
    t = node.type
    dims = set(node.attrs["dimensions"])
    width = t.dtype.nbytes
    if t.rank not in (1, 2) or t.rank - 1 not in dims or t.dtype.is_pred or not _small((t.shape[-1] * width) ** 2):
        return
    mk = Make(view)
    rows, cols = (1, *t.shape) if t.rank == 1 else t.shape
    x: Arg = Class(node.children[0])
    reshaped = width > 1 or t.rank == 1  # the bytes as rows of cols * width (a vector is one row)
    if t.dtype != s8:
        x = mk.bitcast(x, s8)
    if reshaped:
        x = mk.reshape(x, (rows, cols * width))
    flip = mk.constant(_byte_lane_flip(cols, width), s8)
    bytes_ = mk.dot(x, flip, s32, (1,), (0,))
    # The clamp changes nothing (the values are bytes) and is how a store narrows s32 to int8.
    y: Arg = mk.convert(mk.op("clamp", [mk.scalar(-128, s32), bytes_, mk.scalar(127, s32)]), s8)
    if reshaped:
        y = mk.reshape(y, (*t.shape, width) if width > 1 else t.shape)
    out: Arg = mk.bitcast(y, t.dtype) if t.dtype != s8 else y
    if t.rank == 2 and 0 in dims:
        out = mk.op("reverse", [out], {"dimensions": (0,)})
    yield out


def _broadcast_dot(view: View, node: ENode, ints: bool) -> Iterator[Arg]:
    t = node.type
    v = node.children[0]
    vt = view.type(v)
    dims = tuple(node.attrs["dimensions"])
    if t.rank != 2 or vt.rank != 1 or not (t.dtype.is_int if ints else t.dtype.is_float):
        return
    if vt.shape[0] != t.shape[dims[0]] or not _small(*t.shape):
        return
    mk = Make(view)
    if dims == (0,):  # v[n] -> [n, m]: v as a column times a row of ones
        col = mk.reshape(Class(v), (t.shape[0], 1))
        yield mk.dot(col, matrix("ones", (1, t.shape[1]), t.dtype), t.dtype, (1,), (0,))
    else:  # v[m] -> [n, m]: a column of ones times v as a row
        row = mk.reshape(Class(v), (1, t.shape[1]))
        yield mk.dot(matrix("ones", (t.shape[0], 1), t.dtype), row, t.dtype, (1,), (0,))


@axiom("broadcast-as-dot", {"broadcast"}, {"dot", "constant", "reshape"}, expansive=True)
def broadcast_as_dot(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """broadcast(v[n]) to [n, m] along 0 = dot(reshape(v, [n, 1]), ones[1, m]) (and along 1), integers."""
    yield from _broadcast_dot(view, node, ints=True)


@axiom("broadcast-as-dot-float", {"broadcast"}, {"dot", "constant", "reshape"}, exact=False, expansive=True)
def broadcast_as_dot_float(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """broadcast(v) ≈ dot(v as a column, ones) for floats: the matmul may add a +0 (BLAS), turning -0 into +0."""
    yield from _broadcast_dot(view, node, ints=False)


def _broadcast_sums_dot(view: View, node: ENode, ints: bool) -> Iterator[Arg]:
    t = node.type
    dims = tuple(node.attrs["dimensions"])
    if t.rank != 2 or len(dims) != 1 or not (t.dtype.is_int if ints else t.dtype.is_float):
        return
    d, dt = dims[0], t.dtype
    for r in view.find(node.children[0], "reduce"):
        op, init = _reduce_parts(view, r)
        (rd, *more), xt = r.attrs["dimensions"], view.type(r.children[0])
        if op != "add" or more or not is_zero(init) or xt.rank != 2 or xt.dtype != dt:
            continue
        k, mk, x = xt.shape[rd], Make(view), Class(r.children[0])
        if not _small(k, t.shape[1 - d]):
            continue
        if d == 0:  # out[i, j] = sum_k x(i, k): x . ones[k, n]
            yield mk.dot(x, matrix("ones", (k, t.shape[1]), dt), dt, (rd,), (0,))
        else:  # out[i, j] = sum_k x(k, j): ones[m, k] . x
            yield mk.dot(matrix("ones", (t.shape[0], k), dt), x, dt, (1,), (rd,))


@axiom("broadcast-sums-dot", {"broadcast"}, {"dot", "constant"}, watch_operands=1)
def broadcast_sums_dot(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """broadcast(reduce_add(x, 0) over one dim of a 2-D x) to 2-D = the matmul of x with a
    matrix of ones (its sums repeated along the new dimension), for integers: row sums
    broadcast along the columns are x . ones[k, n], column sums along the rows ones[m, k] . x."""
    yield from _broadcast_sums_dot(view, node, ints=True)


@axiom("broadcast-sums-dot-float", {"broadcast"}, {"dot", "constant"}, exact=False, watch_operands=1)
def broadcast_sums_dot_float(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """broadcast-sums-dot for floats (summation order and accumulator change, as in reduce-as-dot-float)."""
    yield from _broadcast_sums_dot(view, node, ints=False)


# ---------------------------------------------------------------- 5. max / min / clamp


@axiom("clamp-as-minmax", {"clamp"}, {"minimum", "maximum", "broadcast"})
def clamp_as_minmax(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """clamp(lo, x, hi) = minimum(maximum(x, lo), hi) (scalar bounds broadcast)."""
    mk = Make(view)
    lo, x, hi = kids(node)
    shape = node.type.shape

    def full(b: Class) -> Arg:
        return mk.broadcast(b, shape, ()) if mk.type(b).rank == 0 and len(shape) else b

    yield mk.op("minimum", [mk.op("maximum", [x, full(lo)]), full(hi)])


def _commutative(op: str) -> Rule:
    def apply(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
        a, b = node.children
        if a != b:
            yield Term(node.op, node.type, (Class(b), Class(a)), node.attrs)

    apply.__doc__ = f"{op}(x, y) = {op}(y, x)."
    return axiom(f"{op}-comm", {op}, {op})(apply)


for _op in COMMUTATIVE:
    _commutative(_op)


def _idempotent(view: View, node: ENode) -> Iterator[Arg]:
    a, b = node.children
    if a == b:
        yield Class(a)


@axiom("maximum-idem", {"maximum"}, ())
def maximum_idem(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """maximum(x, x) = x."""
    yield from _idempotent(view, node)


@axiom("minimum-idem", {"minimum"}, ())
def minimum_idem(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """minimum(x, x) = x."""
    yield from _idempotent(view, node)


def _absorb(view: View, node: ENode) -> Iterator[Arg]:
    a, y = node.children
    for inner in view.find(a, node.op):
        if y in inner.children:
            yield Class(a)
            return


@axiom("maximum-absorb", {"maximum"}, (), watch_operands=1)
def maximum_absorb(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """maximum(maximum(x, y), y) = maximum(x, y)."""
    yield from _absorb(view, node)


@axiom("minimum-absorb", {"minimum"}, (), watch_operands=1)
def minimum_absorb(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """minimum(minimum(x, y), y) = minimum(x, y)."""
    yield from _absorb(view, node)


def _extreme(dt: DType, top: bool) -> Any:
    if dt.is_float:
        return np.inf if top else -np.inf
    info = np.iinfo(dt.np)
    return info.max if top else info.min


def _scalar_operand(view: View, node: ENode) -> Iterator[tuple[Class, Class]]:
    """(x, s) for op(x, broadcast(s)) and op(broadcast(s), x), s a scalar."""
    for k, other in ((0, 1), (1, 0)):
        for b in view.find(node.children[k], "broadcast"):
            if view.type(b.children[0]).rank == 0:
                yield Class(node.children[other]), Class(b.children[0])


@axiom("maximum-as-clamp", {"maximum"}, {"clamp", "constant"}, watch_operands=1)
def maximum_as_clamp(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """maximum(x, broadcast(s)) = clamp(s, x, +inf or INT_MAX) (relu: s = 0)."""
    dt = node.type.dtype
    if dt.is_pred:
        return
    mk = Make(view)
    for x, s in _scalar_operand(view, node):
        yield mk.op("clamp", [s, x, mk.scalar(_extreme(dt, True), dt)])


@axiom("minimum-as-clamp", {"minimum"}, {"clamp", "constant"}, watch_operands=1)
def minimum_as_clamp(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """minimum(x, broadcast(s)) = clamp(-inf or INT_MIN, x, s)."""
    dt = node.type.dtype
    if dt.is_pred:
        return
    mk = Make(view)
    for x, s in _scalar_operand(view, node):
        yield mk.op("clamp", [mk.scalar(_extreme(dt, False), dt), x, s])


@axiom("clamp-clamp", {"clamp"}, {"clamp", "constant"}, watch_operands=1)
def clamp_clamp(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """clamp(lo2, clamp(lo1, x, hi1), hi2) = clamp(L, x, H) with L = max(lo1, lo2),
    H = min(hi1, hi2), for constant bounds with L <= H (jnp.clip's max/min chain
    becomes one clamp); float bounds must not be NaN or zeros of opposite sign."""
    lo2, y, hi2 = node.children
    outer = [splat(view, b) for b in (lo2, hi2)]
    if any(v is None or (v.dtype.kind == "f" and np.isnan(v)) for v in outer):
        return
    mk = Make(view)
    dt = node.type.dtype
    for inner in view.find(y, "clamp"):
        lo1, x, hi1 = inner.children
        bounds = [splat(view, b) for b in (lo1, hi1)]
        if any(v is None or (v.dtype.kind == "f" and np.isnan(v)) for v in bounds):
            continue
        lo, hi = max(bounds[0], outer[0]), min(bounds[1], outer[1])
        if dt.is_float and any(a == 0 and b == 0 and np.signbit(a) != np.signbit(b)
                               for a, b in (*zip(bounds, outer), (lo, hi))):
            continue  # the sign of a zero result would depend on the order
        if lo <= hi and mk.type(Class(lo2)).rank == 0 and mk.type(Class(hi2)).rank == 0:
            yield mk.op("clamp", [mk.scalar(lo, dt), Class(x), mk.scalar(hi, dt)])


def _int_of_width(bits: int, signed: bool) -> DType | None:
    return next((d for d in DTYPES.values() if d.is_int and d.is_signed == signed and d.bits == bits), None)


@axiom("convert-clamped-float-via-int", {"convert"}, {"convert", "clamp", "constant"}, watch_operands=1)
def convert_clamped_float_via_int(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """convert(clamp(lo, x, hi), D) for float x and integer D = convert(clamp(L, convert(x, W), H), D),
    W the signed integer type as wide as x's, L and H the bounds converted to W: float->int
    conversion truncates and saturates, which is monotone, so it commutes with the clamp; D's
    saturation never triggers when [L, H] lies in D, and then W->D keeps the value. NaN
    converts to 0 on both sides when L <= 0 <= H (requantizing to int8/uint8)."""
    dt = node.type.dtype
    y = node.children[0]
    if not dt.is_int:
        return
    mk = Make(view)
    for cl in view.find(y, "clamp"):
        lo, x, hi = cl.children
        ft = view.type(x).dtype
        w = _int_of_width(ft.bits, True) if ft.is_float else None
        bounds = [splat(view, b) for b in (lo, hi)]
        if w is None or any(v is None or np.isnan(v) for v in bounds) or not bounds[0] <= bounds[1]:
            continue
        info, wi = np.iinfo(dt.np), np.iinfo(w.np)
        lo_w, hi_w = (int(np.clip(np.trunc(np.float64(v)), wi.min, wi.max)) for v in bounds)
        if info.min <= lo_w <= 0 <= hi_w <= info.max:
            inner = mk.op("clamp", [mk.scalar(lo_w, w), mk.convert(Class(x), w), mk.scalar(hi_w, w)])
            yield mk.convert(inner, dt)


def _nonnegative(view: View, c: ClassId) -> bool:
    """Whether every element of integer class ``c`` is known to be >= 0: a maximum with a
    scalar >= 0, a clamp from a bound >= 0, or such a constant."""
    v = splat(view, c)
    if v is not None:
        return v >= 0
    if any(splat(view, n.children[0]) is not None and splat(view, n.children[0]) >= 0
           for n in view.find(c, "clamp")):
        return True
    for n in view.find(c, "maximum"):
        for _, s in _scalar_operand(view, n):
            k = splat(view, s.id)
            if k is not None and k >= 0:
                return True
    return False


@axiom("minimum-nonnegative-unsigned", {"minimum"}, {"minimum", "bitcast-convert", "broadcast", "constant"},
       watch_operands=2)
def minimum_nonnegative_unsigned(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """minimum(a, broadcast(s)) over signed integers with a >= 0 and s >= 0 = the same
    minimum over the unsigned type of that width, bitcast back (both orders agree on
    non-negative values; an unsigned saturating narrowing is such a minimum)."""
    dt = node.type.dtype
    u = _int_of_width(dt.bits, False) if dt.is_int and dt.is_signed else None
    if u is None:
        return
    mk = Make(view)
    for a, s in _scalar_operand(view, node):
        k = splat(view, s.id)
        if k is not None and k >= 0 and _nonnegative(view, a.id):
            limit = mk.broadcast(mk.scalar(int(k), u), node.type.shape, ())
            yield mk.bitcast(mk.op("minimum", [mk.bitcast(a, u), limit]), dt)


@axiom("convert-int-of-bitcast", {"convert"}, {"convert"}, watch_operands=1)
def convert_int_of_bitcast(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """convert(bitcast(z, S), D) = convert(z, D) for integers z and S of one width and D no
    wider: an integer conversion that narrows or keeps the width keeps the low bits."""
    dt = node.type.dtype
    for b in view.find(node.children[0], "bitcast-convert"):
        z = view.type(b.children[0]).dtype
        if dt.is_int and z.is_int and z.bits == b.type.dtype.bits and b.type.dtype.is_int and dt.bits <= z.bits:
            yield Make(view).convert(Class(b.children[0]), dt)


# ---------------------------------------------------------------- 6. elementwise algebra


@axiom("subtract-as-add-negate", {"subtract"}, {"add", "negate"})
def subtract_as_add_negate(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """subtract(x, y) = add(x, negate(y)) (wrapping ints; IEEE: x - y is x + (-y), zeros included)."""
    mk = Make(view)
    x, y = kids(node)
    yield mk.op("add", [x, mk.op("negate", [y])])


@axiom("negate-negate", {"negate"}, (), watch_operands=1)
def negate_negate(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """negate(negate(x)) = x."""
    for inner in view.find(node.children[0], "negate"):
        yield Class(inner.children[0])


def _with_unit(view: View, node: ENode, test) -> Iterator[Arg]:
    """x for op(x, u) and op(u, x) where u's elements all pass ``test``."""
    for k, other in ((1, 0), (0, 1)):
        if test(splat(view, node.children[k])):
            yield Class(node.children[other])


@axiom("add-zero", {"add"}, (), watch_operands=1)
def add_zero(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """add(x, 0) = x for integers, and for floats when the zero is -0 (x + -0 = x, zeros included)."""
    yield from _with_unit(view, node, lambda v: is_zero(v, negative=True))


@axiom("add-zero-float", {"add"}, (), exact=False, watch_operands=1)
def add_zero_float(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """add(x, +0) ≈ x for floats: exact except x = -0, where -0 + +0 = +0."""
    yield from _with_unit(view, node, lambda v: is_zero(v, negative=False) and v.dtype.kind not in "biu")


def _all_zero(view: View, c: ClassId) -> bool:
    """Whether class ``c`` is zeros: a zero splat, or a slice of a constant that is zero there."""
    if is_zero(splat(view, c)):
        return True
    for n in view.find(c, "slice"):
        region = tuple(slice(d.start, d.limit, d.stride) for d in n.attrs["slice"])
        if any(not k.attrs["literal"].array[region].any() for k in view.find(n.children[0], "constant")):
            return True
    return False


@axiom("dot-zero", {"dot"}, {"broadcast", "constant"}, watch_operands=1)
def dot_zero(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(x, 0) = dot(0, x) = 0 for integers: the zero blocks of a 0/1 matrix an instruction-
    tiled dot reads (reverse-as-byte-dot's) drop out of its sum through add-zero."""
    t = node.type
    if t.dtype.is_int and any(_all_zero(view, k) for k in node.children):
        mk = Make(view)
        yield mk.broadcast(mk.scalar(0, t.dtype), t.shape, ())


@axiom("multiply-one", {"multiply"}, (), watch_operands=1)
def multiply_one(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """multiply(x, 1) = x (x*1 is exact in IEEE, -0 and inf included)."""
    yield from _with_unit(view, node, lambda v: int_value(v) == 1)


@axiom("multiply-negone", {"multiply"}, {"negate"}, watch_operands=1)
def multiply_negone(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """multiply(x, -1) = negate(x) for signed ints (wrapping) and floats."""
    if node.type.dtype.is_signed:
        mk = Make(view)
        for x in _with_unit(view, node, lambda v: int_value(v) == -1):
            yield mk.op("negate", [x])


@axiom("negate-as-multiply", {"negate"}, {"multiply", "broadcast", "constant"})
def negate_as_multiply(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """negate(x) = multiply(x, broadcast(-1)) for signed ints (wrapping) and floats (a sign flip in IEEE);
    targets with a vector multiply but no negate run it with a constant operand. One rewrite
    per negate, so among the cheap rules: each instruction-sized tile of a negate needs it."""
    t = node.type
    if t.dtype.is_signed:
        mk = Make(view)
        yield mk.op("multiply", [Class(node.children[0]), mk.broadcast(mk.scalar(-1, t.dtype), t.shape, ())])


def _pow2(v: np.ndarray | None, bits: int) -> int | None:
    k = int_value(v)
    if k is None or k < 2 or k & (k - 1) or k.bit_length() - 1 >= bits:
        return None
    return k.bit_length() - 1


def _shift_by(view: View, node: ENode, opcode: str, divisor_only: bool) -> Iterator[Arg]:
    mk = Make(view)
    t = node.type
    positions = ((0, 1),) if divisor_only else ((0, 1), (1, 0))
    for xi, ki in positions:
        k = _pow2(splat(view, node.children[ki]), t.dtype.bits)
        if k is not None and _small(*t.shape):
            yield mk.op(opcode, [Class(node.children[xi]), mk.constant(np.full(t.shape, k, np.int64), t.dtype)])


@axiom("multiply-pow2-shift", {"multiply"}, {"shift-left", "constant"}, watch_operands=1)
def multiply_pow2_shift(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """multiply(x, 2^k) = shift-left(x, k) for integers (both wrap modulo 2^bits)."""
    if node.type.dtype.is_int:
        yield from _shift_by(view, node, "shift-left", divisor_only=False)


@axiom("divide-pow2-shift", {"divide"}, {"shift-right-logical", "constant"}, watch_operands=1)
def divide_pow2_shift(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """divide(x, 2^k) = shift-right-logical(x, k) for unsigned x (signed division rounds toward 0, shifts down)."""
    if node.type.dtype.kind == "uint":
        yield from _shift_by(view, node, "shift-right-logical", divisor_only=True)


# ---------------------------------------------------------------- 7. dot algebra


def _outer_product(view: View, node: ENode) -> Iterator[Arg]:
    mk = Make(view)
    a, b = kids(node)
    lb, lc, rb, rc = dot_dims(node)
    ta, tb = mk.type(a), mk.type(b)
    if lb or rb or any(ta.shape[d] != 1 for d in lc):
        return
    out = node.type
    la = [ta.shape[d] for d in free_dims(ta.rank, lc)]
    lr = [tb.shape[d] for d in free_dims(tb.rank, rc)]
    sides = []
    for x, shape, dims in ((a, la, range(len(la))), (b, lr, range(len(la), out.rank))):
        x = mk.reshape(x, shape)  # only size-1 (contracted) dimensions go: the order stays
        if mk.type(x).dtype != out.dtype:
            x = mk.convert(x, out.dtype)
        sides.append(mk.broadcast(x, out.shape, tuple(dims)))
    yield mk.op("multiply", sides)


@axiom("dot-outer-product", {"dot"}, {"multiply", "broadcast", "reshape", "convert"})
def dot_outer_product(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(a, b) with every contracted dimension of size 1 (no batch) = multiply(broadcast(a),
    broadcast(b)): an outer product, one product per element (integers: exact, wrapping)."""
    if node.type.dtype.is_int:
        yield from _outer_product(view, node)


@axiom("dot-outer-product-float", {"dot"}, {"multiply", "broadcast", "reshape", "convert"}, exact=False)
def dot_outer_product_float(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(a, b) ≈ multiply(broadcast(a), broadcast(b)) for a float outer product (a sum of
    one product: equal but for the sign of a zero product)."""
    if node.type.dtype.is_float:
        yield from _outer_product(view, node)


@axiom("dot-rhs-transpose", {"dot"}, {"dot", "transpose"})
def dot_rhs_transpose(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(a, b) contracting b's dim 1 (a·bᵀ) = dot(a, transpose(b)) contracting dim 0, b 2-D."""
    mk = Make(view)
    a, b = kids(node)
    lb, lc, rb, rc = dot_dims(node)
    if not lb and rc == (1,) and mk.type(b).rank == 2:
        yield mk.dot(a, mk.transpose(b, (1, 0)), node.type.dtype, lc, (0,), base=node)


@axiom("dot-lhs-transpose", {"dot"}, {"dot", "transpose"})
def dot_lhs_transpose(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(a, b) contracting a's dim 0 (aᵀ·b) = dot(transpose(a), b) contracting dim 1, a 2-D."""
    mk = Make(view)
    a, b = kids(node)
    lb, lc, rb, rc = dot_dims(node)
    if not lb and lc == (0,) and mk.type(a).rank == 2:
        yield mk.dot(mk.transpose(a, (1, 0)), b, node.type.dtype, (1,), rc, base=node)


def _folded(view: View, t: ENode, batch: Sequence[int], contract: Sequence[int]):
    """Dimension numbers against transpose t's operand, if its free dims stay in order."""
    perm = t.attrs["dimensions"]
    free = [perm[j] for j in free_dims(len(perm), batch, contract)]
    if free != sorted(free):
        return None
    return tuple(perm[j] for j in batch), tuple(perm[j] for j in contract)


@axiom("dot-fold-transpose-rhs", {"dot"}, {"dot"}, watch_operands=1)
def dot_fold_transpose_rhs(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(a, transpose(b, p)) = dot(a, b) with b's dimension numbers mapped through p (free dims kept in order)."""
    mk = Make(view)
    lb, lc, rb, rc = dot_dims(node)
    for t in view.find(node.children[1], "transpose"):
        dims = _folded(view, t, rb, rc)
        if dims is not None:
            yield mk.dot(Class(node.children[0]), Class(t.children[0]), node.type.dtype, lc, dims[1], lb, dims[0],
                         base=node)


@axiom("dot-fold-transpose-lhs", {"dot"}, {"dot"}, watch_operands=1)
def dot_fold_transpose_lhs(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(transpose(a, p), b) = dot(a, b) with a's dimension numbers mapped through p (free dims kept in order)."""
    mk = Make(view)
    lb, lc, rb, rc = dot_dims(node)
    for t in view.find(node.children[0], "transpose"):
        dims = _folded(view, t, lb, lc)
        if dims is not None:
            yield mk.dot(Class(t.children[0]), Class(node.children[1]), node.type.dtype, dims[1], rc, dims[0], rb,
                         base=node)


@axiom("dot-convert-operands-int", {"dot"}, {"dot", "convert"})
def dot_convert_operands_int(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(a, b) -> T = dot(convert(a, T), convert(b, T)) -> T for integer T and integer/pred operands."""
    mk = Make(view)
    dt = node.type.dtype
    a, b = kids(node)
    ta, tb = mk.type(a).dtype, mk.type(b).dtype
    if dt.is_int and all(t.is_int or t.is_pred for t in (ta, tb)) and (ta != dt or tb != dt):
        yield mk.redot(node, mk.convert(a, dt), mk.convert(b, dt))


@axiom("dot-convert-operands-float", {"dot"}, {"dot", "convert"})
def dot_convert_operands_float(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(a, b) -> T = dot(convert(a, f32), convert(b, f32)) -> T for bf16/f16/small-int operands and T <= f32
    (the dot accumulates in f32 either way; the conversions are exact)."""
    mk = Make(view)
    dt = node.type.dtype
    a, b = kids(node)
    types = (mk.type(a).dtype, mk.type(b).dtype)
    if dt.is_float and dt.bits <= 32 and all(holds(t, f32) for t in types) and any(t != f32 for t in types):
        yield mk.redot(node, mk.convert(a, f32), mk.convert(b, f32))


@axiom("dot-widen-result", {"dot"}, {"dot", "convert"})
def dot_widen_result(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """dot(a, b) -> bf16/f16 = convert(dot(a, b) -> f32); dot -> s8/s16/u8/u16 = convert(dot -> s32/u32)."""
    mk = Make(view)
    dt = node.type.dtype
    a, b = kids(node)
    types = (mk.type(a).dtype, mk.type(b).dtype)
    if dt.is_float and dt.bits < 32 and all(t.bits <= 32 or not t.is_float for t in types):
        yield mk.convert(mk.redot(node, a, b, f32), dt)
    elif dt.is_int and dt.bits < 32 and all(t.is_int or t.is_pred for t in types):
        yield mk.convert(mk.redot(node, a, b, s32 if dt.is_signed else u32), dt)


@axiom("convert-int-truncate", {"convert"}, {"convert", "and", "minimum", "bitcast-convert", "broadcast", "constant"},
       needs={"and"})
def convert_int_truncate(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """convert(x, uN) = convert(minimum(bitcast(and(x, 2^N - 1), u32), 2^N - 1), uN) for s32
    x and N of 8 or 16 bits, and convert(x, sN) = bitcast(that, sN): XLA's integer
    narrowing keeps the low bits, which the mask leaves in range of an unsigned
    saturating narrowing (AMX's vpmovusdb), the one a vector ISA has."""
    if view.type(node.children[0]).dtype == s32:
        yield from _truncated(Make(view), Class(node.children[0]), node.type.dtype)


def _truncated(mk: Make, x: Arg, dt: DType) -> Iterator[Arg]:
    """convert(x, dt) of an s32 ``x`` as convert-int-truncate writes it (nothing for other dt)."""
    if not (dt.is_int and dt.bits in (8, 16)):
        return
    shape = mk.type(x).shape
    top = 2 ** dt.bits - 1
    masked = mk.op("and", [x, mk.broadcast(mk.scalar(top, s32), shape, ())])
    low = mk.op("minimum", [mk.bitcast(masked, u32), mk.broadcast(mk.scalar(top, u32), shape, ())])
    unsigned = DTYPES[f"u{dt.bits}"]
    yield mk.convert(low, unsigned) if dt == unsigned else mk.bitcast(mk.convert(low, unsigned), dt)


# Element-wise operators a narrow type computes as its wider type does (``elementwise-widen``)
WIDENED = frozenset({"add", "subtract", "multiply", "negate", "maximum", "minimum"})


@axiom("elementwise-widen", WIDENED, WIDENED | {"convert"}, needs={"and"})
def elementwise_widen(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """op(a, b) in s8/u8/s16/u16 = convert(op(convert(a), convert(b)) in s32), and in
    bf16/f16 the same through f32, for add, subtract, multiply, negate, maximum, minimum.
    Integers: the low bits of a wrapping sum, difference, product or negation come from
    the operands' low bits, and a maximum or minimum keeps its operands' values. Floats:
    each is exact in f32 and rounded once to the narrow type, as the reference computes
    it; f32 has more than twice bf16's and f16's precision plus two bits, so rounding the
    f32 result again gives the correctly rounded narrow result (the double rounding is
    innocuous). How XLA runs bf16 arithmetic on CPUs, and how a target without narrow
    arithmetic (AMX's AVX-512 side: none on bytes or bf16) computes it."""
    dt = node.type.dtype
    wide = f32 if dt.is_float else s32
    if dt.bits >= 32 or (dt.is_float and dt.bits != 16) or not (dt.is_float or dt.is_int):
        return
    mk = Make(view)
    args = [mk.convert(a, wide) for a in kids(node)]
    widened = mk.op(node.op, args, dict(node.attrs), TensorType(wide, node.type.shape))
    yield mk.convert(widened, dt)
    yield from _truncated(mk, widened, dt)


@axiom("transpose-dot-swap", {"transpose"}, {"dot"}, watch_operands=1)
def transpose_dot_swap(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """transpose(dot(a, b)) = dot(b, a) for 2-D results (one free dim per operand)."""
    if node.attrs["dimensions"] != (1, 0):
        return
    mk = Make(view)
    for d in view.find(node.children[0], "dot"):
        a, b = kids(d)
        lb, lc, rb, rc = dot_dims(d)
        if not lb and len(free_dims(mk.type(a).rank, lc)) == 1 and len(free_dims(mk.type(b).rank, rc)) == 1:
            yield mk.dot(b, a, d.type.dtype, rc, lc, base=d)


# ---------------------------------------------------------------- 8. copies


@axiom("copy-intro", {ANY}, {"copy"})
def copy_intro(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """x = copy(x) (a move between buffers; the new node joins x's own class)."""
    if node.type.rank > 0:
        yield Term("copy", node.type, (Class(c),))


@axiom("copy-elim", {"copy"}, ())
def copy_elim(view: View, c: ClassId, node: ENode) -> Iterator[Arg]:
    """copy(x) = x."""
    yield Class(node.children[0])


# the layout axioms (strided windows and stores) live in their own module and register here
importlib.import_module(".layout_axioms", __package__)
