"""Result types of HLO instructions, following XLA's ShapeInference rules.

``infer_type`` raises ``ShapeError`` (a ValueError) with a plain message; the
HLO parser adds the source location. Layouts are ignored: results carry none.

Ops whose result cannot be computed from operands alone read ``declared`` (the
type written in the text): the element type of convert, bitcast-convert, dot
and convolution (XLA's preferred element type), and the shape of broadcast,
reshape, iota, parameter and constant.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .attrs import ConvDimLabels, PadDim, SliceDim, Window, WindowDim
from .dtypes import DType, pred
from .graph import Computation
from .ops import (
    BINARY_OPS, COMPARISON_DIRECTIONS, FLOAT_ONLY_BINARY, FLOAT_ONLY_UNARY, INT_ONLY_BINARY,
    INT_ONLY_UNARY, LOGICAL_OPS, UNARY_OPS,
)
from .types import TensorType, TupleType, Type


class ShapeError(ValueError):
    """An ill-typed instruction: wrong operand types, counts or attributes."""


# ---------------------------------------------------------------- operand counts

_FIXED_ARITY = {
    **{op: 1 for op in UNARY_OPS},
    **{op: 2 for op in BINARY_OPS},
    "compare": 2, "select": 3, "clamp": 3, "convert": 1, "bitcast-convert": 1, "broadcast": 1,
    "reshape": 1, "transpose": 1, "slice": 1, "reverse": 1, "pad": 2, "dot": 2, "convolution": 2,
    "get-tuple-element": 1, "iota": 0, "parameter": 0, "constant": 0,
}
_MIN_ARITY = {"dynamic-slice": 1, "dynamic-update-slice": 2, "concatenate": 1, "reduce": 2, "reduce-window": 2}


def _plural(n: int) -> str:
    return f"{n} operand" + ("" if n == 1 else "s")


def check_operand_count(opcode: str, count: int) -> None:
    if opcode in _FIXED_ARITY:
        if count != _FIXED_ARITY[opcode]:
            raise ShapeError(f"'{opcode}' takes {_plural(_FIXED_ARITY[opcode])}, got {count}")
    elif opcode in _MIN_ARITY and count < _MIN_ARITY[opcode]:
        raise ShapeError(f"'{opcode}' takes at least {_plural(_MIN_ARITY[opcode])}, got {count}")
    if opcode in ("reduce", "reduce-window") and count % 2:
        raise ShapeError(f"'{opcode}' takes an even number of operands (arrays, then as many init values), got {count}")


# ---------------------------------------------------------------- helpers


@dataclass(frozen=True)
class _Ctx:
    opcode: str
    operands: tuple[Type, ...]
    attrs: Mapping[str, Any]
    computations: Mapping[str, Computation]
    declared: Type | None

    def attr(self, key: str) -> Any:
        if key not in self.attrs:
            raise ShapeError(f"'{self.opcode}' needs attribute '{key}'")
        return self.attrs[key]

    def array(self, i: int, what: str = "") -> TensorType:
        t = self.operands[i]
        if not isinstance(t, TensorType):
            raise ShapeError(f"operand {i} of '{self.opcode}'{what} must be an array, got tuple {t}")
        return t

    def declared_array(self) -> TensorType:
        if not isinstance(self.declared, TensorType):
            what = "no declared type" if self.declared is None else f"tuple type {self.declared}"
            raise ShapeError(f"'{self.opcode}' needs a declared array result type, got {what}")
        return self.declared

    def computation(self) -> Computation:
        name = self.attr("to_apply")
        if name not in self.computations:
            raise ShapeError(f"unknown computation '{name}'")
        return self.computations[name]


def _arr(dtype: DType, shape: Sequence[Any]) -> TensorType:
    return TensorType(dtype, tuple(shape))


def _scalar(t: Type) -> bool:
    return isinstance(t, TensorType) and t.rank == 0


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _dims(ctx: _Ctx, key: str, rank: int, *, unique: bool = True) -> tuple[int, ...]:
    dims = tuple(ctx.attr(key))
    for d in dims:
        if not _is_int(d) or not 0 <= d < rank:
            raise ShapeError(f"{key} of '{ctx.opcode}' has dimension {d}, out of range for rank {rank}")
    if unique and len(set(dims)) != len(dims):
        raise ShapeError(f"{key} of '{ctx.opcode}' repeats a dimension: {{{','.join(map(str, dims))}}}")
    return dims


def _same_type(a: Type, b: Type) -> bool:
    return a.same_shape_dtype(b)


def _no_layout(t: Type) -> Type:
    if isinstance(t, TensorType):
        return TensorType(t.dtype, t.shape)
    return TupleType(tuple(_no_layout(e) for e in t.elements))


# ---------------------------------------------------------------- elementwise


def _check_elem_dtype(ctx: _Ctx, dt: DType) -> None:
    op = ctx.opcode
    if (op in FLOAT_ONLY_UNARY or op in FLOAT_ONLY_BINARY) and not dt.is_float:
        raise ShapeError(f"'{op}' needs a floating-point operand, got {dt}")
    if (op in INT_ONLY_UNARY or op in INT_ONLY_BINARY) and not dt.is_int:
        raise ShapeError(f"'{op}' needs an integer operand, got {dt}")
    if op in LOGICAL_OPS and not (dt.is_int or dt.is_pred):
        raise ShapeError(f"'{op}' needs a pred or integer operand, got {dt}")


def _unary(ctx: _Ctx) -> Type:
    x = ctx.array(0)
    _check_elem_dtype(ctx, x.dtype)
    return _arr(pred if ctx.opcode == "is-finite" else x.dtype, x.shape)


def _binary(ctx: _Ctx) -> Type:
    a, b = ctx.array(0), ctx.array(1)
    if not a.same_shape_dtype(b):
        raise ShapeError(f"operands of '{ctx.opcode}' must have the same type, got {_no_layout(a)} and {_no_layout(b)}")
    _check_elem_dtype(ctx, a.dtype)
    return _arr(a.dtype, a.shape)


def _compare(ctx: _Ctx) -> Type:
    a, b = ctx.array(0), ctx.array(1)
    if not a.same_shape_dtype(b):
        raise ShapeError(f"operands of 'compare' must have the same type, got {_no_layout(a)} and {_no_layout(b)}")
    if ctx.attr("direction") not in COMPARISON_DIRECTIONS:
        raise ShapeError(f"unknown comparison direction '{ctx.attrs['direction']}'")
    return _arr(pred, a.shape)


def _select(ctx: _Ctx) -> Type:
    p, t, f = ctx.array(0), ctx.array(1), ctx.array(2)
    if not p.dtype.is_pred:
        raise ShapeError(f"the predicate of 'select' must be pred, got {p.dtype}")
    if not t.same_shape_dtype(f):
        raise ShapeError(f"'select' branches must have the same type, got {_no_layout(t)} and {_no_layout(f)}")
    if p.shape != t.shape:
        raise ShapeError(f"the predicate of 'select' must have the branches' shape {list(t.shape)}, "
                         f"got {list(p.shape)}")
    return _arr(t.dtype, t.shape)


def _clamp(ctx: _Ctx) -> Type:
    lo, x, hi = ctx.array(0), ctx.array(1), ctx.array(2)
    for bound in (lo, hi):
        if bound.dtype != x.dtype or (bound.shape != x.shape and bound.rank != 0):
            raise ShapeError(f"'clamp' bounds must be scalars or have the operand's type {_no_layout(x)}, "
                             f"got {_no_layout(bound)}")
    return _arr(x.dtype, x.shape)


def _convert(ctx: _Ctx) -> Type:
    return _arr(ctx.declared_array().dtype, ctx.array(0).shape)


def _bitcast_convert(ctx: _Ctx) -> Type:
    x, out = ctx.array(0), ctx.declared_array().dtype
    ib, ob = x.dtype.bits, out.bits
    if ib == ob:
        return _arr(out, x.shape)
    if ib > ob:
        return _arr(out, x.shape + (ib // ob,))
    ratio = ob // ib
    if not x.shape or x.shape[-1] != ratio:
        raise ShapeError(
            f"bitcast-convert from {x.dtype} to {out} needs a last dimension of size {ratio}, got {_no_layout(x)}")
    return _arr(out, x.shape[:-1])


# ---------------------------------------------------------------- shape ops


def _broadcast(ctx: _Ctx) -> Type:
    x, out = ctx.array(0), ctx.declared_array()
    dims = _dims(ctx, "dimensions", out.rank)
    if len(dims) != x.rank:
        raise ShapeError(f"'broadcast' dimensions must name one output dimension per operand dimension "
                         f"({x.rank}), got {len(dims)}")
    if any(b <= a for a, b in zip(dims, dims[1:])):
        raise ShapeError(f"'broadcast' dimensions must be increasing, got {{{','.join(map(str, dims))}}}")
    for i, d in enumerate(dims):
        if x.shape[i] != 1 and x.shape[i] != out.shape[d]:
            raise ShapeError(f"'broadcast' operand dimension {i} (size {x.shape[i]}) does not match "
                             f"output dimension {d} (size {out.shape[d]})")
    return _arr(x.dtype, out.shape)


def _reshape(ctx: _Ctx) -> Type:
    x, out = ctx.array(0), ctx.declared_array()
    if math.prod(x.shape) != math.prod(out.shape):
        raise ShapeError(f"'reshape' cannot change the element count: {_no_layout(x)} has {math.prod(x.shape)}, "
                         f"{list(out.shape)} has {math.prod(out.shape)}")
    return _arr(x.dtype, out.shape)


def _transpose(ctx: _Ctx) -> Type:
    x = ctx.array(0)
    perm = _dims(ctx, "dimensions", x.rank)
    if len(perm) != x.rank:
        raise ShapeError(f"'transpose' dimensions must be a permutation of {x.rank} dimensions, "
                         f"got {{{','.join(map(str, perm))}}}")
    return _arr(x.dtype, [x.shape[d] for d in perm])


def _slice(ctx: _Ctx) -> Type:
    x = ctx.array(0)
    spec: tuple[SliceDim, ...] = tuple(ctx.attr("slice"))
    if len(spec) != x.rank:
        raise ShapeError(f"'slice' needs one [start:limit:stride] per dimension ({x.rank}), got {len(spec)}")
    out = []
    for i, (s, n) in enumerate(zip(spec, x.shape)):
        if s.stride < 1 or not 0 <= s.start <= s.limit <= n:
            raise ShapeError(f"'slice' dimension {i}: [{s.start}:{s.limit}:{s.stride}] is invalid for size {n}")
        out.append((s.limit - s.start + s.stride - 1) // s.stride)
    return _arr(x.dtype, out)


def _check_indices(ctx: _Ctx, first: int, rank: int) -> None:
    idx = ctx.operands[first:]
    if len(idx) != rank:
        raise ShapeError(f"'{ctx.opcode}' needs {rank} scalar start indices, got {len(idx)}")
    for i in range(first, len(ctx.operands)):
        t = ctx.operands[i]
        if not (_scalar(t) and t.dtype.is_int):
            raise ShapeError(f"start index operand {i} of '{ctx.opcode}' must be an integer scalar, got {t}")


def _dynamic_slice(ctx: _Ctx) -> Type:
    x = ctx.array(0)
    _check_indices(ctx, 1, x.rank)
    sizes = tuple(ctx.attr("dynamic_slice_sizes"))
    if len(sizes) != x.rank:
        raise ShapeError(f"dynamic_slice_sizes needs {x.rank} sizes, got {len(sizes)}")
    for i, (s, n) in enumerate(zip(sizes, x.shape)):
        if not 0 <= s <= n:
            raise ShapeError(f"dynamic_slice_sizes[{i}] = {s} is out of range for size {n}")
    return _arr(x.dtype, sizes)


def _dynamic_update_slice(ctx: _Ctx) -> Type:
    x, upd = ctx.array(0), ctx.array(1)
    if upd.dtype != x.dtype or upd.rank != x.rank or any(u > n for u, n in zip(upd.shape, x.shape)):
        raise ShapeError(f"'dynamic-update-slice' update {_no_layout(upd)} does not fit in operand {_no_layout(x)}")
    _check_indices(ctx, 2, x.rank)
    return _arr(x.dtype, x.shape)


def _concatenate(ctx: _Ctx) -> Type:
    arrays = [ctx.array(i) for i in range(len(ctx.operands))]
    first = arrays[0]
    dims = _dims(ctx, "dimensions", first.rank)
    if len(dims) != 1:
        raise ShapeError(f"'concatenate' needs exactly one dimension, got {len(dims)}")
    (d,) = dims
    for a in arrays[1:]:
        same = a.rank == first.rank and all(i == d or a.shape[i] == first.shape[i] for i in range(a.rank))
        if a.dtype != first.dtype or not same:
            raise ShapeError(f"'concatenate' along dimension {d}: {_no_layout(a)} does not match {_no_layout(first)}")
    shape = list(first.shape)
    shape[d] = sum(a.shape[d] for a in arrays)
    return _arr(first.dtype, shape)


def _pad(ctx: _Ctx) -> Type:
    x, value = ctx.array(0), ctx.array(1)
    if not (_scalar(value) and value.dtype == x.dtype):
        raise ShapeError(f"the padding value of 'pad' must be a {x.dtype} scalar, got {_no_layout(value)}")
    spec: tuple[PadDim, ...] = tuple(ctx.attr("padding"))
    if len(spec) != x.rank:
        raise ShapeError(f"'pad' needs one lo_hi[_interior] per dimension ({x.rank}), got {len(spec)}")
    out = []
    for i, (p, n) in enumerate(zip(spec, x.shape)):
        if p.interior < 0:
            raise ShapeError(f"'pad' dimension {i}: interior padding {p.interior} is negative")
        size = p.lo + p.hi + n + max(n - 1, 0) * p.interior
        if size < 0:
            raise ShapeError(f"'pad' dimension {i}: padding {p.lo}_{p.hi}_{p.interior} of size {n} "
                             f"gives negative size {size}")
        out.append(size)
    return _arr(x.dtype, out)


def _reverse(ctx: _Ctx) -> Type:
    x = ctx.array(0)
    _dims(ctx, "dimensions", x.rank)
    return _arr(x.dtype, x.shape)


def _iota(ctx: _Ctx) -> Type:
    out = ctx.declared_array()
    d = ctx.attr("iota_dimension")
    if not _is_int(d) or not 0 <= d < out.rank:
        raise ShapeError(f"iota_dimension {d} is out of range for {_no_layout(out)}")
    return _arr(out.dtype, out.shape)


# ---------------------------------------------------------------- dot, reduce, windows, convolution


def _dot(ctx: _Ctx) -> Type:
    lhs, rhs = ctx.array(0), ctx.array(1)
    lb = _dims(ctx, "lhs_batch_dims", lhs.rank) if "lhs_batch_dims" in ctx.attrs else ()
    rb = _dims(ctx, "rhs_batch_dims", rhs.rank) if "rhs_batch_dims" in ctx.attrs else ()
    lc = _dims(ctx, "lhs_contracting_dims", lhs.rank) if "lhs_contracting_dims" in ctx.attrs else ()
    rc = _dims(ctx, "rhs_contracting_dims", rhs.rank) if "rhs_contracting_dims" in ctx.attrs else ()
    if len(lb) != len(rb):
        raise ShapeError(f"'dot' needs as many lhs as rhs batch dimensions, got {len(lb)} and {len(rb)}")
    if len(lc) != len(rc):
        raise ShapeError(f"'dot' needs as many lhs as rhs contracting dimensions, got {len(lc)} and {len(rc)}")
    for side, b, c in (("lhs", lb, lc), ("rhs", rb, rc)):
        if set(b) & set(c):
            raise ShapeError(f"'dot' {side} dimension {sorted(set(b) & set(c))[0]} is both batch and contracting")
    for kind, ld, rd in (("batch", lb, rb), ("contracting", lc, rc)):
        for i, j in zip(ld, rd):
            if lhs.shape[i] != rhs.shape[j]:
                raise ShapeError(f"'dot' {kind} dimensions differ in size: lhs dimension {i} is {lhs.shape[i]}, "
                                 f"rhs dimension {j} is {rhs.shape[j]}")
    lfree = [lhs.shape[i] for i in range(lhs.rank) if i not in lb and i not in lc]
    rfree = [rhs.shape[i] for i in range(rhs.rank) if i not in rb and i not in rc]
    dtype = ctx.declared.dtype if isinstance(ctx.declared, TensorType) else lhs.dtype
    return _arr(dtype, [lhs.shape[i] for i in lb] + lfree + rfree)


def _check_reducer(ctx: _Ctx, inits: Sequence[TensorType], arrays: Sequence[TensorType]) -> None:
    comp = ctx.computation()
    n = len(inits)
    params = comp.parameters
    if len(params) != 2 * n:
        raise ShapeError(f"to_apply computation '{comp.name}' of '{ctx.opcode}' must take {2 * n} parameters, "
                         f"takes {len(params)}")
    for i, init in enumerate(inits):
        expected = [(i, TensorType(init.dtype, ())), (n + i, TensorType(arrays[i].dtype, ()))]
        for k, want in expected:
            if not params[k].type.same_shape_dtype(want):
                raise ShapeError(f"parameter {k} of to_apply computation '{comp.name}' must be {want}, "
                                 f"got {_no_layout(params[k].type)}")
    want_root: Type = TensorType(inits[0].dtype, ()) if n == 1 else TupleType(tuple(_arr(t.dtype, ()) for t in inits))
    root = comp.root_instruction.type
    if not root.same_shape_dtype(want_root):
        raise ShapeError(f"to_apply computation '{comp.name}' of '{ctx.opcode}' must return {want_root}, "
                         f"returns {_no_layout(root)}")


def _split_reduce_operands(ctx: _Ctx) -> tuple[list[TensorType], list[TensorType]]:
    n = len(ctx.operands) // 2
    arrays = [ctx.array(i) for i in range(n)]
    inits = [ctx.array(i) for i in range(n, 2 * n)]
    for a in arrays[1:]:
        if a.shape != arrays[0].shape:
            raise ShapeError(f"'{ctx.opcode}' arrays must have the same shape, "
                             f"got {_no_layout(arrays[0])} and {_no_layout(a)}")
    for i, t in enumerate(inits):
        if t.rank != 0:
            raise ShapeError(f"init value {i} of '{ctx.opcode}' must be a scalar, got {_no_layout(t)}")
    return arrays, inits


def _results(inits: Sequence[TensorType], shape: Sequence[Any]) -> Type:
    outs = [_arr(t.dtype, shape) for t in inits]
    return outs[0] if len(outs) == 1 else TupleType(tuple(outs))


def _reduce(ctx: _Ctx) -> Type:
    arrays, inits = _split_reduce_operands(ctx)
    dims = _dims(ctx, "dimensions", arrays[0].rank)
    _check_reducer(ctx, inits, arrays)
    kept = [n for i, n in enumerate(arrays[0].shape) if i not in dims]
    return _results(inits, kept)


def window_output_size(size: int, w: WindowDim) -> int:
    """XLA's output extent of one window dimension over an input of ``size``."""
    if w.size < 1 or w.stride < 1 or w.lhs_dilate < 1 or w.rhs_dilate < 1:
        raise ShapeError(f"window dimension needs positive size, stride and dilations, got {_window_dim_str(w)}")
    dilated = 0 if size == 0 else (size - 1) * w.lhs_dilate + 1
    padded = dilated + w.pad_lo + w.pad_hi
    if padded < 0:
        raise ShapeError(f"window padding {w.pad_lo}_{w.pad_hi} makes input size {size} negative")
    span = (w.size - 1) * w.rhs_dilate + 1
    return 0 if padded < span else (padded - span) // w.stride + 1


def _window_dim_str(w: WindowDim) -> str:
    return (f"size={w.size} stride={w.stride} pad={w.pad_lo}_{w.pad_hi} "
            f"lhs_dilate={w.lhs_dilate} rhs_dilate={w.rhs_dilate}")


def _reduce_window(ctx: _Ctx) -> Type:
    arrays, inits = _split_reduce_operands(ctx)
    window: Window = ctx.attr("window")
    x = arrays[0]
    if len(window.dims) != x.rank:
        raise ShapeError(f"'reduce-window' window has {len(window.dims)} dimensions, "
                         f"operand {_no_layout(x)} has {x.rank}")
    _check_reducer(ctx, inits, arrays)
    return _results(inits, [window_output_size(n, w) for n, w in zip(x.shape, window.dims)])


def _convolution(ctx: _Ctx) -> Type:
    lhs, rhs = ctx.array(0), ctx.array(1)
    labels: ConvDimLabels = ctx.attr("dim_labels")
    window: Window = ctx.attrs.get("window", Window(()))
    fgc = ctx.attrs.get("feature_group_count", 1)
    bgc = ctx.attrs.get("batch_group_count", 1)
    n = labels.spatial_rank
    if lhs.rank != len(labels.lhs) or rhs.rank != len(labels.rhs):
        raise ShapeError(f"'convolution' dim_labels {labels} do not match operand ranks {lhs.rank} and {rhs.rank}")
    if len(window.dims) != n:
        raise ShapeError(f"'convolution' window has {len(window.dims)} dimensions, "
                         f"dim_labels {labels} have {n} spatial")
    if not (_is_int(fgc) and fgc >= 1 and _is_int(bgc) and bgc >= 1):
        raise ShapeError(f"'convolution' group counts must be positive, "
                         f"got feature_group_count={fgc}, batch_group_count={bgc}")
    if fgc > 1 and bgc > 1:
        raise ShapeError("'convolution' cannot have both feature_group_count and batch_group_count above 1")
    batch, in_f = lhs.shape[labels.lhs_batch()], lhs.shape[labels.lhs_feature()]
    k_in, k_out = rhs.shape[labels.rhs_in()], rhs.shape[labels.rhs_out()]
    if in_f % fgc or in_f // fgc != k_in:
        raise ShapeError(f"'convolution' input features {in_f} / feature_group_count {fgc} must equal "
                         f"kernel input features {k_in}")
    if k_out % fgc:
        raise ShapeError(f"'convolution' kernel output features {k_out} must be divisible by feature_group_count {fgc}")
    if batch % bgc:
        raise ShapeError(f"'convolution' batch {batch} must be divisible by batch_group_count {bgc}")
    if k_out % bgc:
        raise ShapeError(f"'convolution' kernel output features {k_out} must be divisible by batch_group_count {bgc}")
    lhs_sp, rhs_sp, out_sp = (ConvDimLabels.spatial(s) for s in (labels.lhs, labels.rhs, labels.out))
    out = [0] * len(labels.out)
    out[labels.out_batch()] = batch // bgc
    out[labels.out_feature()] = k_out
    for k, w in enumerate(window.dims):
        if w.size != rhs.shape[rhs_sp[k]]:
            raise ShapeError(f"'convolution' window size {w.size} in spatial dimension {k} does not match "
                             f"kernel size {rhs.shape[rhs_sp[k]]}")
        out[out_sp[k]] = window_output_size(lhs.shape[lhs_sp[k]], w)
    dtype = ctx.declared.dtype if isinstance(ctx.declared, TensorType) else lhs.dtype
    return _arr(dtype, out)


# ---------------------------------------------------------------- calls and tuples


def _call(ctx: _Ctx) -> Type:
    comp = ctx.computation()
    params = comp.parameters
    if len(params) != len(ctx.operands):
        raise ShapeError(f"computation '{comp.name}' takes {len(params)} parameters, 'call' passes {len(ctx.operands)}")
    for i, (p, t) in enumerate(zip(params, ctx.operands)):
        if not p.type.same_shape_dtype(t):
            raise ShapeError(f"operand {i} of 'call' has type {_no_layout(t)}, computation '{comp.name}' "
                             f"expects {_no_layout(p.type)}")
    return _no_layout(comp.root_instruction.type)


def _tuple(ctx: _Ctx) -> Type:
    return TupleType(tuple(_no_layout(t) for t in ctx.operands))


def _get_tuple_element(ctx: _Ctx) -> Type:
    t = ctx.operands[0]
    if not isinstance(t, TupleType):
        raise ShapeError(f"'get-tuple-element' needs a tuple operand, got {t}")
    i = ctx.attr("index")
    if not _is_int(i) or not 0 <= i < len(t.elements):
        raise ShapeError(f"'get-tuple-element' index {i} is out of range for {_no_layout(t)}")
    return _no_layout(t.elements[i])


def _declared(ctx: _Ctx) -> Type:
    if ctx.declared is None:
        raise ShapeError(f"'{ctx.opcode}' needs a declared type")
    return _no_layout(ctx.declared)


def _constant(ctx: _Ctx) -> Type:
    t = ctx.declared_array()
    lit = ctx.attrs.get("literal")
    if lit is not None and (lit.dtype != t.dtype or lit.shape != t.shape):
        raise ShapeError(f"constant literal {lit.dtype}{list(lit.shape)} does not match its type {_no_layout(t)}")
    return _arr(t.dtype, t.shape)


_RULES: dict[str, Callable[[_Ctx], Type]] = {
    **{op: _unary for op in UNARY_OPS},
    **{op: _binary for op in BINARY_OPS},
    "compare": _compare, "select": _select, "clamp": _clamp, "convert": _convert,
    "bitcast-convert": _bitcast_convert, "broadcast": _broadcast, "reshape": _reshape,
    "transpose": _transpose, "slice": _slice, "dynamic-slice": _dynamic_slice,
    "dynamic-update-slice": _dynamic_update_slice, "concatenate": _concatenate, "pad": _pad,
    "reverse": _reverse, "iota": _iota, "dot": _dot, "reduce": _reduce,
    "reduce-window": _reduce_window, "convolution": _convolution, "call": _call, "tuple": _tuple,
    "get-tuple-element": _get_tuple_element, "parameter": _declared, "constant": _constant,
}


def infer_type(
    opcode: str,
    operand_types: Sequence[Type],
    attrs: Mapping[str, Any],
    computations: Mapping[str, Computation] | None = None,
    declared: Type | None = None,
) -> Type:
    """The result type of ``opcode`` applied to ``operand_types`` (without layout).

    ``computations`` resolves ``to_apply``; ``declared`` is the type written in
    the text, read only where XLA's rules need it (see the module docstring)."""
    if opcode not in _RULES:
        raise ShapeError(f"unknown HLO op '{opcode}'")
    check_operand_count(opcode, len(operand_types))
    ctx = _Ctx(opcode, tuple(operand_types), attrs, computations or {}, declared)
    return _RULES[opcode](ctx)
