"""The reference interpreter against XLA:CPU.

Part 1: jax functions, lowered with ``jax.jit(f).lower(*args).as_text(dialect="hlo")``,
parsed by actgen's HLO parser, evaluated by the reference interpreter and compared
with running the jitted function on the same inputs.

Part 2: hand-written HLO for corner cases jax cannot express directly (integer
power, arithmetic shift of unsigned types, reduce-window with a non-identity init,
bf16 rounding after every op, ...). The same text is compiled by XLA itself (through
jax's bundled XLA client) and by actgen; both must agree.

Part 3: every elementwise op, compare and convert on 512 random operands (with edge
values: 0, +-1, INT_MIN/MAX, shift amounts around the bit width, NaN, +-inf, +-0, ties)
per element type, again against XLA itself.

Integers and pred must match exactly. Float tolerances are per test class, see TOL.
"""
from __future__ import annotations

import functools
import math
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

from runtime_skeleton.hlo import parse_module
from runtime_skeleton.reference import evaluate

BF16 = ml_dtypes.bfloat16

# ---------------------------------------------------------------------------
# tolerances
#
# An element passes when |got - want| <= rtol * |want| + atol * max(1, max|want|) (in f64).
# The atol term is scaled by the output's magnitude because values that come out of a sum
# by cancellation carry an error proportional to the terms, not to themselves.
#
# exact   bitwise equal (NaN positions equal): integers, pred, data movement, and float ops
#         IEEE defines exactly (+ - * / sqrt, min/max, compare, convert, rounding) when no
#         mul feeds an add: XLA:CPU contracts x*y+z into an FMA (one rounding, not two).
# ulp     elementwise float chains. f32: XLA's polynomial exp/log/tanh/erf/... are within
#         1.5 ulp (2^-23 ~ 1.2e-7 relative) of the correctly rounded result the reference
#         gives (measured), and FMA contraction changes a*b-c by <= 1/2 ulp of a*b, which the
#         magnitude-scaled atol absorbs; 1e-6 (~8 ulp) leaves a 4x margin while a wrong op or
#         constant is off by >= 1e-3. bf16/f16: both sides round every op to the narrow type
#         from f32, so results agree unless an f32-ulp difference straddles a rounding tie:
#         1 ulp of the narrow type (2^-7 for bf16, 2^-10 for f16, relative, worst case).
# sum     dot/conv/reduce: XLA sums in another order. Reordering n terms changes an f32 sum
#         by at most ~n eps * (sum of |terms|) <= 64 * 2^-23 * scale ~ 7.6e-6 * scale for the
#         <= 64-term sums here: 1e-5. bf16/f16 results are f32 sums rounded once: 1 ulp.
TOL: dict[str, dict[str, tuple[float, float]]] = {
    "exact": {},
    "ulp": {"float32": (1e-6, 1e-6), "bfloat16": (2.0**-7, 2.0**-7), "float16": (2.0**-10, 2.0**-10),
            "float64": (1e-13, 1e-13)},
    "sum": {"float32": (1e-5, 1e-5), "bfloat16": (2.0**-7, 2.0**-7), "float16": (2.0**-10, 2.0**-10),
            "float64": (1e-12, 1e-12)},
}


def assert_matches(got: np.ndarray, want: np.ndarray, tol: str, what: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind in "biu":
        bad = np.argwhere(got != want)
        assert not len(bad), (f"{what}: {len(bad)} elements differ, first at {bad[0].tolist()}: "
                              f"got {got[tuple(bad[0])]}, want {want[tuple(bad[0])]}")
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w)), f"{what}: NaN positions differ\n got {got}\nwant {want}"
    ok = ~np.isnan(w)
    g, w = g[ok], w[ok]
    if tol == "exact" or want.dtype.name not in TOL[tol]:
        bad = (g != w) | (np.signbit(g) != np.signbit(w))
        assert not bad.any(), (f"{what}: {int(bad.sum())} elements differ; "
                               f"first: got {g[bad][0]!r}, want {w[bad][0]!r}")
        return
    inf = np.isinf(w)
    assert np.array_equal(g[inf], w[inf]), f"{what}: infinities differ"
    g, w = g[~inf], w[~inf]
    if not w.size:
        return
    rtol, atol = TOL[tol][want.dtype.name]
    err = np.abs(g - w)
    bound = rtol * np.abs(w) + atol * max(1.0, float(np.abs(w).max()))
    bad = err > bound
    assert not bad.any(), (f"{what}: {int(bad.sum())}/{w.size} elements beyond {tol} tolerance; worst "
                           f"got {g[np.argmax(err - bound)]!r} want {w[np.argmax(err - bound)]!r}")


def check_outputs(got: list[np.ndarray], want: list[np.ndarray], tol: str, name: str) -> None:
    assert len(got) == len(want), f"{name}: {len(got)} outputs, XLA gave {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        assert_matches(g, w, tol, f"{name} out{i}")


# ---------------------------------------------------------------------------
# part 1: jax functions

RNG = np.random.default_rng(0)


def normal(*shape, dtype=np.float32, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def ints(*shape, lo=-100, hi=100, dtype=np.int32):
    return RNG.integers(lo, hi, size=shape, endpoint=True).astype(dtype)


def with_specials(x: np.ndarray) -> np.ndarray:
    """x with NaN, +-inf, +-0, huge and tiny values at its start. No subnormals: XLA:CPU
    runs with denormals flushed to zero (in most ops, not all), the reference keeps
    IEEE gradual underflow."""
    flat = x.reshape(-1).copy()
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -1e30, 1e-30], np.float32)
    n = min(len(flat), len(specials))
    flat[:n] = specials[:n].astype(x.dtype)
    return flat.reshape(x.shape)


I32 = np.iinfo(np.int32)


@dataclass
class Case:
    name: str
    fn: Callable[..., Any]
    args: tuple
    tol: str = "exact"
    static: dict = field(default_factory=dict)


def _gelu_tanh(x):
    return jax.nn.gelu(x, approximate=True)


def _gelu_erf(x):
    return jax.nn.gelu(x, approximate=False)


def _layernorm(x, g, b):
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mu), axis=-1, keepdims=True)
    return (x - mu) * lax.rsqrt(var + 1e-5) * g + b


def _conv(x, w, **kw):
    return lax.conv_general_dilated(x, w, **kw)


def _x_bf16(*shape):
    return normal(*shape).astype(BF16)


CASES = [
    # --- elementwise f32
    Case("f32_arith", lambda x, y: ((x + y) * x - y / (x - 0.5), x * x - y, -x),
         (normal(4, 8), normal(4, 8)), "ulp"),  # XLA contracts x*y-z into an FMA
    Case("f32_arith_specials", lambda x, y: (x + y, x * y, x / y, x - y, jnp.sqrt(x)),
         (with_specials(normal(16)), with_specials(normal(16))[::-1].copy())),
    Case("f32_transcendental", lambda x: (jnp.exp(x), jnp.log(jnp.abs(x) + 0.1), jnp.tanh(x), jnp.expm1(x),
                                           jnp.log1p(jnp.abs(x)), lax.rsqrt(jnp.abs(x) + 0.1), jnp.cbrt(x),
                                           lax.erf(x), jax.nn.sigmoid(x), jnp.tan(x * 0.5)),
         (normal(64, scale=2.0),), "ulp"),
    Case("f32_sin_cos", lambda x: (jnp.sin(x), jnp.cos(x)), (normal(64, scale=2.0),), "ulp"),
    Case("f32_binary_transcendental", lambda x, y: (jnp.arctan2(x, y), jnp.power(jnp.abs(x) + 0.5, y)),
         (normal(64), normal(64)), "ulp"),
    Case("f32_rounding_sign", lambda x: (jnp.floor(x), jnp.ceil(x), jnp.round(x),
                                          lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO), jnp.sign(x),
                                          jnp.abs(x), jnp.isfinite(x)),
         (with_specials(np.array([0.5, -0.5, 1.5, -2.5, 2.5, 0.49999997, -7.2, 3.7] * 3, np.float32)),)),
    Case("f32_max_min_nan", lambda x, y: (jnp.maximum(x, y), jnp.minimum(x, y), lax.rem(x, y)),
         (with_specials(normal(16)), normal(16))),
    Case("f32_compare_select", lambda x, y: (x < y, x >= y, x == y, x != y, jnp.where(x > y, x, y * 2)),
         (with_specials(normal(16)), with_specials(normal(16)))),
    Case("f32_clamp", lambda x, lo, hi: (lax.clamp(-0.5, x, 0.5), lax.clamp(lo, x, hi), jnp.clip(x, -1, 1)),
         (with_specials(normal(16)), normal(16) - 1, normal(16) + 1)),
    # --- bf16 / f16 elementwise
    Case("bf16_arith", lambda x, y: (x + y, x * y - x, (x - y) / (y + 3), x * x * x + y),
         (_x_bf16(64), _x_bf16(64))),
    Case("bf16_transcendental", lambda x: (jnp.exp(x), jnp.tanh(x), jnp.log(jnp.abs(x) + 1), jax.nn.sigmoid(x)),
         (_x_bf16(64),), "ulp"),
    # "ulp": XLA:CPU since jax 0.10 keeps a fused f16 chain's intermediates in f32 (x * y - x is
    # rounded once), while the reference rounds after every op as HLO's semantics say
    Case("f16_arith", lambda x, y: (x + y, x * y - x, (x - y) / (y + 3), jnp.sqrt(jnp.abs(x)) * y),
         (normal(64, dtype=np.float16), normal(64, dtype=np.float16)), "ulp"),
    Case("f16_transcendental", lambda x: (jnp.exp(x), jnp.tanh(x), jax.nn.sigmoid(x)),
         (normal(64, dtype=np.float16),), "ulp"),
    # --- integers
    Case("int32_wrap", lambda x, y: (x + y, x * y, x - y, -x, jnp.abs(x)),
         (np.array([I32.max, I32.min, 65536, -65536, 7, I32.min], np.int32),
          np.array([1, -1, 65536, 65536, -3, -1], np.int32))),
    Case("int8_wrap", lambda x, y: (x + y, x * y, x - y, -x),
         (ints(32, lo=-128, hi=127, dtype=np.int8), ints(32, lo=-128, hi=127, dtype=np.int8))),
    Case("int_div_rem", lambda x, y: (lax.div(x, y), lax.rem(x, y)),
         (np.array([7, -7, 7, -7, I32.min, I32.min, 5, 0, 9, -9], np.int32),
          np.array([2, 2, -2, -2, -1, 0, 0, 0, 3, 4], np.int32))),
    Case("uint_div_rem", lambda x, y: (lax.div(x, y), lax.rem(x, y)),
         (np.array([7, 200, 0, 255], np.uint8), np.array([0, 0, 0, 16], np.uint8))),
    Case("shifts", lambda x, s: (lax.shift_left(x, s), lax.shift_right_logical(x, s),
                                 lax.shift_right_arithmetic(x, s)),
         (np.array([-5, -5, -5, 1, I32.min, 12345, -1, 3], np.int32),
          np.array([1, 31, 32, 33, 1, -1, 100, 0], np.int32))),
    Case("shifts_u8", lambda x, s: (lax.shift_left(x, s), lax.shift_right_logical(x, s)),
         (np.array([0x80, 0x81, 0x7F, 5, 5], np.uint8), np.array([1, 7, 8, 9, 255], np.uint8))),
    Case("bit_ops", lambda x, y: (x & y, x | y, x ^ y, ~x, lax.population_count(x), lax.clz(x),
                                  jnp.logical_and(x > 0, y > 0), jnp.logical_not(x > y)),
         (ints(32, lo=I32.min, hi=I32.max), ints(32, lo=I32.min, hi=I32.max))),
    Case("integer_pow", lambda x: (lax.integer_pow(x, 3), lax.integer_pow(x, 7)), (ints(16, lo=-50, hi=50),)),
    # --- converts
    Case("convert_float_to_int", lambda x: (x.astype(jnp.int32), x.astype(jnp.uint8), x.astype(jnp.int8),
                                            x.astype(jnp.uint32), x.astype(jnp.int16)),
         (np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7, 2147483520.0, -1.5, 300, -300, 255.9,
                    -128.9, 65535.5], np.float32),)),
    Case("convert_misc", lambda x, i: (x.astype(jnp.bfloat16), x.astype(jnp.float16), x.astype(jnp.bool_),
                                       i.astype(jnp.int8), i.astype(jnp.uint16), i.astype(jnp.float32),
                                       (i > 0).astype(jnp.float32), i.astype(jnp.bfloat16)),
         (with_specials(np.concatenate([normal(24), np.float32([1 + 2**-8, 1 + 3 * 2**-8, 70000])])),
          np.concatenate([ints(24, lo=-300, hi=300), np.int32([2**24 + 1, 2**24 + 3, I32.max])]))),
    Case("bitcast_convert", lambda b, x: (lax.bitcast_convert_type(b, jnp.bfloat16),
                                          lax.bitcast_convert_type(x, jnp.uint8),
                                          lax.bitcast_convert_type(x, jnp.int32)),
         (ints(3, 4, 2, lo=0, hi=255, dtype=np.uint8), normal(5))),
    # --- dot
    Case("dot_general_batch", lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
         (normal(3, 4, 5), normal(3, 5, 6)), "sum"),
    Case("dot_general_odd_dims", lambda a, b: lax.dot_general(a, b, (((1, 3), (2, 0)), ((0,), (1,)))),
         (normal(2, 3, 4, 5), normal(5, 2, 3, 6)), "sum"),
    Case("matmul_int8_to_int32", lambda a, b: lax.dot(a, b, preferred_element_type=jnp.int32),
         (ints(8, 16, lo=-128, hi=127, dtype=np.int8), ints(16, 4, lo=-128, hi=127, dtype=np.int8))),
    Case("matmul_bf16_to_f32", lambda a, b: lax.dot(a, b, preferred_element_type=jnp.float32),
         (_x_bf16(8, 32), _x_bf16(32, 4)), "sum"),
    Case("matmul_bf16", lambda a, b: a @ b, (_x_bf16(8, 32), _x_bf16(32, 4)), "sum"),
    # --- convolution
    Case("conv_nchw_stride_pad", functools.partial(_conv, window_strides=(2, 1), padding=((1, 2), (0, 1))),
         (normal(2, 3, 9, 8), normal(4, 3, 3, 2)), "sum"),
    Case("conv_dilations", functools.partial(_conv, window_strides=(1, 1), padding=((2, 1), (1, 2)),
                                             lhs_dilation=(2, 1),
                                             rhs_dilation=(1, 2)),
         (normal(1, 2, 5, 7), normal(3, 2, 3, 3)), "sum"),
    Case("conv_nhwc_groups", functools.partial(_conv, window_strides=(1, 1), padding="VALID",
                                               dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=2),
         (normal(2, 6, 6, 4), normal(3, 3, 2, 6)), "sum"),
    Case("conv_depthwise", functools.partial(_conv, window_strides=(1, 1), padding="SAME",
                                             dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=4),
         (normal(1, 5, 5, 4), normal(3, 3, 1, 4)), "sum"),
    Case("conv_batch_groups", functools.partial(_conv, window_strides=(1,), padding="VALID", batch_group_count=2),
         (normal(4, 3, 7), normal(6, 3, 3)), "sum"),
    Case("conv_int8", lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", preferred_element_type=jnp.int32),
         (ints(1, 2, 5, 5, lo=-128, hi=127, dtype=np.int8), ints(3, 2, 3, 3, lo=-128, hi=127, dtype=np.int8))),
    Case("conv_1d_bf16", functools.partial(_conv, window_strides=(1,), padding="SAME"),
         (_x_bf16(2, 4, 16), _x_bf16(4, 4, 3)), "sum"),
    # --- reductions
    Case("reduce_sum_max_min_prod", lambda x: (x.sum(axis=1), x.max(axis=0), x.min(), jnp.prod(x[:, :4], axis=1)),
         (normal(6, 10),), "sum"),
    Case("reduce_int_and_pred", lambda x: (x.sum(axis=0), x.max(axis=1), jnp.any(x > 90, axis=1),
                                           jnp.all(x > -90, axis=0)), (ints(5, 7),)),
    Case("argmax_argmin", lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0), jnp.argmax(x)),
         (np.where(RNG.random((6, 7)) < 0.3, 1.0, normal(6, 7)).astype(np.float32),)),
    Case("argmax_nan", lambda x: jnp.argmax(x, axis=1),
         (np.array([[1, np.nan, 3], [2, 5, 5], [-np.inf, -np.inf, -np.inf]], np.float32),)),
    Case("reduce_bf16_sum", lambda x: (jnp.sum(x, axis=1), lax.reduce(x, BF16(0), lax.add, (1,))),
         (_x_bf16(4, 32),), "sum"),
    # --- reduce-window
    Case("max_pool", lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
         (normal(2, 7, 7, 3),)),
    Case("avg_pool_padded", lambda x: lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), ((1, 0), (0, 1))) / 4,
         (normal(5, 6),), "sum"),
    Case("cumsum_cummax", lambda x: (jnp.cumsum(x, axis=1), lax.cummax(x, axis=0), jnp.cumsum(x.astype(jnp.int32))),
         (normal(4, 9),), "sum"),
    # --- data movement
    Case("pad", lambda x: (lax.pad(x, 0.0, ((1, 2, 1), (-1, 1, 0))), lax.pad(x, -1.0, ((-2, -1, 2), (0, 0, 3)))),
         (normal(4, 3),)),
    Case("dynamic_slice", lambda x, i, j: (lax.dynamic_slice(x, (i, j), (2, 3)),
                                           lax.dynamic_update_slice(x, jnp.ones((2, 3), x.dtype), (j, i))),
         (normal(5, 6), np.int32(4), np.int32(-3))),
    Case("dynamic_slice_oob", lambda x, i: (lax.dynamic_slice_in_dim(x, i, 3), lax.dynamic_update_slice_in_dim(
        x, jnp.zeros(4, x.dtype), i, 0)), (ints(8), np.int32(100))),
    Case("concat_transpose_slice", lambda x, y: (jnp.concatenate([x, y, x], axis=1), jnp.transpose(x, (1, 0, 2)),
                                                 x[::2, 1::3, ::-1], x.reshape(6, -1), jnp.flip(x, (0, 2))),
         (normal(3, 4, 5), normal(3, 2, 5))),
    Case("iota_broadcast", lambda x: (jnp.arange(12, dtype=jnp.int32).reshape(3, 4) + x,
                                      lax.broadcasted_iota(jnp.float32, (2, 3, 4), 2),
                                      jnp.broadcast_to(x[:, :1], (3, 4)), jnp.eye(4, dtype=jnp.int8)),
         (ints(3, 4),)),
    Case("where_scalar_and_select", lambda c, x, y: (jnp.where(c, x, y), lax.select(x > y, x, y)),
         (np.bool_(True), normal(7), normal(7))),
    # --- composite kernels
    Case("softmax", lambda x: jax.nn.softmax(x, axis=-1), (normal(4, 33, scale=3.0),), "ulp"),
    Case("softmax_bf16", lambda x: jax.nn.softmax(x, axis=-1), (_x_bf16(4, 16),), "ulp"),
    Case("layernorm", _layernorm, (normal(4, 32), normal(32), normal(32)), "sum"),
    Case("gelu_tanh", _gelu_tanh, (normal(64, scale=3.0),), "ulp"),
    Case("gelu_erf", _gelu_erf, (normal(64, scale=3.0),), "ulp"),
    Case("gelu_bf16", lambda x: (_gelu_tanh(x), _gelu_erf(x)), (_x_bf16(64),), "ulp"),
    Case("mlp_block", lambda x, w1, w2: jax.nn.relu(x @ w1) @ w2,
         (normal(4, 16), normal(16, 32), normal(32, 8)), "sum"),
]


def _leaves(tree) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(tree)]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_jax_function(case: Case):
    jitted = jax.jit(case.fn)
    text = jitted.lower(*case.args).as_text(dialect="hlo")
    module = parse_module(text, f"{case.name}.hlo")
    got = evaluate(module, list(case.args))
    want = _leaves(jitted(*case.args))
    check_outputs(got, want, case.tol, case.name)


def test_enough_jax_cases():
    assert len(CASES) >= 30


# ---------------------------------------------------------------------------
# part 2: hand-written HLO, run by XLA itself and by the reference


@pytest.fixture(scope="module")
def xla_run():
    """Compile HLO text with jax's bundled XLA:CPU and run it. This goes through jax
    internals (HLO text -> HloModule proto -> StableHLO -> PJRT compile), which may move
    between jax releases: then these tests skip, saying why."""
    try:
        from jax._src.interpreters import mlir as jax_mlir
        from jax._src.lib import _jax
        from jax._src.lib import xla_client as xc
        from jax._src.lib.mlir import ir
        from jax.extend.backend import get_backend

        backend = get_backend("cpu")
        devices = xc.DeviceList(tuple(backend.local_devices()[:1]))
    except (ImportError, AttributeError, RuntimeError) as err:  # pragma: no cover
        pytest.skip(f"cannot reach XLA's HLO compiler through this jax version: {err!r}")

    def run(text: str, args: list[np.ndarray]) -> list[np.ndarray]:
        proto = xc.hlo.hlo_module_from_text(text).as_serialized_hlo_module_proto()
        with jax_mlir.make_ir_context():
            mlir_text = str(ir.Module.parse(_jax.mlir.hlo_to_stablehlo(proto)))
        exe = backend.compile_and_load(mlir_text, devices, xc.CompileOptions())
        with jax.enable_x64(True):  # keep f64/s64 inputs as they are
            bufs = [jax.device_put(a) for a in args]
        return [np.asarray(o) for o in exe.execute(bufs)]

    return run


@dataclass
class HloCase:
    name: str
    body: str  # the ENTRY computation's instructions; p0, p1, ... are parameters
    args: tuple
    tol: str = "exact"
    comps: str = ""  # other computations (reducers)
    # output -> the argument it converts to bf16 from a type wider than f32 (see _wide_to_bf16)
    wide_bf16: tuple[tuple[int, int], ...] = ()


def _param_lines(args) -> str:
    from runtime_skeleton.ir.dtypes import from_numpy

    lines = []
    for i, a in enumerate(args):
        a = np.asarray(a)
        lines.append(f"  p{i} = {from_numpy(a.dtype).name}[{','.join(map(str, a.shape))}] parameter({i})")
    return "\n".join(lines)


def hlo_text(case: HloCase) -> str:
    body = "\n".join("  " + line.strip() for line in case.body.strip().splitlines())
    return f"HloModule {case.name}\n\n{case.comps}\n\nENTRY main {{\n{_param_lines(case.args)}\n{body}\n}}\n"


def _scalar_reducer(name: str, op: str, dt: str) -> str:
    return f"{name} {{\n  a = {dt}[] parameter(0)\n  b = {dt}[] parameter(1)\n  ROOT r = {dt}[] {op}(a, b)\n}}\n"


def _arr(values, dt):
    return np.array(values, dtype=dt)


_F = np.float32
_SPECIAL = _arr([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 2.5, 0.49999997, 3e9, -3e9, 1e30,
                 -7.9, 255.5, -128.5, 65535.9], _F)

HLO_CASES = [
    HloCase("int_power_s32", "ROOT r = s32[12] power(p0, p1)",
            (_arr([2, 3, -2, 1, -1, -1, 2, 0, 0, 3, 3, 5], np.int32),
             _arr([10, 3, 3, -7, -3, -2, -1, 0, -1, 64, 65, 100], np.int32))),
    HloCase("int_power_s64_u8", """
        a = s64[4] power(p0, p1)
        b = u8[4] power(p2, p3)
        ROOT r = (s64[4], u8[4]) tuple(a, b)""",
            (_arr([3, 3, 7, -3], np.int64), _arr([64, 65, 130, 63], np.int64),
             _arr([3, 3, 5, 200], np.uint8), _arr([64, 65, 100, 255], np.uint8))),
    HloCase("shifts_s64_u8", """
        a = s64[4] shift-left(p0, p1)
        b = s64[4] shift-right-logical(p0, p1)
        c = s64[4] shift-right-arithmetic(p0, p1)
        d = u8[5] shift-right-arithmetic(p2, p3)
        ROOT r = (s64[4], s64[4], s64[4], u8[5]) tuple(a, b, c, d)""",
            (_arr([-5, -5, 1, -(2**63)], np.int64), _arr([63, 64, 65, -1], np.int64),
             _arr([0x80, 0x81, 0x7F, 5, 0xF0], np.uint8), _arr([1, 7, 8, 255, 2], np.uint8))),
    HloCase("int_div_rem", """
        a = s8[8] divide(p0, p1)
        b = s8[8] remainder(p0, p1)
        c = u16[3] divide(p2, p3)
        d = u16[3] remainder(p2, p3)
        ROOT r = (s8[8], s8[8], u16[3], u16[3]) tuple(a, b, c, d)""",
            (_arr([7, -7, 7, -7, -128, -128, 5, 0], np.int8), _arr([2, 2, -2, -2, -1, 0, 0, 0], np.int8),
             _arr([7, 65535, 9], np.uint16), _arr([0, 0, 2], np.uint16))),
    HloCase("convert_f32_to_ints", """
        a = s8[18] convert(p0)
        b = u8[18] convert(p0)
        c = s16[18] convert(p0)
        d = u16[18] convert(p0)
        e = s32[18] convert(p0)
        f = u32[18] convert(p0)
        g = s64[18] convert(p0)
        h = u64[18] convert(p0)
        i = pred[18] convert(p0)
        ROOT r = (s8[18], u8[18], s16[18], u16[18], s32[18], u32[18], s64[18], u64[18], pred[18]) tuple(a, b, c, d, e, f, g, h, i)""",
            (_SPECIAL,)),
    HloCase("convert_f64", """
        a = s64[6] convert(p0)
        b = u64[6] convert(p0)
        c = bf16[6] convert(p0)
        d = f32[6] convert(p0)
        e = f16[6] convert(p0)
        ROOT r = (s64[6], u64[6], bf16[6], f32[6], f16[6]) tuple(a, b, c, d, e)""",
            (_arr([1e20, -1e20, 9.3e18, np.nan, 1 + 2**-8 + 2**-30, 1 + 2**-24 + 2**-40], np.float64),),
            wide_bf16=((2, 0),)),
    HloCase("convert_ints_to_floats", """
        a = bf16[5] convert(p0)
        b = f16[5] convert(p0)
        c = f32[5] convert(p0)
        d = f32[3] convert(p1)
        e = bf16[2] convert(p2)
        f = s8[5] convert(p0)
        g = u8[5] convert(p0)
        ROOT r = (bf16[5], f16[5], f32[5], f32[3], bf16[2], s8[5], u8[5]) tuple(a, b, c, d, e, f, g)""",
            (_arr([2**24 + 1, 2**24 + 2**16 + 1, 16777217 * 3, 2**31 - 1, -(2**31)], np.int32),
             _arr([2**64 - 1, 2**53 + 1, 12345], np.uint64), _arr([True, False], np.bool_)),
            wide_bf16=((0, 0),)),
    HloCase("convert_narrow_floats", """
        a = bf16[6] convert(p0)
        b = f16[6] convert(p0)
        c = f16[6] convert(a)
        d = bf16[6] convert(b)
        e = s8[6] convert(a)
        ROOT r = (bf16[6], f16[6], f16[6], bf16[6], s8[6]) tuple(a, b, c, d, e)""",
            (_arr([1 + 2**-8, 1 + 3 * 2**-8, 70000, -3.4e38, 1 + 2**-11, 200.7], _F),)),
    HloCase("bf16_rounds_per_op", """
        s = bf16[4] add(p0, p1)
        t = bf16[4] add(s, p1)
        m = bf16[4] multiply(t, p0)
        ROOT r = bf16[4] subtract(m, p1)""",
            (_arr([1, 1.0078125, 3, 100], BF16), _arr([2**-8, 2**-8, 0.01, 0.3], BF16))),
    HloCase("f16_rounds_per_op", """
        s = f16[4] add(p0, p1)
        t = f16[4] add(s, p1)
        ROOT r = f16[4] multiply(t, t)""",
            (_arr([1, 2048, 60000, 1e-4], np.float16), _arr([2**-11, 1, 10000, 1e-7], np.float16))),
    HloCase("max_min_clamp_select", """
        a = f32[5] maximum(p0, p1)
        b = f32[5] minimum(p0, p1)
        lo = f32[] constant(0)
        hi = f32[] constant(1)
        c = f32[5] clamp(lo, p0, hi)
        q = pred[5] broadcast(p2), dimensions={}
        d = f32[5] select(q, p0, p1)
        ROOT r = (f32[5], f32[5], f32[5], f32[5]) tuple(a, b, c, d)""",
            (_arr([np.nan, 0.5, -0.0, 0.0, 2], _F), _arr([1, np.nan, 0.0, -0.0, np.nan], _F), np.bool_(False))),
    HloCase("float_unary_specials", """
        a = f32[18] sign(p0)
        b = f32[18] round-nearest-afz(p0)
        c = f32[18] round-nearest-even(p0)
        d = f32[18] floor(p0)
        e = f32[18] ceil(p0)
        f = pred[18] is-finite(p0)
        g = f32[18] abs(p0)
        h = f32[18] negate(p0)
        ROOT r = (f32[18], f32[18], f32[18], f32[18], f32[18], pred[18], f32[18], f32[18]) tuple(a, b, c, d, e, f, g, h)""",
            (_SPECIAL,)),
    HloCase("float_binary_specials", """
        a = f32[18] remainder(p0, p1)
        b = f32[18] atan2(p0, p1)
        c = f32[18] power(p0, p1)
        d = f32[18] divide(p0, p1)
        ROOT r = (f32[18], f32[18], f32[18], f32[18]) tuple(a, b, c, d)""",
            (_SPECIAL, _SPECIAL[::-1].copy()), "ulp"),
    HloCase("int_bit_ops", """
        a = s8[6] popcnt(p0)
        b = s8[6] count-leading-zeros(p0)
        c = s8[6] not(p0)
        d = u64[3] count-leading-zeros(p1)
        e = u64[3] popcnt(p1)
        f = s8[6] abs(p0)
        g = s8[6] sign(p0)
        ROOT r = (s8[6], s8[6], s8[6], u64[3], u64[3], s8[6], s8[6]) tuple(a, b, c, d, e, f, g)""",
            (_arr([-128, 127, 0, -1, 1, 64], np.int8), _arr([0, 1, 2**63 + 5], np.uint64))),
    HloCase("compare_total_order", """
        a = pred[6] compare(p0, p1), direction=LT, type=TOTALORDER
        b = pred[6] compare(p0, p1), direction=EQ, type=TOTALORDER
        c = pred[6] compare(p0, p1), direction=LT
        d = pred[6] compare(p0, p1), direction=NE
        ROOT r = (pred[6], pred[6], pred[6], pred[6]) tuple(a, b, c, d)""",
            (_arr([-0.0, -1, 1, np.nan, np.nan, 0.0], _F), _arr([0.0, -np.inf, np.inf, np.inf, np.nan, -0.0], _F))),
    HloCase("reduce_window_init_padding_dilation", """
        i = f32[] constant(10)
        a = f32[4] reduce-window(p0, i), window={size=4 pad=3_0}, to_apply=add
        b = f32[6] reduce-window(p0, i), window={size=2 pad=0_0 lhs_dilate=2}, to_apply=add
        c = f32[2] reduce-window(p0, i), window={size=2 stride=2 pad=1_1 rhs_dilate=2}, to_apply=add
        m = f32[] constant(-inf)
        d = f32[2,2] reduce-window(p1, m), window={size=2x3 stride=2x2 pad=0_1x1_0}, to_apply=max
        ROOT r = (f32[4], f32[6], f32[2], f32[2,2]) tuple(a, b, c, d)""",
            (_arr([1, 2, 3, 4], _F), np.arange(12, dtype=_F).reshape(3, 4)),
            comps=_scalar_reducer("add", "add", "f32") + _scalar_reducer("max", "maximum", "f32")),
    HloCase("reduce_init_and_bf16", """
        i = f32[] constant(10)
        a = f32[3] reduce(p0, i), dimensions={1}, to_apply=add
        z = bf16[] constant(0)
        b = bf16[2] reduce(p1, z), dimensions={1}, to_apply=addb
        ROOT r = (f32[3], bf16[2]) tuple(a, b)""",
            (np.arange(12, dtype=_F).reshape(3, 4), _arr([[1] + [2**-8] * 7, [256, 1, 1, 1, 1, 1, 1, 1]], BF16)),
            comps=_scalar_reducer("add", "add", "f32") + _scalar_reducer("addb", "add", "bf16")),
    HloCase("conv_batch_groups_reversal", """
        a = f32[2,6,5] convolution(p0, p1), window={size=3 pad=1_1 rhs_reversal=1}, dim_labels=bf0_oi0->bf0, batch_group_count=2
        b = f32[4,3,8] convolution(p0, p2), window={size=2 stride=1 pad=0_0 lhs_dilate=2 rhs_dilate=1}, dim_labels=bf0_oi0->bf0
        ROOT r = (f32[2,6,5], f32[4,3,8]) tuple(a, b)""",
            (np.arange(60, dtype=_F).reshape(4, 3, 5) % 7, np.arange(54, dtype=_F).reshape(6, 3, 3) % 5,
             np.arange(18, dtype=_F).reshape(3, 3, 2) % 4)),
    HloCase("dynamic_slice_index_types", """
        a = f32[2,2] dynamic-slice(p0, p1, p2), dynamic_slice_sizes={2,2}
        u = f32[2,2] constant({{-1, -2}, {-3, -4}})
        b = f32[3,4] dynamic-update-slice(p0, u, p2, p1)
        c = f32[2,3] dynamic-slice(p0, p3, p4), dynamic_slice_sizes={2,3}
        ROOT r = (f32[2,2], f32[3,4], f32[2,3]) tuple(a, b, c)""",
            (np.arange(12, dtype=_F).reshape(3, 4), np.int64(5), np.int64(-1), np.uint32(7), np.uint32(2**31))),
    HloCase("pad_negative_interior", """
        z = f32[] constant(-1)
        ROOT r = f32[5,3] pad(p0, z), padding=-1_1_1x1_-2_2""",
            (np.arange(12, dtype=_F).reshape(3, 4)[:, :2].copy(),)),
    HloCase("bitcast_convert_widths", """
        a = bf16[2,4] bitcast-convert(p0)
        b = u16[3,2] bitcast-convert(p1)
        c = s32[4] bitcast-convert(p2)
        d = u32[2] bitcast-convert(p3)
        ROOT r = (bf16[2,4], u16[3,2], s32[4], u32[2]) tuple(a, b, c, d)""",
            (np.arange(16, dtype=np.uint8).reshape(2, 4, 2) * 17, _arr([1.0, -2.5, np.pi], _F),
             np.arange(16, dtype=np.int8).reshape(4, 4) - 8, np.float64(-1.5))),
    HloCase("dot_mixed_types", """
        a = s32[2,2] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
        b = f32[2,2] dot(p2, p3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
        c = bf16[2,2] dot(p2, p3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
        ROOT r = (s32[2,2], f32[2,2], bf16[2,2]) tuple(a, b, c)""",
            (np.full((2, 3), -128, np.int8), np.full((3, 2), 127, np.int8),
             _arr([[1, 2**-8, 2**-8], [3, 0.1, 0.7]], BF16), _arr([[1, 1], [1, 2], [1, 3]], BF16)), "sum"),
    HloCase("dot_mixed_signedness", """
        ROOT a = s32[2,2] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}""",
            (_arr([[200, 255, 1], [0, 128, 7]], np.uint8), _arr([[-128, 127], [1, -1], [100, 3]], np.int8))),
    HloCase("conv_2d_groups_reversal_negative_pad", """
        ROOT a = f32[1,3,4,4] convolution(p0, p1), window={size=3x2 stride=1x2 pad=1_-1x2_1 rhs_reversal=1x1}, dim_labels=b01f_01io->b01f, feature_group_count=2""",
            (np.arange(120, dtype=_F).reshape(1, 5, 6, 4) % 9 - 4,
             np.arange(48, dtype=_F).reshape(3, 2, 2, 4) % 5 - 2)),
    HloCase("clamp_int_full_bounds", "ROOT r = s8[4] clamp(p0, p1, p2)",
            (_arr([0, 0, 5, -128], np.int8), _arr([-5, 5, 1, 127], np.int8), _arr([10, 1, 3, 0], np.int8))),
    HloCase("f64_elementwise", """
        a = f64[6] exponential(p0)
        b = f64[6] logistic(p0)
        c = f64[6] tanh(p0)
        d = f64[6] multiply(p0, p0)
        ROOT r = (f64[6], f64[6], f64[6], f64[6]) tuple(a, b, c, d)""",
            (_arr([-700, -1.5, 0, 1e-3, 2.5, 700], np.float64),), "ulp"),
    HloCase("iota_bf16_large", """
        a = bf16[300] iota(), iota_dimension=0
        b = s8[300] iota(), iota_dimension=0
        ROOT r = (bf16[300], s8[300]) tuple(a, b)""", ()),
]


@pytest.mark.parametrize("case", HLO_CASES, ids=[c.name for c in HLO_CASES])
def test_hlo_against_xla(case: HloCase, xla_run):
    text = hlo_text(case)
    want = xla_run(text, list(case.args))
    got = evaluate(parse_module(text, f"{case.name}.hlo"), list(case.args))
    for out, arg in case.wide_bf16:
        want[out] = _wide_to_bf16(xla_run, got[out], want[out], case.args[arg], f"{case.name} out{out}")
    check_outputs(got, want, case.tol, case.name)


def _bf16_rounded(x) -> float:  # noqa: ANN001
    """x (an int or a float64) rounded once to bf16's 8 significant bits, ties to even, exactly."""
    from fractions import Fraction

    v = Fraction(int(x)) if isinstance(x, (int, np.integer)) else Fraction(float(x))
    if v == 0:
        return 0.0
    e = math.floor(math.log2(abs(v)))
    e += (abs(v) >= Fraction(2) ** (e + 1)) - (abs(v) < Fraction(2) ** e)
    ulp = Fraction(2) ** (e - 7)
    return float(round(v / ulp) * ulp)  # round() on a Fraction: half to even


def _wide_to_bf16(xla_run, got: np.ndarray, want: np.ndarray, x: np.ndarray, what: str) -> np.ndarray:  # noqa: ANN001
    """XLA:CPU converts a value wider than f32 to bf16 through f32 (rounding twice) where the CPU
    converts f32 to bf16 natively (avx512_bf16: XLA emits vcvtneps2bf16), and rounds once
    elsewhere; the reference rounds once on every machine. On a host that rounds twice, the
    elements that differ are checked to be exactly that: XLA's the f32 value rounded again,
    the reference's the exact value rounded once. Returns what ``got`` is then compared with."""
    probe = np.array([2**24 + 2**16 + 1], np.int32)  # f32 rounds it to a bf16 tie; once rounded it is above
    twice = float(xla_run(PROBE_HLO, [probe])[0][0]) == 2.0**24
    if not twice:
        return want
    g, w = got.astype(np.float64), want.astype(np.float64)
    for i in np.flatnonzero((g != w) & ~(np.isnan(g) & np.isnan(w))):
        through_f32 = float(np.asarray(x[i]).astype(np.float32).astype(BF16))
        assert w[i] == through_f32 and g[i] == _bf16_rounded(x[i]), (what, i, x[i], g[i], w[i])
    return got


PROBE_HLO = """HloModule probe
ENTRY e {
  p0 = s32[1]{0} parameter(0)
  ROOT r = bf16[1]{0} convert(p0)
}
"""


# ---------------------------------------------------------------------------
# part 3: every elementwise op on random operands, one module per element type

_INT_BINARY_OPS = ("add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum",
                   "and", "or", "xor", "shift-left", "shift-right-logical", "shift-right-arithmetic")
_FLOAT_EXACT_BINARY = ("add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum")
_FLOAT_EXACT_UNARY = ("abs", "negate", "floor", "ceil", "round-nearest-even", "round-nearest-afz", "sign",
                      "sqrt")
_FLOAT_APPROX = ("exponential", "exponential-minus-one", "log", "log-plus-one", "rsqrt", "cbrt", "tanh",
                 "logistic", "erf", "tan")


def _random_ints(dt: np.dtype, n: int, rng) -> np.ndarray:
    info = np.iinfo(dt)
    bits = info.bits
    edges = [0, 1, 2, 3, bits - 1, bits, bits + 1, 63, 64, 65, info.max, info.min]
    if info.min < 0:
        edges += [-1, -2, -bits, info.min + 1]
    vals = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dt)
    small = rng.integers(max(info.min, -70), 70, size=n // 2, endpoint=True).astype(dt)
    return np.concatenate([np.array(edges, dt), small, vals])[:n]


def _random_floats(dt, n: int, rng) -> np.ndarray:
    # magnitudes 2^-10 .. 2^10 (no results near the subnormal range), plus specials
    mag = np.exp2(rng.uniform(-10, 10, size=n)) * rng.choice([-1, 1], size=n)
    vals = np.concatenate([[np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5], mag])[:n]
    return vals.astype(dt)


def _elementwise_module(dt: str, binary_ops, unary_ops, n: int, extra: str = "") -> str:
    lines, outs, types = [], [], []
    for op in binary_ops:
        lines.append(f"{op.replace('-', '_')} = {dt}[{n}] {op}(p0, p1)")
        outs.append(op.replace("-", "_"))
        types.append(f"{dt}[{n}]")
    for op in unary_ops:
        rt = "pred" if op == "is-finite" else dt
        lines.append(f"{op.replace('-', '_')}_u = {rt}[{n}] {op}(p0)")
        outs.append(op.replace("-", "_") + "_u")
        types.append(f"{rt}[{n}]")
    for line in extra.strip().splitlines():
        name, rest = line.split("=", 1)
        lines.append(line.strip())
        outs.append(name.strip())
        types.append(rest.split()[0])
    lines.append(f"ROOT out = ({', '.join(types)}) tuple({', '.join(outs)})")
    return "\n".join(lines)


N = 512  # random operands per elementwise module


def _compares() -> str:
    directions = ("EQ", "NE", "LT", "LE", "GT", "GE")
    return "\n".join(f"cmp_{d} = pred[{N}] compare(p0, p1), direction={d}" for d in directions)


def _converts(src: str, targets) -> str:
    return "\n".join(f"cv_{t} = {t}[{N}] convert(p0)" for t in targets if t != src)


@dataclass
class ElementwiseCase:
    dtype: str  # XLA element type of both operands
    body: str
    tol: str = "exact"

    @property
    def name(self) -> str:
        return f"{self.dtype}_{'approx' if self.tol != 'exact' else 'exact'}"


_ELEMENTWISE = [
    *(ElementwiseCase(dt, _elementwise_module(
        dt, _INT_BINARY_OPS, ("not", "popcnt", "count-leading-zeros", "negate")
        + (("abs", "sign") if dt[0] == "s" else ()), N,
        _compares() + "\n" + _converts(dt, ("s8", "u8", "s32", "u64", "f32", "bf16", "pred"))))
      for dt in ("s8", "u8", "s32", "s64", "u64")),
    *(ElementwiseCase(dt, _elementwise_module(
        dt, _FLOAT_EXACT_BINARY, _FLOAT_EXACT_UNARY + ("is-finite",), N,
        _compares() + "\n" + _converts(dt, ("s8", "u8", "s32", "u32", "s64", "f16", "bf16", "f32", "pred"))))
      for dt in ("f32", "bf16", "f16", "f64")),
    *(ElementwiseCase(dt, _elementwise_module(dt, ("power", "atan2"), _FLOAT_APPROX, N), "ulp")
      for dt in ("f32", "bf16", "f16")),
]


@pytest.mark.parametrize("case", _ELEMENTWISE, ids=[c.name for c in _ELEMENTWISE])
def test_elementwise_random_against_xla(case: ElementwiseCase, xla_run):
    from runtime_skeleton.ir.dtypes import dtype

    dt = dtype(case.dtype)
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))  # deterministic per case
    if dt.is_int:
        args = (_random_ints(dt.np, N, rng), _random_ints(dt.np, N, rng))
    else:
        args = (_random_floats(dt.np, N, rng), _random_floats(dt.np, N, rng)[::-1].copy())
    text = hlo_text(HloCase(case.name, case.body, args))
    want = xla_run(text, list(args))
    got = evaluate(parse_module(text, f"{case.name}.hlo"), list(args))
    check_outputs(got, want, case.tol, case.name)
