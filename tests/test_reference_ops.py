"""Unit tests of the reference interpreter, op group by op group, with hand-computed
expectations. Modules are built directly in the IR, so these tests need no parser.
The XLA corner cases asserted here were checked against XLA:CPU (see
test_reference_vs_jax.py, which runs the same HLO on XLA)."""
from __future__ import annotations

import math
import warnings

import ml_dtypes
import numpy as np
import pytest

from runtime_skeleton.errors import EvalError
from runtime_skeleton.ir import (
    Computation, ConvDimLabels, Instruction, Literal, Module, PadDim, SliceDim, TensorType,
    TupleType, Window, WindowDim,
)
from runtime_skeleton.ir.dtypes import dtype
from runtime_skeleton.reference import OP_IMPLS, evaluate, evaluate_computation
from runtime_skeleton.reference.interpreter import check_argument

BF16 = ml_dtypes.bfloat16


# ---------------------------------------------------------------------------
# building modules


def T(s: str) -> TensorType:
    """'f32[2,3]' -> TensorType."""
    name, dims = s.rstrip("]").split("[")
    return TensorType(dtype(name), tuple(int(d) for d in dims.split(",") if d))


def _type_of(a: np.ndarray) -> TensorType:
    from runtime_skeleton.ir.dtypes import from_numpy

    return TensorType(from_numpy(a.dtype), tuple(a.shape))


def param(n: int, t: str | TensorType, name: str | None = None) -> Instruction:
    t = T(t) if isinstance(t, str) else t
    return Instruction(name or f"p{n}", "parameter", t, (), {"parameter_number": n})


def inst(name: str, opcode: str, t, *operands: str, **attrs) -> Instruction:
    if isinstance(t, str):
        t = T(t)
    elif isinstance(t, (list, tuple)):
        t = TupleType(tuple(T(e) for e in t))
    return Instruction(name, opcode, t, operands, attrs)


def const(name: str, t: str, value) -> Instruction:
    tt = T(t)
    return Instruction(name, "constant", tt, (), {"literal": Literal(tt.dtype, np.asarray(value))})


def module(*insts: Instruction, comps: tuple[Computation, ...] = ()) -> Module:
    entry = Computation("main", list(insts), insts[-1].name)
    return Module("m", {**{c.name: c for c in comps}, "main": entry}, "main")


def scalar_comp(name: str, opcode: str, dt: str) -> Computation:
    return Computation(name, [param(0, f"{dt}[]", "a"), param(1, f"{dt}[]", "b"),
                              inst("r", opcode, f"{dt}[]", "a", "b")], "r")


def run_op(opcode: str, result: str, *args, comps=(), **attrs) -> np.ndarray:
    """Evaluate one instruction ``opcode`` on ``args`` (numpy arrays)."""
    args = [np.asarray(a) for a in args]
    params = [param(i, _type_of(a)) for i, a in enumerate(args)]
    result_t = TupleType(tuple(T(e) for e in result)) if isinstance(result, tuple) else T(result)
    root = Instruction("r", opcode, result_t, tuple(p.name for p in params), attrs)
    out = evaluate(module(*params, root, comps=comps), args)
    return out if isinstance(result, tuple) else out[0]


def i8(*v):
    return np.array(v, np.int8)


def u8(*v):
    return np.array(v, np.uint8)


def f32(*v):
    return np.array(v, np.float32)


def bf16(*v):
    return np.array(v, BF16)


def same(got: np.ndarray, want: np.ndarray) -> None:
    """Equal values (NaN == NaN whatever its sign/payload; -0.0 != 0.0) with the same
    dtype and shape."""
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if got.dtype.kind not in "biu":
        nan = np.isnan(want.astype(np.float64))
        assert np.array_equal(np.isnan(got.astype(np.float64)), nan), f"\n got {got!r}\nwant {want!r}"
        got, want = np.where(nan, 0, got).astype(got.dtype), np.where(nan, 0, want).astype(want.dtype)
    assert got.tobytes() == want.tobytes(), f"\n got {got!r}\nwant {want!r}"


# ---------------------------------------------------------------------------
# integer arithmetic


def test_int_add_sub_mul_wrap():
    same(run_op("add", "s8[3]", i8(127, -128, 100), i8(1, -1, 100)), i8(-128, 127, -56))
    same(run_op("subtract", "u8[2]", u8(0, 5), u8(1, 6)), u8(255, 255))
    same(run_op("multiply", "s32[1]", np.array([65536], np.int32), np.array([65536], np.int32)),
         np.array([0], np.int32))
    big = np.array([2**62], np.int64)
    same(run_op("multiply", "s64[1]", big, np.array([4], np.int64)), np.array([0], np.int64))
    same(run_op("negate", "s8[2]", i8(-128, 5)), i8(-128, -5))
    same(run_op("abs", "s8[3]", i8(-128, -1, 127)), i8(-128, 1, 127))


def test_int_divide_truncates_and_corner_cases():
    a = i8(7, -7, 7, -7, -128, -128, 5, 0)
    b = i8(2, 2, -2, -2, -1, 0, 0, 0)
    same(run_op("divide", "s8[8]", a, b), i8(3, -3, -3, 3, -128, -1, -1, -1))
    same(run_op("remainder", "s8[8]", a, b), i8(1, -1, 1, -1, 0, -128, 5, 0))
    same(run_op("divide", "u8[3]", u8(7, 200, 9), u8(0, 0, 2)), u8(255, 255, 4))
    same(run_op("remainder", "u8[3]", u8(7, 200, 9), u8(0, 0, 2)), u8(7, 200, 1))
    s32 = np.iinfo(np.int32)
    same(run_op("divide", "s32[1]", np.array([s32.min], np.int32), np.array([-1], np.int32)),
         np.array([s32.min], np.int32))


def test_shifts_out_of_range():
    a = i8(-128, -127, 127, 5, -5, -5)
    b = i8(1, 7, 8, 9, -1, 3)  # -1 reads as 255: out of range
    same(run_op("shift-left", "s8[6]", a, b), i8(0, -128, 0, 0, 0, -40))
    same(run_op("shift-right-logical", "s8[6]", a, b), i8(64, 1, 0, 0, 0, 31))
    same(run_op("shift-right-arithmetic", "s8[6]", a, b), i8(-64, -1, 0, 0, -1, -1))
    ua, ub = u8(0x80, 0x81, 0x7F, 5, 5, 5), u8(1, 7, 8, 9, 255, 3)
    same(run_op("shift-left", "u8[6]", ua, ub), u8(0, 128, 0, 0, 0, 40))
    same(run_op("shift-right-logical", "u8[6]", ua, ub), u8(64, 1, 0, 0, 0, 0))
    # arithmetic shift of an unsigned type works on its signed view
    same(run_op("shift-right-arithmetic", "u8[6]", ua, ub), u8(192, 255, 0, 0, 0, 0))


def test_int_power():
    a = np.array([2, 3, -2, 1, -1, -1, 2, 0, 0, 3, 3], np.int32)
    b = np.array([10, 3, 3, -7, -3, -2, -1, 0, -1, 64, 65], np.int32)
    # XLA:CPU squares over the exponent's low 6 bits only: 3^64 -> 3^0, 3^65 -> 3^1
    want = np.array([1024, 27, -8, 1, -1, 1, 0, 1, 0, 1, 3], np.int32)
    same(run_op("power", "s32[11]", a, b), want)
    same(run_op("power", "s8[2]", i8(3, 2), i8(5, 7)), i8(-13, -128))  # 243 and 128 wrap
    # unsigned exponents >= 2^(bits-1) count as negative (XLA compares the exponent signed)
    same(run_op("power", "u8[4]", u8(1, 255, 255, 3), u8(200, 200, 201, 128)), u8(1, 1, 255, 0))


def test_int_unary_bit_ops():
    same(run_op("popcnt", "s8[4]", i8(-128, 127, 0, -1)), i8(1, 7, 0, 8))
    same(run_op("count-leading-zeros", "s8[4]", i8(-128, 127, 0, 1)), i8(0, 1, 8, 7))
    same(run_op("count-leading-zeros", "u64[2]", np.array([1, 2**40], np.uint64)), np.array([63, 23], np.uint64))
    same(run_op("not", "u8[2]", u8(0, 0x0F)), u8(255, 0xF0))
    same(run_op("not", "pred[2]", np.array([True, False])), np.array([False, True]))
    same(run_op("sign", "s8[3]", i8(-5, 0, 9)), i8(-1, 0, 1))
    same(run_op("xor", "s8[1]", i8(0x55), i8(0x0F)), i8(0x5A))
    same(run_op("and", "pred[2]", np.array([True, True]), np.array([True, False])), np.array([True, False]))
    same(run_op("or", "pred[2]", np.array([False, False]), np.array([True, False])), np.array([True, False]))


def test_no_numpy_warnings_leak():
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        run_op("add", "s8[1]", i8(127), i8(1))
        run_op("add", "s8[]", np.int8(127), np.int8(1))  # numpy scalars warn on overflow
        run_op("divide", "f32[2]", f32(1, 0), f32(0, 0))
        run_op("log", "f32[1]", f32(-1))
        run_op("convert", "s32[1]", f32(np.nan))


# ---------------------------------------------------------------------------
# float elementwise


def test_max_min_nan_and_signed_zero():
    a = f32(np.nan, 0.5, -0.0, 0.0, 2)
    b = f32(1, np.nan, 0.0, -0.0, np.nan)
    same(run_op("maximum", "f32[5]", a, b), f32(np.nan, np.nan, 0.0, 0.0, np.nan))
    same(run_op("minimum", "f32[5]", a, b), f32(np.nan, np.nan, -0.0, -0.0, np.nan))


def test_compare_nan_and_total_order():
    a = f32(np.nan, 1, np.nan)
    b = f32(1, np.nan, np.nan)
    for d in ("EQ", "LT", "LE", "GT", "GE"):
        same(run_op("compare", "pred[3]", a, b, direction=d), np.array([False] * 3))
    same(run_op("compare", "pred[3]", a, b, direction="NE"), np.array([True] * 3))
    x, y = f32(-0.0, -1, 1, np.nan), f32(0.0, -np.inf, np.inf, np.inf)
    same(run_op("compare", "pred[4]", x, y, direction="LT", type="TOTALORDER"),
         np.array([True, False, True, False]))
    same(run_op("compare", "pred[4]", x, y, direction="LT"), np.array([False, False, True, False]))
    same(run_op("compare", "pred[2]", u8(200, 1), u8(100, 2), direction="GT"), np.array([True, False]))


def test_sign_and_rounding():
    x = f32(np.nan, -0.0, 0.0, -3, 2.5, -2.5, 0.5, -0.5, 1.5, np.inf, 0.49999997)
    same(run_op("sign", "f32[11]", x), f32(np.nan, -0.0, 0.0, -1, 1, -1, 1, -1, 1, 1, 1))
    same(run_op("round-nearest-afz", "f32[11]", x), f32(np.nan, -0.0, 0.0, -3, 3, -3, 1, -1, 2, np.inf, 0))
    same(run_op("round-nearest-even", "f32[11]", x), f32(np.nan, -0.0, 0.0, -3, 2, -2, 0, -0.0, 2, np.inf, 0))
    same(run_op("floor", "f32[2]", f32(-0.5, 1.5)), f32(-1, 1))
    same(run_op("ceil", "f32[2]", f32(-0.5, 1.5)), f32(-0.0, 2))


@pytest.mark.parametrize("op, fn", [
    ("exponential", math.exp), ("exponential-minus-one", math.expm1), ("log", math.log),
    ("log-plus-one", math.log1p), ("sqrt", math.sqrt), ("rsqrt", lambda v: 1 / math.sqrt(v)),
    ("cbrt", lambda v: math.copysign(abs(v) ** (1 / 3), v)), ("tanh", math.tanh),
    ("logistic", lambda v: 1 / (1 + math.exp(-v))), ("sin", math.sin), ("cos", math.cos),
    ("tan", math.tan), ("erf", math.erf),
])
def test_f32_transcendentals_correctly_rounded(op, fn):
    x = f32(0.001, 0.3, 1.7, 5.5, 30.0)
    got = run_op(op, "f32[5]", x)
    same(got, np.array([fn(float(v)) for v in x]).astype(np.float32))


def test_special_float_values():
    same(run_op("is-finite", "pred[4]", f32(1, np.inf, -np.inf, np.nan)), np.array([True, False, False, False]))
    same(run_op("logistic", "f32[3]", f32(-1000, 1000, 0)), f32(0, 1, 0.5))
    same(run_op("erf", "f32[3]", f32(-np.inf, np.inf, -0.0)), f32(-1, 1, -0.0))
    same(run_op("atan2", "f32[3]", f32(1, -0.0, 0), f32(0, -1, 1)), f32(math.pi / 2, -math.pi, 0))
    same(run_op("divide", "f32[3]", f32(1, -1, 0), f32(0, 0, 0)), f32(np.inf, -np.inf, np.nan))
    same(run_op("remainder", "f32[2]", f32(-7.5, 7.5), f32(2, -2)), f32(-1.5, 1.5))
    same(run_op("power", "f32[3]", f32(np.nan, 2, -8), f32(0, 10, 1 / 3)), f32(1, 1024, np.nan))
    same(run_op("add", "f64[1]", np.array([0.1]), np.array([0.2])), np.array([0.1 + 0.2]))


def test_bf16_rounds_after_every_op():
    one, tiny = bf16(1, 1.0078125), bf16(2**-8, 2**-8)
    s = inst("s", "add", "bf16[2]", "p0", "p1")
    r = inst("r", "add", "bf16[2]", "s", "p1")
    out = evaluate(module(param(0, "bf16[2]"), param(1, "bf16[2]"), s, r), [one, tiny])[0]
    # 1 + 2^-8 is a tie that rounds to 1 each time; in f32 the sum would be 1 + 2^-7.
    # 1.0078125 + 2^-8 ties up to 1.015625 (even), then + 2^-8 ties back to 1.015625.
    same(out, bf16(1, 1.015625))
    # f32 intermediates: the product 1.5 * 1.5 = 2.25 is exact in f32, then rounds to bf16
    same(run_op("multiply", "bf16[1]", bf16(1.5), bf16(1.5)), bf16(2.25))
    same(run_op("exponential", "bf16[1]", bf16(1)), bf16(2.71875))


def test_f16_overflow_and_rounding():
    h = lambda *v: np.array(v, np.float16)  # noqa: E731
    same(run_op("add", "f16[2]", h(60000, 1), h(10000, 2**-11)), h(np.inf, 1))
    same(run_op("multiply", "f16[1]", h(300), h(300)), h(np.inf))


# ---------------------------------------------------------------------------
# convert and bitcast-convert


def test_convert_float_to_int_saturates_nan_to_zero():
    x = f32(np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7, 2147483520.0, -1.5, 300, -300)
    same(run_op("convert", "s32[11]", x), np.array(
        [0, 2**31 - 1, -2**31, 2**31 - 1, -2**31, 2, -2, 2147483520, -1, 300, -300], np.int32))
    same(run_op("convert", "u8[11]", x), u8(0, 255, 0, 255, 0, 2, 0, 255, 0, 255, 0))
    same(run_op("convert", "s8[11]", x), i8(0, 127, -128, 127, -128, 2, -2, 127, -1, 127, -128))
    same(run_op("convert", "u64[3]", np.array([1e20, -1.0, 9.3e18])),
         np.array([2**64 - 1, 0, 9300000000000000000], np.uint64))
    same(run_op("convert", "s64[2]", np.array([1e19, -1e19])), np.array([2**63 - 1, -2**63], np.int64))


def test_convert_int_and_pred():
    same(run_op("convert", "s8[3]", np.array([200, -129, 256], np.int32)), i8(-56, 127, 0))
    same(run_op("convert", "u8[2]", i8(-1, 5)), u8(255, 5))
    same(run_op("convert", "pred[4]", f32(0, -0.0, 0.5, np.nan)), np.array([False, False, True, True]))
    same(run_op("convert", "pred[2]", i8(0, -3)), np.array([False, True]))
    same(run_op("convert", "f32[2]", np.array([True, False])), f32(1, 0))
    same(run_op("convert", "s32[2]", np.array([True, False])), np.array([1, 0], np.int32))


def test_convert_to_bf16_rounds_to_nearest_even():
    x = f32(1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, 3.4e38)
    same(run_op("convert", "bf16[4]", x), bf16(1, 1 + 2**-6, 1 + 2**-7, np.inf))
    same(run_op("convert", "f16[2]", f32(1 + 2**-11, 70000)), np.array([1, np.inf], np.float16))


def test_bitcast_convert_width_changes_are_little_endian():
    # u8[1,2,2] -> bf16[1,2]: byte 0 is the low byte
    b = np.array([[[0x80, 0x3F], [0x00, 0xC0]]], np.uint8)
    same(run_op("bitcast-convert", "bf16[1,2]", b), bf16(1.0, -2.0).reshape(1, 2))
    same(run_op("bitcast-convert", "u8[2,2]", bf16(1.0, -2.0)), u8(0x80, 0x3F, 0x00, 0xC0).reshape(2, 2))
    same(run_op("bitcast-convert", "u32[1]", u8(1, 2, 3, 4).reshape(1, 4)), np.array([0x04030201], np.uint32))
    same(run_op("bitcast-convert", "s32[1]", f32(1.0)), np.array([0x3F800000], np.int32))
    same(run_op("bitcast-convert", "u16[2]", np.array(1.0, np.float32)),
         np.array([0x0000, 0x3F80], np.uint16))


# ---------------------------------------------------------------------------
# shapes


def test_iota_broadcast_reshape_transpose():
    same(run_op("iota", "s32[2,3]", iota_dimension=1), np.array([[0, 1, 2]] * 2, np.int32))
    same(run_op("iota", "f32[2,2]", iota_dimension=0), np.array([[0, 0], [1, 1]], np.float32))
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    same(run_op("broadcast", "s32[2,4,3]", x, dimensions=(0, 2)), np.broadcast_to(x[:, None, :], (2, 4, 3)))
    same(run_op("broadcast", "s32[3,2]", x, dimensions=(1, 0)), x.T.copy())  # a transposing broadcast
    same(run_op("broadcast", "s32[2]", np.int32(7), dimensions=()), np.array([7, 7], np.int32))
    same(run_op("reshape", "s32[3,2]", x), x.reshape(3, 2))
    y = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    same(run_op("transpose", "s32[4,2,3]", y, dimensions=(2, 0, 1)), np.ascontiguousarray(y.transpose(2, 0, 1)))


def test_slice_reverse_concatenate():
    x = np.arange(20, dtype=np.int32).reshape(4, 5)
    same(run_op("slice", "s32[2,2]", x, slice=(SliceDim(1, 4, 2), SliceDim(0, 5, 3))),
         np.array([[5, 8], [15, 18]], np.int32))
    same(run_op("reverse", "s32[4,5]", x, dimensions=(0, 1)), x[::-1, ::-1].copy())
    same(run_op("concatenate", "s32[4,7]", x, x[:, :2].copy(), dimensions=(1,)),
         np.concatenate([x, x[:, :2]], axis=1))


def test_dynamic_slice_clamps_start_indices():
    x = np.arange(10, dtype=np.int32)
    for start, want in ((3, [3, 4, 5, 6]), (8, [6, 7, 8, 9]), (-5, [0, 1, 2, 3]), (100, [6, 7, 8, 9])):
        same(run_op("dynamic-slice", "s32[4]", x, np.int32(start), dynamic_slice_sizes=(4,)),
             np.array(want, np.int32))
    y = np.arange(12, dtype=np.int32).reshape(3, 4)
    same(run_op("dynamic-slice", "s32[2,2]", y, np.uint32(5), np.int64(-1), dynamic_slice_sizes=(2, 2)),
         np.array([[4, 5], [8, 9]], np.int32))


def test_dynamic_update_slice_clamps():
    x = np.zeros(6, np.int32)
    upd = np.array([1, 2, 3], np.int32)
    same(run_op("dynamic-update-slice", "s32[6]", x, upd, np.int32(5)), np.array([0, 0, 0, 1, 2, 3], np.int32))
    same(run_op("dynamic-update-slice", "s32[6]", x, upd, np.int32(-2)), np.array([1, 2, 3, 0, 0, 0], np.int32))
    same(run_op("dynamic-update-slice", "s32[6]", x, upd, np.int32(1)), np.array([0, 1, 2, 3, 0, 0], np.int32))


def test_pad_negative_and_interior():
    x = np.array([1, 2, 3], np.int32)
    v = np.int32(0)
    same(run_op("pad", "s32[7]", x, v, padding=(PadDim(1, 1, 1),)), np.array([0, 1, 0, 2, 0, 3, 0], np.int32))
    same(run_op("pad", "s32[4]", x, v, padding=(PadDim(-1, 0, 1),)), np.array([0, 2, 0, 3], np.int32))
    same(run_op("pad", "s32[4]", x, v, padding=(PadDim(-2, -1, 2),)), np.array([0, 2, 0, 0], np.int32))
    same(run_op("pad", "s32[5]", x, np.int32(9), padding=(PadDim(2, 0, 0),)), np.array([9, 9, 1, 2, 3], np.int32))
    y = np.arange(4, dtype=np.float32).reshape(2, 2)
    same(run_op("pad", "f32[1,5]", y, np.float32(-1), padding=(PadDim(0, -1), PadDim(1, 0, 2))),
         f32(-1, 0, -1, -1, 1).reshape(1, 5))
    same(run_op("pad", "s32[2]", np.zeros(0, np.int32), np.int32(4), padding=(PadDim(1, 1, 3),)),
         np.array([4, 4], np.int32))


def test_select_clamp_tuple_call():
    a, b = f32(1, 2, 3), f32(-1, -2, -3)
    same(run_op("select", "f32[3]", np.array([True, False, True]), a, b), f32(1, -2, 3))
    same(run_op("select", "f32[3]", np.bool_(False), a, b), b)
    same(run_op("clamp", "f32[4]", np.float32(0), f32(-1, 0.5, 2, np.nan), np.float32(1)), f32(0, 0.5, 1, np.nan))
    same(run_op("clamp", "s8[3]", i8(0, 0, 0), i8(-5, 5, 50), i8(10, 1, 10)), i8(0, 1, 10))
    out = run_op("tuple", ("f32[3]", "f32[3]"), a, b)
    same(out[0], a)
    same(out[1], b)
    gte = evaluate(module(param(0, "f32[3]"), param(1, "f32[3]"),
                          inst("t", "tuple", ("f32[3]", "f32[3]"), "p0", "p1"),
                          inst("g", "get-tuple-element", "f32[3]", "t", index=1)), [a, b])
    same(gte[0], b)
    add = Computation("addv", [param(0, "f32[3]", "a"), param(1, "f32[3]", "b"),
                               inst("r", "add", "f32[3]", "a", "b")], "r")
    same(run_op("call", "f32[3]", a, a, comps=(add,), to_apply="addv"), f32(2, 4, 6))


def test_nested_tuple_results_are_flattened():
    m = module(param(0, "s32[2]"), const("c", "s32[]", 7),
               inst("t", "tuple", ("s32[2]", "s32[]"), "p0", "c"),
               Instruction("r", "tuple", TupleType((TupleType((T("s32[2]"), T("s32[]"))), T("s32[2]"))), ("t", "p0")))
    out = evaluate(m, [np.array([1, 2])])
    assert [o.tolist() for o in out] == [[1, 2], 7, [1, 2]]
    assert all(o.flags.writeable for o in out)


# ---------------------------------------------------------------------------
# dot


def test_dot_general_batch_and_contracting_dims():
    rng = np.random.default_rng(0)
    lhs = rng.standard_normal((2, 3, 4)).astype(np.float32)  # [b, k, m]
    rhs = rng.standard_normal((4, 2, 3)).astype(np.float32)  # [n, b, k]
    got = run_op("dot", "f32[2,4,4]", lhs, rhs, lhs_batch_dims=(0,), rhs_batch_dims=(1,),
                 lhs_contracting_dims=(1,), rhs_contracting_dims=(2,))
    want = np.einsum("bkm,nbk->bmn", lhs.astype(np.float64), rhs.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert got.dtype == np.float32


def test_dot_int8_accumulates_in_int32():
    a = np.full((2, 4), 100, np.int8)
    b = np.full((4, 3), -100, np.int8)
    got = run_op("dot", "s32[2,3]", a, b, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    same(got, np.full((2, 3), -40000, np.int32))
    u = np.full((1, 2), 200, np.uint8)
    same(run_op("dot", "s32[1,1]", u, u.T.copy(), lhs_contracting_dims=(1,), rhs_contracting_dims=(0,)),
         np.array([[80000]], np.int32))


def test_dot_bf16_inputs_f32_result():
    a = bf16(1, 2**-8, 2**-8, 2**-8).reshape(1, 4)
    b = bf16(1, 1, 1, 1).reshape(4, 1)
    kw = dict(lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    same(run_op("dot", "f32[1,1]", a, b, **kw), f32(1 + 3 * 2**-8).reshape(1, 1))
    same(run_op("dot", "bf16[1,1]", a, b, **kw), bf16(1 + 2**-6).reshape(1, 1))  # f32 sum, one rounding


# ---------------------------------------------------------------------------
# convolution: checked against a direct loop over the definition


def naive_conv(x, w, *, stride, pad, lhs_dil, rhs_dil, groups=1, batch_groups=1):
    """lhs [N, C, H, W], rhs [O, I, KH, KW] -> [N', O, OH, OW], by index arithmetic on the
    undilated input (no padding/dilation arrays): the definition, not the algorithm."""
    n, c, h, wd = x.shape
    o, i, kh, kw = w.shape

    def out_size(size, k, d):
        dilated = (size - 1) * lhs_dil[d] + 1 + pad[d][0] + pad[d][1]
        span = (k - 1) * rhs_dil[d] + 1
        return max(0, (dilated - span) // stride[d] + 1)

    oh, ow = out_size(h, kh, 0), out_size(wd, kw, 1)
    nb = n // batch_groups
    out = np.zeros((nb, o, oh, ow))
    for b in range(nb):
        for f in range(o):
            g = f // (o // groups)
            bg = f // (o // batch_groups)
            for y in range(oh):
                for xx in range(ow):
                    acc = 0.0
                    for ci in range(i):
                        for ky in range(kh):
                            for kx in range(kw):
                                py = y * stride[0] + ky * rhs_dil[0] - pad[0][0]
                                px = xx * stride[1] + kx * rhs_dil[1] - pad[1][0]
                                if py % lhs_dil[0] or px % lhs_dil[1]:
                                    continue
                                sy, sx = py // lhs_dil[0], px // lhs_dil[1]
                                if 0 <= sy < h and 0 <= sx < wd:
                                    acc += x[bg * nb + b, g * i + ci, sy, sx] * w[f, ci, ky, kx]
                    out[b, f, y, xx] = acc
    return out


def conv_module(xs, ws, out_shape, dims, labels="bf01_oi01->bf01", out_dt="f32", **attrs):
    lhs, rhs = labels.split("_")[0], labels.split("_")[1].split("->")[0]
    window = Window(tuple(WindowDim(**d) for d in dims))
    return module(param(0, f"f32[{','.join(map(str, xs))}]"), param(1, f"f32[{','.join(map(str, ws))}]"),
                  inst("r", "convolution", f"{out_dt}[{','.join(map(str, out_shape))}]", "p0", "p1",
                       dim_labels=ConvDimLabels(lhs, rhs, labels.split("->")[1]), window=window, **attrs))


@pytest.mark.parametrize("case", [
    dict(stride=(1, 1), pad=((0, 0), (0, 0)), lhs_dil=(1, 1), rhs_dil=(1, 1)),
    dict(stride=(2, 1), pad=((1, 1), (2, 0)), lhs_dil=(1, 1), rhs_dil=(1, 1)),
    dict(stride=(1, 2), pad=((1, 0), (0, 1)), lhs_dil=(1, 1), rhs_dil=(2, 2)),
    dict(stride=(1, 1), pad=((2, 2), (1, 1)), lhs_dil=(2, 3), rhs_dil=(1, 1)),
    dict(stride=(1, 1), pad=((-1, 1), (0, -1)), lhs_dil=(1, 1), rhs_dil=(1, 1)),
    dict(stride=(2, 2), pad=((1, 1), (1, 1)), lhs_dil=(1, 1), rhs_dil=(1, 1), groups=2),
    dict(stride=(1, 1), pad=((0, 0), (0, 0)), lhs_dil=(1, 1), rhs_dil=(1, 1), groups=4),
    dict(stride=(1, 1), pad=((1, 0), (0, 0)), lhs_dil=(1, 1), rhs_dil=(1, 1), batch_groups=2),
])
def test_convolution_matches_definition(case):
    rng = np.random.default_rng(1)
    groups, bgroups = case.get("groups", 1), case.get("batch_groups", 1)
    x = rng.integers(-3, 4, (2 * bgroups, 4, 5, 6)).astype(np.float32)
    w = rng.integers(-3, 4, (4 * bgroups if bgroups > 1 else 4, 4 // groups, 3, 2)).astype(np.float32)
    want = naive_conv(x, w, **case)
    dims = [dict(size=k, stride=s, pad_lo=p[0], pad_hi=p[1], lhs_dilate=ld, rhs_dilate=rd)
            for k, s, p, ld, rd in zip(w.shape[2:], case["stride"], case["pad"], case["lhs_dil"], case["rhs_dil"])]
    m = conv_module(x.shape, w.shape, want.shape, dims, feature_group_count=groups, batch_group_count=bgroups)
    same(evaluate(m, [x, w])[0], want.astype(np.float32))  # small integers: exact


def test_convolution_layouts_and_reversal():
    rng = np.random.default_rng(2)
    x = rng.integers(-3, 4, (1, 5, 6, 3)).astype(np.float32)  # b01f
    w = rng.integers(-3, 4, (3, 2, 3, 4)).astype(np.float32)  # 01io
    dims = [dict(size=3, pad_lo=1, pad_hi=1, reversal=True), dict(size=2)]
    m = conv_module(x.shape, w.shape, (1, 5, 5, 4), dims, labels="b01f_01io->b01f")
    got = evaluate(m, [x, w])[0]
    want = naive_conv(x.transpose(0, 3, 1, 2), w[::-1].transpose(3, 2, 0, 1), stride=(1, 1),
                      pad=((1, 1), (0, 0)), lhs_dil=(1, 1), rhs_dil=(1, 1))
    same(got, want.transpose(0, 2, 3, 1).astype(np.float32))


def test_convolution_int8_to_int32():
    x = np.full((1, 1, 2, 2), 100, np.int8)
    w = np.full((1, 1, 2, 2), 100, np.int8)
    m = module(param(0, "s8[1,1,2,2]"), param(1, "s8[1,1,2,2]"),
               inst("r", "convolution", "s32[1,1,1,1]", "p0", "p1",
                    dim_labels=ConvDimLabels("bf01", "oi01", "bf01"),
                    window=Window((WindowDim(2), WindowDim(2)))))
    same(evaluate(m, [x, w])[0], np.full((1, 1, 1, 1), 40000, np.int32))


# ---------------------------------------------------------------------------
# reductions


def test_reduce_sum_and_empty():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    add = scalar_comp("add", "add", "f32")
    same(run_op("reduce", "f32[4]", x, np.float32(0), comps=(add,), dimensions=(0,), to_apply="add"),
         f32(12, 15, 18, 21))
    same(run_op("reduce", "f32[]", x, np.float32(1), comps=(add,), dimensions=(0, 1), to_apply="add"),
         np.array(67, np.float32))
    mx = scalar_comp("max", "maximum", "f32")
    same(run_op("reduce", "f32[3]", np.zeros((3, 0), np.float32), np.float32(-np.inf), comps=(mx,),
                dimensions=(1,), to_apply="max"), f32(-np.inf, -np.inf, -np.inf))
    same(run_op("reduce", "f32[2]", f32(1, np.nan, 3, 4).reshape(2, 2), np.float32(-np.inf), comps=(mx,),
                dimensions=(1,), to_apply="max"), f32(np.nan, 4))
    same(run_op("reduce", "s8[1]", i8(100, 100, 100).reshape(1, 3), np.int8(0),
                comps=(scalar_comp("addi", "add", "s8"),), dimensions=(1,), to_apply="addi"), i8(44))


def test_reduce_bf16_rounds_each_step():
    x = bf16(1, 2**-8, 2**-8, 2**-8).reshape(1, 4)
    add = scalar_comp("add", "add", "bf16")
    same(run_op("reduce", "bf16[1]", x, bf16(0)[0], comps=(add,), dimensions=(1,), to_apply="add"), bf16(1))


def argmax_comp() -> Computation:
    """XLA's argmax reducer as jax emits it: ties pick the smaller index, NaN wins."""
    return Computation("argmax", [
        param(0, "f32[]", "av"), param(1, "s32[]", "ai"), param(2, "f32[]", "bv"), param(3, "s32[]", "bi"),
        inst("gt", "compare", "pred[]", "av", "bv", direction="GT"),
        inst("nan", "compare", "pred[]", "av", "av", direction="NE"),
        inst("take", "or", "pred[]", "gt", "nan"),
        inst("v", "select", "f32[]", "take", "av", "bv"),
        inst("eq", "compare", "pred[]", "av", "bv", direction="EQ"),
        inst("lt", "compare", "pred[]", "ai", "bi", direction="LT"),
        inst("tie", "and", "pred[]", "eq", "lt"),
        inst("takei", "or", "pred[]", "take", "tie"),
        inst("i", "select", "s32[]", "takei", "ai", "bi"),
        inst("r", "tuple", ("f32[]", "s32[]"), "v", "i"),
    ], "r")


def test_variadic_reduce_argmax():
    x = np.array([[3, 7, 7, 1], [np.nan, 2, 9, 9], [-1, -1, -1, -1]], np.float32)
    idx = np.broadcast_to(np.arange(4, dtype=np.int32), (3, 4)).copy()
    vals, arg = run_op("reduce", ("f32[3]", "s32[3]"), x, idx, np.float32(-np.inf), np.int32(0),
                       comps=(argmax_comp(),), dimensions=(1,), to_apply="argmax")
    same(vals, f32(7, np.nan, -1))
    same(arg, np.array([1, 0, 0], np.int32))


def test_reduce_with_non_elementwise_reducer_falls_back_to_scalar_loop():
    # a reducer containing a call is not vectorized; the scalar loop must agree
    inner = scalar_comp("inner", "add", "s32")
    outer = Computation("outer", [param(0, "s32[]", "a"), param(1, "s32[]", "b"),
                                  inst("r", "call", "s32[]", "a", "b", to_apply="inner")], "r")
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    same(run_op("reduce", "s32[2]", x, np.int32(0), comps=(inner, outer), dimensions=(1,), to_apply="outer"),
         np.array([3, 12], np.int32))


def test_reduce_window_max_pool_and_padding_skipped():
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    mx = scalar_comp("max", "maximum", "f32")
    win = Window((WindowDim(2, 2), WindowDim(2, 2)))
    same(run_op("reduce-window", "f32[2,2]", x, np.float32(-np.inf), comps=(mx,), window=win, to_apply="max"),
         f32(5, 7, 13, 15).reshape(2, 2))
    # cumulative sum as jax lowers it: window 4, pad 3 low; init 10 is folded in once
    # per output, padding elements are skipped (not treated as init values)
    add = scalar_comp("add", "add", "f32")
    win = Window((WindowDim(4, 1, 3, 0),))
    same(run_op("reduce-window", "f32[4]", f32(1, 2, 3, 4), np.float32(10), comps=(add,), window=win,
                to_apply="add"), f32(11, 13, 16, 20))


def test_reduce_window_base_and_window_dilation():
    add = scalar_comp("add", "add", "s32")
    x = np.array([1, 2, 3], np.int32)
    # base dilation 2: [1 _ 2 _ 3]; window 2 stride 1 sees one element each (holes skipped)
    win = Window((WindowDim(2, 1, 0, 0, lhs_dilate=2),))
    same(run_op("reduce-window", "s32[4]", x, np.int32(100), comps=(add,), window=win, to_apply="add"),
         np.array([101, 102, 102, 103], np.int32))
    win = Window((WindowDim(2, 1, 0, 0, rhs_dilate=2),))
    same(run_op("reduce-window", "s32[1]", x, np.int32(0), comps=(add,), window=win, to_apply="add"),
         np.array([4], np.int32))


# ---------------------------------------------------------------------------
# interpreter behaviour and errors


def test_every_op_is_implemented():
    from runtime_skeleton.ir.ops import ALL_OPS

    assert ALL_OPS - {"parameter"} <= set(OP_IMPLS)


def test_arguments_checked_and_converted():
    m = module(param(0, "bf16[2]", "x"), inst("r", "add", "bf16[2]", "x", "x"))
    same(evaluate(m, [[1 + 2**-8, 3.0]])[0], bf16(2, 6))  # rounded to nearest even on the way in
    with pytest.raises(EvalError, match=r"parameter 0 \('x'\).*bf16\[2\].*\(3\)"):
        evaluate(m, [np.zeros(3)])
    with pytest.raises(EvalError, match="takes 1 arguments, got 2"):
        evaluate(m, [np.zeros(2), np.zeros(2)])
    mi = module(param(0, "s8[2]", "x"), inst("r", "add", "s8[2]", "x", "x"))
    same(evaluate(mi, [[1, -2]])[0], i8(2, -4))
    with pytest.raises(EvalError, match="cannot convert"):
        evaluate(mi, [[1.5, 2]])
    with pytest.raises(EvalError, match="cannot convert"):
        evaluate(mi, [[300, 2]])
    assert check_argument(np.array([1, 0]), T("pred[2]"), "x").dtype == np.bool_
    same(check_argument(bf16(1.5, -2), T("f16[2]"), "x"), np.array([1.5, -2], np.float16))  # by value
    with pytest.raises(EvalError, match="cannot convert int64 values to u64"):
        check_argument(np.array([-1]), T("u64[1]"), "x")
    with pytest.raises(EvalError, match="cannot convert float64 values to s64"):
        check_argument(np.array([2.0**63]), T("s64[1]"), "x")


def test_unsupported_op_is_named():
    m = module(param(0, "f32[2]"), inst("r", "sort", "f32[2]", "p0"))
    with pytest.raises(EvalError, match="'sort'"):
        evaluate(m, [f32(1, 2)])


def test_shape_bug_is_reported_not_hidden():
    m = module(param(0, "f32[2]"), inst("r", "reshape", "f32[3]", "p0"))
    with pytest.raises(EvalError, match="reshape 'r'"):
        evaluate(m, [f32(1, 2)])


def test_evaluate_computation_returns_tuple_value():
    m = module(param(0, "f32[2]"), inst("t", "tuple", ("f32[2]", "f32[2]"), "p0", "p0"))
    v = evaluate_computation(m.entry_computation, m, [f32(1, 2)])
    assert isinstance(v, tuple) and len(v) == 2
