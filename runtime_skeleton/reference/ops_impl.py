"""One numpy implementation per HLO op, with XLA:CPU semantics.

``OP_IMPLS[opcode](inst, operands, ctx)`` returns the value of ``inst`` (a numpy
array of the result element type's numpy dtype, or a tuple of values) given its
operand values. The interpreter and the accelerator simulator both run
instruction semantics through this table, so there is one definition of every op.

Numeric conventions (checked against XLA:CPU in tests/test_reference_vs_jax.py):

* bf16/f16 ops compute in f32 and round to the result type after every op, as
  XLA's float normalization makes XLA:CPU do. f32 ops IEEE defines exactly (+ - * /
  sqrt, min/max, rounding, ...) run in f32; the others (exp, tanh, erf, pow, ...) run
  in f64 and round to f32, so they come out correctly rounded where XLA's polynomial
  approximations are a few ulp off (tests tolerate that). XLA:CPU contracts a*b+c
  into an FMA inside fusions; the reference rounds each HLO op, as HLO specifies.
* Subnormals follow IEEE (gradual underflow). XLA:CPU runs with denormals flushed
  to zero, in most ops but not all (remainder, atan2, tanh, log, ... keep them), so
  the two differ on subnormal inputs and results.
* Integer arithmetic wraps; division/shift/power corner cases follow XLA (below).
* dot and convolution accumulate in f32 (f64 if anything is f64) for float
  results and in the result type for integer results.
"""
from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from ..errors import EvalError
from ..ir.attrs import PadDim, WindowDim
from ..ir.dtypes import DType, f32, f64, s64
from ..ir.graph import Computation, Instruction
from ..ir.ops import BINARY_OPS, UNARY_OPS
from ..ir.types import TupleType, leaves

Value = np.ndarray | tuple  # a tuple holds Values


class Context(Protocol):
    """What an op needs from its surroundings: the computations it may call."""

    def computation(self, name: str) -> Computation: ...

    def call(self, name: str, args: Sequence[Value], *, vectorized: bool = False) -> Value:
        """Evaluate computation ``name`` on ``args``. ``vectorized``: the args are
        arrays standing for many scalar evaluations at once (shapes differ from the
        declared scalar types), which is valid for elementwise computations."""
        ...


OpImpl = Callable[[Instruction, Sequence[Value], Context], Value]
OP_IMPLS: dict[str, OpImpl] = {}


def _register(*opcodes: str) -> Callable[[OpImpl], OpImpl]:
    def deco(fn: OpImpl) -> OpImpl:
        @functools.wraps(fn)
        def quiet(inst: Instruction, ops: Sequence[Value], ctx: Context) -> Value:
            with np.errstate(all="ignore"):  # wrap-around and inf/NaN are the semantics
                return fn(inst, ops, ctx)

        for op in opcodes:
            OP_IMPLS[op] = quiet
        return quiet

    return deco


# ---------------------------------------------------------------------------
# helpers


def _dtype(inst: Instruction) -> DType:
    return inst.tensor_type.dtype


def _ints(inst: Instruction, key: str, default: Sequence[int] = ()) -> tuple[int, ...]:
    v = inst.attrs.get(key, default)
    return (int(v),) if isinstance(v, (int, np.integer)) else tuple(int(d) for d in v)


def _is_float(x: np.ndarray) -> bool:
    return x.dtype.kind not in "biu"  # f, or V for ml_dtypes' bf16


def _unsigned(dt: np.dtype) -> np.dtype:
    return np.dtype(f"u{np.dtype(dt).itemsize}")


def _signed(dt: np.dtype) -> np.dtype:
    return np.dtype(f"i{np.dtype(dt).itemsize}")


def _round_float(y: np.ndarray, dt: DType) -> np.ndarray:
    """Round the f32/f64 result of a narrower-float op as XLA does: to f32, then to dt."""
    y = np.asarray(y)
    if dt.bits < 64:
        y = y.astype(np.float32, copy=False)
    return y.astype(dt.np, copy=False)


def _wide(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(np.float64, copy=False)


def _compute_type(x: np.ndarray, opcode: str) -> type:
    """f64 for f64 data and for f32 ops that are not exact in f32 (so they come out
    correctly rounded); ops IEEE defines exactly run in f32 directly (same result,
    less work)."""
    if x.dtype == np.float64 or opcode not in _EXACT_IN_F32:
        return np.float64
    return np.float32


_EXACT_IN_F32 = frozenset({
    "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "sqrt", "abs",
    "negate", "floor", "ceil", "round-nearest-even", "round-nearest-afz", "sign", "copy",
})


# ---------------------------------------------------------------------------
# convert


def convert_array(x: np.ndarray, dt: DType) -> np.ndarray:
    """XLA convert: float->int truncates and saturates (NaN -> 0); int->int wraps;
    anything->pred is x != 0; pred->number is 0/1; float->float rounds to nearest even."""
    x = np.asarray(x)
    if dt.is_pred:
        return x != 0
    if x.dtype == np.bool_:
        return x.astype(np.uint8).astype(dt.np)
    if dt.is_int and _is_float(x):
        return _float_to_int(x, dt.np)
    return x.astype(dt.np)


def _float_to_int(x: np.ndarray, to: np.dtype) -> np.ndarray:
    info = np.iinfo(to)
    t = np.trunc(_wide(x))
    nan = np.isnan(t)
    too_big = t >= 2.0 ** (info.bits - (1 if info.min < 0 else 0))
    too_small = t < float(info.min)
    ok = ~(nan | too_big | too_small)
    out = np.zeros(t.shape, to)
    out[ok] = t[ok].astype(to)
    out[too_big] = info.max
    out[too_small] = info.min
    return out


@_register("convert")
def _convert(inst, ops, ctx):
    return convert_array(ops[0], _dtype(inst))


@_register("bitcast-convert")
def _bitcast_convert(inst, ops, ctx):
    # Element order within a wider element is little-endian (byte 0 = low byte),
    # which is the host order numpy views use on every platform we run on.
    x = np.asarray(ops[0], order="C")  # (np.ascontiguousarray would make scalars 1-d)
    to = _dtype(inst).np
    src_size, dst_size = x.dtype.itemsize, to.itemsize
    if src_size == dst_size:
        return x.view(to)
    if dst_size < src_size:
        return np.ascontiguousarray(x.reshape(x.shape + (1,))).view(to)
    return x.view(to).reshape(x.shape[:-1])


# ---------------------------------------------------------------------------
# elementwise unary


def _erf(x: np.ndarray) -> np.ndarray:
    flat = np.asarray(x, np.float64).ravel().tolist()
    return np.fromiter(map(math.erf, flat), np.float64, count=len(flat)).reshape(np.shape(x))


def _round_afz(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.copysign(1.0, x), t)


def _float_sign(x: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(x) | (x == 0), x, np.copysign(1.0, x))


_FLOAT_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "abs": np.abs,
    "negate": np.negative,
    "exponential": np.exp,
    "exponential-minus-one": np.expm1,
    "log": np.log,
    "log-plus-one": np.log1p,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "cbrt": np.cbrt,
    "tanh": np.tanh,
    "logistic": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "sin": np.sin,
    "sine": np.sin,
    "cos": np.cos,
    "cosine": np.cos,
    "tan": np.tan,
    "erf": _erf,
    "floor": np.floor,
    "ceil": np.ceil,
    "round-nearest-even": np.rint,
    "round-nearest-afz": _round_afz,
    "sign": _float_sign,
    "copy": lambda x: x,
}


def _clz(x: np.ndarray) -> np.ndarray:
    bits = x.dtype.itemsize * 8
    v = x.view(_unsigned(x.dtype)).astype(np.uint64)
    length = np.zeros(v.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        big = v >= np.uint64(1 << s)
        v = np.where(big, v >> np.uint64(s), v)
        length += np.where(big, s, 0)
    length += (v > 0).astype(np.int64)
    return bits - length


_INT_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "abs": np.abs,  # abs(INT_MIN) wraps to INT_MIN
    "negate": np.negative,
    "sign": np.sign,
    "not": np.invert,  # bitwise for ints, logical for pred
    "popcnt": lambda x: np.bitwise_count(x.view(_unsigned(x.dtype))),
    "count-leading-zeros": _clz,
    "copy": lambda x: x,
}


def unary(opcode: str, x: np.ndarray, dt: DType) -> np.ndarray:
    """Elementwise unary op ``opcode`` on ``x`` with result element type ``dt``."""
    x = np.asarray(x)
    if opcode == "is-finite":
        return np.isfinite(_wide(x))
    if _is_float(x):
        fn = _FLOAT_UNARY.get(opcode)
        if fn is None:
            raise EvalError(f"'{opcode}' is not defined on floating-point values")
        return _round_float(fn(x.astype(_compute_type(x, opcode), copy=False)), dt)
    fn = _INT_UNARY.get(opcode)
    if fn is None:
        raise EvalError(f"'{opcode}' is not defined on {x.dtype} values")
    if x.dtype == np.bool_ and opcode not in ("not", "copy"):
        x = x.astype(np.int8)  # arithmetic on pred: 0/1
    return convert_array(fn(x), dt)


@_register(*UNARY_OPS, "sine", "cosine")  # XLA prints sin/cos as sine/cosine
def _unary(inst, ops, ctx):
    return unary(inst.opcode, ops[0], _dtype(inst))


# ---------------------------------------------------------------------------
# elementwise binary


def _float_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # NaN propagates; +0 > -0 (XLA:CPU's behaviour)
    r = np.maximum(a, b)
    zeros = (a == 0) & (b == 0)
    return np.where(zeros, np.where(np.signbit(a) & np.signbit(b), -0.0, 0.0), r)


def _float_min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r = np.minimum(a, b)
    zeros = (a == 0) & (b == 0)
    return np.where(zeros, np.where(np.signbit(a) | np.signbit(b), -0.0, 0.0), r)


_FLOAT_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "remainder": np.fmod,  # sign of the dividend
    "power": np.power,
    "maximum": _float_max,
    "minimum": _float_min,
    "atan2": np.arctan2,
}


def _int_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Truncating division; x/0 = -1 (all ones), INT_MIN/-1 = INT_MIN."""
    zero = b == 0
    if a.dtype.kind == "u":
        q = a // np.where(zero, 1, b).astype(a.dtype)
        return np.where(zero, np.iinfo(a.dtype).max, q).astype(a.dtype)
    overflow = (a == np.iinfo(a.dtype).min) & (b == -1)
    d = np.where(zero | overflow, 1, b).astype(a.dtype)
    q = a // d
    r = a - q * d
    q = q + ((r != 0) & ((a < 0) != (d < 0))).astype(a.dtype)  # floor -> toward zero
    q = np.where(zero, -1, q)
    return np.where(overflow, a, q).astype(a.dtype)


def _int_remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Remainder with the dividend's sign; x%0 = x, INT_MIN % -1 = 0."""
    zero = b == 0
    if a.dtype.kind == "u":
        return np.where(zero, a, a % np.where(zero, 1, b).astype(a.dtype)).astype(a.dtype)
    overflow = (a == np.iinfo(a.dtype).min) & (b == -1)
    d = np.where(zero | overflow, 1, b).astype(a.dtype)
    r = np.fmod(a, d)
    r = np.where(zero, a, r)
    return np.where(overflow, 0, r).astype(a.dtype)


def _int_power(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """XLA:CPU's integer power: square-and-multiply over the exponent's low 6 bits
    (so e >= 64 acts as e % 64), wrapping. An exponent negative in its signed view
    (for unsigned types too: e >= 2^(bits-1)) gives 1 for base 1, +-1 for base -1
    (all ones) and 0 otherwise."""
    acc = np.ones(np.broadcast_shapes(a.shape, b.shape), a.dtype)
    base = a.copy()
    e = b.view(_unsigned(b.dtype))
    for _ in range(6):
        acc = np.where((e & 1) == 1, acc * base, acc).astype(a.dtype)
        base = (base * base).astype(a.dtype)
        e = e >> np.array(1, e.dtype)
    sa, sb = a.view(_signed(a.dtype)), b.view(_signed(b.dtype))
    odd = (sb & 1) == 1
    negative = np.where(sa == 1, 1, np.where(sa == -1, np.where(odd, -1, 1), 0)).astype(sa.dtype)
    return np.where(sb < 0, negative.view(a.dtype), acc).astype(a.dtype)


def _shift(kind: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Shifts by an amount read as unsigned; amounts >= the bit width give 0
    (left, logical right) or the sign fill (arithmetic right, on the signed view)."""
    bits = a.dtype.itemsize * 8
    ut, st = _unsigned(a.dtype), _signed(a.dtype)
    amount = b.view(_unsigned(b.dtype))
    oob = amount >= bits
    s = np.where(oob, 0, amount).astype(ut)
    if kind == "shift-left":
        r = np.where(oob, 0, a.view(ut) << s).astype(ut)
    elif kind == "shift-right-logical":
        r = np.where(oob, 0, a.view(ut) >> s).astype(ut)
    else:
        sa = a.view(st)
        r = np.where(oob, sa >> np.array(bits - 1, st), sa >> s.astype(st)).astype(st)
    return r.view(a.dtype)


_INT_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": _int_divide,
    "remainder": _int_remainder,
    "power": _int_power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "shift-left": functools.partial(_shift, "shift-left"),
    "shift-right-logical": functools.partial(_shift, "shift-right-logical"),
    "shift-right-arithmetic": functools.partial(_shift, "shift-right-arithmetic"),
}

_PRED_BINARY = {
    "and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor,
    "maximum": np.logical_or, "minimum": np.logical_and,
}


def binary(opcode: str, a: np.ndarray, b: np.ndarray, dt: DType) -> np.ndarray:
    """Elementwise binary op with result element type ``dt`` (operands broadcast
    numpy-style, which the reducers rely on)."""
    a, b = np.asarray(a), np.asarray(b)
    if _is_float(a):
        fn = _FLOAT_BINARY.get(opcode)
        if fn is None:
            raise EvalError(f"'{opcode}' is not defined on floating-point values")
        ct = _compute_type(a, opcode)
        return _round_float(fn(a.astype(ct, copy=False), b.astype(ct, copy=False)), dt)
    if a.dtype == np.bool_:
        fn = _PRED_BINARY.get(opcode)
        if fn is None:
            raise EvalError(f"'{opcode}' is not defined on pred values")
        return np.asarray(fn(a, b))
    fn = _INT_BINARY.get(opcode)
    if fn is None:
        raise EvalError(f"'{opcode}' is not defined on integer values")
    return np.asarray(fn(a, b.astype(a.dtype, copy=False))).astype(dt.np, copy=False)


@_register(*BINARY_OPS)
def _binary(inst, ops, ctx):
    return binary(inst.opcode, ops[0], ops[1], _dtype(inst))


def _total_order_key(x: np.ndarray) -> np.ndarray:
    """Integers ordered like floats under IEEE totalOrder (-NaN < -inf < ... < -0 < +0 < ... < NaN)."""
    i = np.asarray(x, order="C").view(_signed(x.dtype))
    info = np.iinfo(i.dtype)
    return np.where(i < 0, i ^ np.array(info.max, i.dtype), i)


_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
            "GT": np.greater, "GE": np.greater_equal}


def compare(direction: str, a: np.ndarray, b: np.ndarray, total_order: bool = False) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    fn = _COMPARE.get(direction)
    if fn is None:
        raise EvalError(f"unknown comparison direction '{direction}'")
    if _is_float(a):
        if total_order:
            return fn(_total_order_key(a), _total_order_key(b.astype(a.dtype)))
        return fn(_wide(a), _wide(b))  # NaN compares false except NE
    return fn(a, b)


@_register("compare")
def _compare(inst, ops, ctx):
    total = str(inst.attrs.get("type", "")).upper() == "TOTALORDER"
    return compare(str(inst.attrs["direction"]), ops[0], ops[1], total)


@_register("select")
def _select(inst, ops, ctx):
    pred, on_true, on_false = (np.asarray(o) for o in ops)
    return np.where(pred, on_true, on_false).astype(_dtype(inst).np, copy=False)


@_register("clamp")
def _clamp(inst, ops, ctx):
    lo, x, hi = ops
    dt = _dtype(inst)
    return binary("minimum", binary("maximum", x, lo, dt), hi, dt)


# ---------------------------------------------------------------------------
# shape manipulation


@_register("constant")
def _constant(inst, ops, ctx):
    return inst.attrs["literal"].array


@_register("iota")
def _iota(inst, ops, ctx):
    t = inst.tensor_type
    d = int(inst.attrs["iota_dimension"])
    shape = [1] * t.rank
    shape[d] = t.shape[d]
    return np.broadcast_to(np.arange(t.shape[d]).reshape(shape), t.shape).astype(t.dtype.np)


@_register("broadcast")
def _broadcast(inst, ops, ctx):
    x = np.asarray(ops[0])
    t = inst.tensor_type
    dims = _ints(inst, "dimensions")
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    x = np.transpose(x, order) if x.ndim else x
    shape = [1] * t.rank
    for i in order:
        shape[dims[i]] = ops[0].shape[i]
    return np.broadcast_to(x.reshape(shape), t.shape)


@_register("reshape")
def _reshape(inst, ops, ctx):
    return np.reshape(ops[0], inst.tensor_type.shape)


@_register("transpose")
def _transpose(inst, ops, ctx):
    return np.transpose(ops[0], _ints(inst, "dimensions"))


@_register("reverse")
def _reverse(inst, ops, ctx):
    return np.flip(ops[0], axis=_ints(inst, "dimensions"))


@_register("slice")
def _slice(inst, ops, ctx):
    return ops[0][tuple(slice(s.start, s.limit, s.stride) for s in inst.attrs["slice"])]


def _start_indices(operand: np.ndarray, idx: Sequence[np.ndarray], sizes: Sequence[int]) -> list[int]:
    """Start indices clamped into [0, dim - size], as XLA does."""
    if len(idx) == 1 and np.ndim(idx[0]) == 1 and operand.ndim != 1:
        idx = list(idx[0])  # old-style single index vector
    if len(idx) != operand.ndim:
        raise EvalError(f"expected {operand.ndim} start indices, got {len(idx)}")
    return [min(max(int(i), 0), n - s) for i, n, s in zip(idx, operand.shape, sizes)]


@_register("dynamic-slice")
def _dynamic_slice(inst, ops, ctx):
    x = ops[0]
    sizes = _ints(inst, "dynamic_slice_sizes", inst.tensor_type.shape)
    starts = _start_indices(x, ops[1:], sizes)
    return x[tuple(slice(s, s + n) for s, n in zip(starts, sizes))]


@_register("dynamic-update-slice")
def _dynamic_update_slice(inst, ops, ctx):
    x, update = ops[0], np.asarray(ops[1])
    starts = _start_indices(x, ops[2:], update.shape)
    out = np.array(x, copy=True)
    out[tuple(slice(s, s + n) for s, n in zip(starts, update.shape))] = update
    return out


@_register("concatenate")
def _concatenate(inst, ops, ctx):
    (axis,) = _ints(inst, "dimensions")
    return np.concatenate([np.asarray(o) for o in ops], axis=axis)


def pad_array(x: np.ndarray, value, dims: Sequence[PadDim]) -> np.ndarray:
    """HLO pad: interior padding between elements, then lo/hi at the edges;
    negative lo/hi crop."""
    x = np.asarray(x)
    cores = [n + max(n - 1, 0) * p.interior for n, p in zip(x.shape, dims)]
    shape = [max(p.lo, 0) + c + max(p.hi, 0) for p, c in zip(dims, cores)]
    out = np.full(shape, value, dtype=x.dtype)
    out[tuple(slice(max(p.lo, 0), max(p.lo, 0) + c, p.interior + 1) for p, c in zip(dims, cores))] = x
    return out[tuple(slice(-min(p.lo, 0), n + min(p.hi, 0)) for p, n in zip(dims, shape))]


@_register("pad")
def _pad(inst, ops, ctx):
    return pad_array(ops[0], np.asarray(ops[1]), inst.attrs["padding"])


# ---------------------------------------------------------------------------
# dot and convolution


def _accumulator(result: DType, *operands: np.ndarray) -> DType:
    if result.is_float:
        return f64 if result.bits == 64 or any(o.dtype == np.float64 for o in operands) else f32
    if result.is_pred:
        return s64
    return result


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Batched a @ b; a float one as a left fold over the contraction, each product and sum
    rounded in the accumulator type. BLAS's order depends on the machine's kernels and on
    where a row lies in its blocks (AMD's AVX2 sgemm rounds a row of dot(reverse(x), y)
    otherwise than the same row of dot(x, y)), and numpy sums a strided operand in a loop
    of its own: the reference's bits then depended on the machine and on views."""
    if a.dtype.kind != "f" or a.shape[-1] == 0:
        return np.matmul(a, b)
    out = a[:, :, 0, None] * b[:, None, 0, :]
    for k in range(1, a.shape[-1]):
        out = out + a[:, :, k, None] * b[:, None, k, :]
    return out


@_register("dot")
def _dot(inst, ops, ctx):
    lhs, rhs = (np.asarray(o) for o in ops)
    result = _dtype(inst)
    acc = _accumulator(result, lhs, rhs)
    lb, rb = _ints(inst, "lhs_batch_dims"), _ints(inst, "rhs_batch_dims")
    lc, rc = _ints(inst, "lhs_contracting_dims"), _ints(inst, "rhs_contracting_dims")
    lf = [d for d in range(lhs.ndim) if d not in lb + lc]
    rf = [d for d in range(rhs.ndim) if d not in rb + rc]
    batch = [lhs.shape[d] for d in lb]
    m = math.prod(lhs.shape[d] for d in lf)
    n = math.prod(rhs.shape[d] for d in rf)
    k = math.prod(lhs.shape[d] for d in lc)
    a = convert_array(lhs, acc).transpose(lb + tuple(lf) + lc).reshape(math.prod(batch), m, k)
    b = convert_array(rhs, acc).transpose(rb + rc + tuple(rf)).reshape(math.prod(batch), k, n)
    out = _matmul(a, b)
    shape = batch + [lhs.shape[d] for d in lf] + [rhs.shape[d] for d in rf]
    return convert_array(out.reshape(shape), result)


def _window_dims(inst: Instruction, kernel_sizes: Sequence[int]) -> list[WindowDim]:
    window = inst.attrs.get("window")
    if window is None:
        return [WindowDim(size=k) for k in kernel_sizes]
    if len(window.dims) != len(kernel_sizes):
        raise EvalError(f"window has {len(window.dims)} dims, expected {len(kernel_sizes)}")
    return list(window.dims)


def _out_size(padded: int, size: int, stride: int, dilation: int) -> int:
    span = (size - 1) * dilation + 1
    return 0 if padded < span else (padded - span) // stride + 1


def _window_slices(offsets, dims: Sequence[WindowDim], out_sizes) -> tuple[slice, ...]:
    """For window position ``offsets``, the strided slice of the padded input that
    every output position reads."""
    return tuple(
        slice(k * w.rhs_dilate, k * w.rhs_dilate + (o - 1) * w.stride + 1, w.stride) if o else slice(0, 0)
        for k, w, o in zip(offsets, dims, out_sizes)
    )


@_register("convolution")
def _convolution(inst, ops, ctx):
    labels = inst.attrs["dim_labels"]
    result = _dtype(inst)
    acc_t = _accumulator(result, *ops)
    lhs_sp, rhs_sp, out_sp = (labels.spatial(s) for s in (labels.lhs, labels.rhs, labels.out))
    # canonical layouts: lhs [N, C, spatial...], rhs [O, I, spatial...]
    x = convert_array(ops[0], acc_t).transpose((labels.lhs_batch(), labels.lhs_feature()) + lhs_sp)
    w = convert_array(ops[1], acc_t).transpose((labels.rhs_out(), labels.rhs_in()) + rhs_sp)
    dims = _window_dims(inst, w.shape[2:])
    flip = tuple(2 + d for d, wd in enumerate(dims) if wd.reversal)
    if flip:
        w = np.flip(w, axis=flip)
    x = pad_array(x, 0, [PadDim(0, 0), PadDim(0, 0)]
                  + [PadDim(wd.pad_lo, wd.pad_hi, wd.lhs_dilate - 1) for wd in dims])
    outs = [_out_size(p, k, wd.stride, wd.rhs_dilate) for p, k, wd in zip(x.shape[2:], w.shape[2:], dims)]
    groups = int(inst.attrs.get("feature_group_count", 1))
    batch_groups = int(inst.attrs.get("batch_group_count", 1))
    n, c = x.shape[:2]
    o, i = w.shape[:2]
    if groups > 1 and batch_groups > 1:
        raise EvalError("convolution with both feature_group_count and batch_group_count > 1")
    if c != i * groups or o % (groups * batch_groups) or n % batch_groups:
        raise EvalError(f"convolution shapes lhs {ops[0].shape} rhs {ops[1].shape} do not fit "
                        f"feature_group_count={groups} batch_group_count={batch_groups}")
    acc = np.zeros([n // batch_groups, o] + outs, acc_t.np)
    for offsets in itertools.product(*(range(k) for k in w.shape[2:])):
        xv = x[(slice(None), slice(None)) + _window_slices(offsets, dims, outs)]
        wv = w[(slice(None), slice(None)) + offsets]
        if batch_groups > 1:  # lhs batch split group-major; output feature group g reads batch group g
            part = np.einsum("bnc...,boc->nbo...", xv.reshape(batch_groups, n // batch_groups, c, *outs),
                             wv.reshape(batch_groups, o // batch_groups, i))
        else:  # input feature group g feeds output feature group g
            part = np.einsum("ngc...,goc->ngo...", xv.reshape(n, groups, i, *outs),
                             wv.reshape(groups, o // groups, i))
        acc += part.reshape(acc.shape)
    # canonical [b, f, spatial...] -> the output's dimension order
    perm = [0 if ch == "b" else 1 if ch == "f" else 2 + int(ch) for ch in labels.out]
    return convert_array(acc.transpose(perm), result)


# ---------------------------------------------------------------------------
# reductions

_VECTORIZABLE = UNARY_OPS | BINARY_OPS | {
    "parameter", "constant", "compare", "select", "clamp", "convert", "tuple", "get-tuple-element",
}


def _is_vectorizable(comp: Computation) -> bool:
    """Scalar computations made of elementwise ops evaluate on whole arrays at once."""
    return all(
        i.opcode in _VECTORIZABLE and all(t.rank == 0 for t in leaves(i.type)) for i in comp
    )


def _as_list(v: Value) -> list[np.ndarray]:
    return list(v) if isinstance(v, tuple) else [v]


def apply_scalar_computation(ctx: Context, name: str, args: Sequence[np.ndarray],
                             shape: tuple[int, ...]) -> list[np.ndarray]:
    """Evaluate scalar computation ``name`` elementwise over arrays of ``shape``."""
    comp = ctx.computation(name)
    if _is_vectorizable(comp):
        out = _as_list(ctx.call(name, args, vectorized=True))
        return [np.broadcast_to(o, shape) for o in out]
    types = leaves(comp.root_instruction.type)
    outs = [np.empty(shape, t.dtype.np) for t in types]
    for idx in np.ndindex(*shape):
        vals = _as_list(ctx.call(name, [np.asarray(a[idx]) for a in args]))
        for o, v in zip(outs, vals):
            o[idx] = v
    return outs


_MONOIDS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
            "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


def _monoid(comp: Computation) -> str | None:
    """The opcode if ``comp`` is ``ROOT r = op(p0, p1)`` over its two parameters."""
    params = comp.parameters
    root = comp.root_instruction
    if len(params) == 2 and root.opcode in _MONOIDS and len(comp.instructions) == 3:
        if sorted(root.operands) == sorted(p.name for p in params):
            return root.opcode
    return None


def _identity(op: str, dtype: np.dtype):
    """e with op(acc, e) == acc bit for bit (-0.0 for float add: x + -0.0 keeps x's sign)."""
    kind = np.dtype(dtype).kind
    if kind == "b":
        return op in ("multiply", "minimum", "and")
    if kind in "iu":
        info = np.iinfo(dtype)
        return {"add": 0, "multiply": 1, "maximum": info.min, "minimum": info.max,
                "and": -1 if kind == "i" else info.max, "or": 0, "xor": 0}[op]
    return {"add": -0.0, "multiply": 1.0, "maximum": -np.inf, "minimum": np.inf}.get(op)


Combine = Callable[[list[np.ndarray], list[np.ndarray]], list[np.ndarray]]


def _combiner(ctx: Context, name: str, types: Sequence, shape: tuple[int, ...]) -> tuple[Combine, str | None]:
    """``combine(accumulators, elements)`` applying reducer ``name`` elementwise,
    and the reducer's opcode when it is a plain binary op (then run directly)."""
    op = _monoid(ctx.computation(name)) if len(types) == 1 else None
    if op:
        dt = types[0].dtype
        return (lambda acc, xs: [binary(op, acc[0], xs[0], dt)]), op
    return (lambda acc, xs: apply_scalar_computation(ctx, name, acc + xs, shape)), None


def _numpy_reduce_exact_enough(op: str, dtype: np.dtype) -> bool:
    """numpy's reduce is usable where the result does not depend on rounding steps
    XLA would take: integers and pred, and f32/f64 sums/products (only the order
    differs, as it does between XLA backends). bf16/f16 round per step, and float
    max/min need XLA's NaN/-0 rules, so those take the stepwise path."""
    kind = np.dtype(dtype).kind
    if kind in "iu":
        return True
    if kind == "b":
        return op in ("and", "or", "maximum", "minimum")
    return dtype in (np.float32, np.float64) and op in ("add", "multiply")


@_register("reduce")
def _reduce(inst, ops, ctx):
    n = len(ops) // 2
    xs, inits = [np.asarray(o) for o in ops[:n]], [np.asarray(o) for o in ops[n:]]
    dims = _ints(inst, "dimensions")
    keep = [d for d in range(xs[0].ndim) if d not in dims]
    shape = tuple(xs[0].shape[d] for d in keep)
    count = math.prod(xs[0].shape[d] for d in dims)
    flat = [x.transpose(keep + list(dims)).reshape(shape + (count,)) for x in xs]
    types = leaves(inst.type)
    combine, op = _combiner(ctx, str(inst.attrs["to_apply"]), types, shape)
    if op and count and _numpy_reduce_exact_enough(op, flat[0].dtype):
        ufunc = _MONOIDS[op]
        # contiguous: numpy sums a strided axis in another order (a view's bits would differ)
        out = [ufunc(inits[0], ufunc.reduce(np.ascontiguousarray(flat[0]), axis=-1, dtype=flat[0].dtype))]
    else:
        out = [np.broadcast_to(i, shape).astype(t.dtype.np) for i, t in zip(inits, types)]
        for k in range(count):
            out = combine(out, [f[..., k] for f in flat])
    out = [np.asarray(o).astype(t.dtype.np, copy=False) for o, t in zip(out, types)]
    return tuple(out) if isinstance(inst.type, TupleType) else out[0]


@_register("reduce-window")
def _reduce_window(inst, ops, ctx):
    n = len(ops) // 2
    xs, inits = [np.asarray(o) for o in ops[:n]], [np.asarray(o) for o in ops[n:]]
    dims = _window_dims(inst, [1] * xs[0].ndim)
    pads = [PadDim(w.pad_lo, w.pad_hi, w.lhs_dilate - 1) for w in dims]
    types = leaves(inst.type)
    shape = tuple(_out_size(x + max(x - 1, 0) * p.interior + p.lo + p.hi, w.size, w.stride, w.rhs_dilate)
                  for x, p, w in zip(xs[0].shape, pads, dims))
    combine, op = _combiner(ctx, str(inst.attrs["to_apply"]), types, shape)
    # Padding and base-dilation holes are skipped, not folded in as init values: fill
    # them with the reducer's identity when it has one, else mask them out.
    fill = _identity(op, xs[0].dtype) if op else None
    padded = [pad_array(x, i if fill is None else fill, pads) for x, i in zip(xs, inits)]
    valid = None if fill is not None else pad_array(np.ones(xs[0].shape, bool), False, pads)
    acc = [np.broadcast_to(i, shape).astype(t.dtype.np) for i, t in zip(inits, types)]
    for offsets in itertools.product(*(range(w.size) for w in dims)):
        sl = _window_slices(offsets, dims, shape)
        new = combine(acc, [p[sl] for p in padded])
        acc = new if valid is None else [np.where(valid[sl], v, a) for v, a in zip(new, acc)]
    acc = [np.asarray(a).astype(t.dtype.np, copy=False) for a, t in zip(acc, types)]
    return tuple(acc) if isinstance(inst.type, TupleType) else acc[0]


# ---------------------------------------------------------------------------
# calls and tuples


@_register("call")
def _call(inst, ops, ctx):
    return ctx.call(str(inst.attrs["to_apply"]), ops)


@_register("tuple")
def _tuple(inst, ops, ctx):
    return tuple(ops)


@_register("get-tuple-element")
def _get_tuple_element(inst, ops, ctx):
    return ops[0][int(inst.attrs["index"])]

