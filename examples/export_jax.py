#!/usr/bin/env python3
"""Export the example kernels: JAX functions -> XLA HLO text + inputs/outputs.

Usage (from the repository root):

    python examples/export_jax.py [--out examples/kernels] [--only NAME ...] [--check]

For every kernel defined below this writes

* ``<out>/<name>.hlo``  -- ``jax.jit(f).lower(*args).as_text(dialect="hlo")``, byte for byte
  as JAX prints it (the text is never edited);
* ``<out>/<name>.npz``  -- the inputs as ``arg0, arg1, ...`` (parameter order) and JAX's
  outputs as ``out0, out1, ...`` (a tuple result is flattened).  bf16/f16 arrays are stored
  as float32, which holds every bf16/f16 value exactly; all other dtypes are stored as is;
* ``<out>/MANIFEST.txt`` -- one line per kernel: name and a one-line description (the
  hand-written kernels of ``examples/act_kernels.py`` included, whose files this script keeps).

Everything is deterministic: inputs come from ``numpy.random.default_rng(crc32(name))`` and
the .npz archives are written with fixed zip timestamps/permissions, so two runs give
byte-identical files (``--check`` regenerates into a temporary directory and compares).

Sizes are small on purpose (at most a few thousand elements per tensor, dimensions multiples
of 16 where natural): the kernels double as on-chip kernels for accelerators with 16x16 int8
systolic arrays and 16-row tiles (Gemmini, the Act paper's QKV accelerator, AMX).

jax is a development dependency only; nothing in the package imports this script.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import zlib
from dataclasses import dataclass
from typing import Callable

import jax

jax.config.update("jax_enable_x64", False)  # the fixtures use JAX's default 32-bit types
jax.config.update("jax_platforms", "cpu")

import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

# Sibling modules in examples/: the hand-written Act kernels share the fixture directory and
# MANIFEST.txt with the JAX exports.
from act_kernels import KERNELS as HAND_WRITTEN  # noqa: E402
from npz_fixture import write_npz  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "kernels"

# --------------------------------------------------------------------------------------------
# Kernel registry
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kernel:
    name: str
    description: str
    fn: Callable
    make_args: Callable[[np.random.Generator], list]

    def args(self) -> list:
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        return self.make_args(rng)


KERNELS: dict[str, Kernel] = {}


def kernel(description: str, make_args: Callable[[np.random.Generator], list]):
    """Register ``fn`` under its own name (which also names the HLO module ``jit_<name>``)."""

    def register(fn):
        name = fn.__name__
        if name in KERNELS:
            raise ValueError(f"duplicate kernel {name}")
        KERNELS[name] = Kernel(name, description, fn, make_args)
        return fn

    return register


# ---- deterministic input generators ---------------------------------------------------------


def i8(lo: int = -32, hi: int = 32):
    """int8 uniform in [lo, hi): small by default so int8 products do not all saturate."""
    return lambda r, shape: r.integers(lo, hi, size=shape, dtype=np.int8)


def i32(lo: int, hi: int):
    return lambda r, shape: r.integers(lo, hi, size=shape, dtype=np.int32)


def u32(lo: int, hi: int):
    return lambda r, shape: r.integers(lo, hi, size=shape, dtype=np.uint32)


def f32(scale: float = 1.0):
    """float32 N(0, scale^2)."""
    return lambda r, shape: (r.standard_normal(shape) * scale).astype(np.float32)


def f32u(lo: float, hi: float):
    """float32 uniform in [lo, hi) (e.g. positive for log/sqrt)."""
    return lambda r, shape: r.uniform(lo, hi, size=shape).astype(np.float32)


def bf16(scale: float = 1.0):
    return lambda r, shape: (r.standard_normal(shape) * scale).astype(ml_dtypes.bfloat16)


def f16(scale: float = 1.0):
    return lambda r, shape: (r.standard_normal(shape) * scale).astype(np.float16)


def scalar_i32(value: int):
    return lambda r, shape: np.array(value, dtype=np.int32)


def A(*specs):
    """``A((gen, shape), ...)`` -> make_args(rng): draws the arguments in order."""

    def make(rng):
        return [gen(rng, shape) for gen, shape in specs]

    return make


# --------------------------------------------------------------------------------------------
# Integer GEMM / quantized layers
# --------------------------------------------------------------------------------------------


@kernel(
    "int8 GEMM with int32 accumulation (full int8 range), 32x64 . 64x32",
    A((i8(-128, 128), (32, 64)), (i8(-128, 128), (64, 32))),
)
def gemm_i8(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.int32)


@kernel(
    "int8 GEMM + int32 bias, fixed-point requantize (x*11 + 256) >> 9, clamp [-128,127], to int8",
    A((i8(), (32, 64)), (i8(), (64, 32)), (i32(-2048, 2048), (32,))),
)
def gemm_i8_bias_requant(x, w, bias):
    acc = jnp.dot(x, w, preferred_element_type=jnp.int32) + bias
    mult, shift = 11, 9  # scale ~ 0.0215 as a multiply and a rounding arithmetic shift
    scaled = (acc * mult + (1 << (shift - 1))) >> shift
    return jnp.clip(scaled, -128, 127).astype(jnp.int8)


@kernel(
    "int8 MLP layer: GEMM + bias + ReLU, float-scale requantize (round-nearest-even), clamp, int8",
    A((i8(), (16, 64)), (i8(), (64, 64)), (i32(-2048, 2048), (64,))),
)
def mlp_i8_layer(x, w, bias):
    acc = jnp.dot(x, w, preferred_element_type=jnp.int32) + bias
    act = jnp.maximum(acc, 0)
    q = jnp.round(act.astype(jnp.float32) * jnp.float32(0.0125))
    return jnp.clip(q, -128, 127).astype(jnp.int8)


@kernel(
    "batched int8 matmul (dot_general, batch dim 0) with int32 accumulation, 4x16x32 . 4x32x16",
    A((i8(), (4, 16, 32)), (i8(), (4, 32, 16))),
)
def batched_matmul_i8(a, b):
    return lax.dot_general(
        a, b, (((2,), (1,)), ((0,), (0,))), preferred_element_type=jnp.int32
    )


# --------------------------------------------------------------------------------------------
# Floating-point GEMM / MLP
# --------------------------------------------------------------------------------------------


@kernel("f32 GEMM, 32x64 . 64x32", A((f32(), (32, 64)), (f32(), (64, 32))))
def gemm_f32(a, b):
    return jnp.dot(a, b)


@kernel(
    "f32 2-layer MLP: relu(x.W1 + b1).W2 + b2, 16x64 -> 64 -> 32",
    A((f32(), (16, 64)), (f32(0.125), (64, 64)), (f32(0.1), (64,)), (f32(0.125), (64, 32)),
      (f32(0.1), (32,))),
)
def mlp_f32(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    return h @ w2 + b2


@kernel(
    "bf16 2-layer MLP: relu(x.W1 + b1).W2 + b2, everything in bf16",
    A((bf16(), (16, 64)), (bf16(0.125), (64, 64)), (bf16(0.1), (64,)), (bf16(0.125), (64, 32)),
      (bf16(0.1), (32,))),
)
def mlp_bf16(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    return h @ w2 + b2


@kernel(
    "bf16 GEMM with f32 accumulation/result (preferred_element_type=f32), 32x64 . 64x32",
    A((bf16(), (32, 64)), (bf16(), (64, 32))),
)
def gemm_bf16_f32acc(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.float32)


@kernel("f16 GEMM, 32x32 . 32x32 (f16 result)", A((f16(), (32, 32)), (f16(0.25), (32, 32))))
def gemm_f16(a, b):
    return jnp.dot(a, b)


@kernel(
    "batched f32 matmul (einsum bij,bjk->bik), 4x16x32 . 4x32x16",
    A((f32(), (4, 16, 32)), (f32(), (4, 32, 16))),
)
def batched_matmul_f32(a, b):
    return jnp.einsum("bij,bjk->bik", a, b)


# --------------------------------------------------------------------------------------------
# Softmax / attention / normalization / activations
# --------------------------------------------------------------------------------------------


@kernel("f32 softmax over the last axis, 16x64", A((f32(2.0), (16, 64)),))
def softmax_f32(x):
    return jax.nn.softmax(x, axis=-1)


@kernel("bf16 softmax over the last axis, 16x64 (jax sums in f32)", A((bf16(2.0), (16, 64)),))
def softmax_bf16(x):
    return jax.nn.softmax(x, axis=-1)


@kernel(
    "f32 attention softmax(Q.K^T/sqrt(d)).V, seq 32, d 32",
    A((f32(), (32, 32)), (f32(), (32, 32)), (f32(), (32, 32))),
)
def attention_f32(q, k, v):
    s = (q @ k.T) / jnp.sqrt(jnp.float32(q.shape[-1]))
    return jax.nn.softmax(s, axis=-1) @ v


@kernel(
    "bf16 attention softmax(Q.K^T/sqrt(d)).V, 64x64 (the Act paper's QKV example)",
    A((bf16(), (64, 64)), (bf16(), (64, 64)), (bf16(), (64, 64))),
)
def attention_bf16_64(q, k, v):
    s = (q @ k.T) / jnp.sqrt(jnp.asarray(q.shape[-1], jnp.bfloat16))
    return jax.nn.softmax(s, axis=-1) @ v


@kernel(
    "f32 layernorm over the last axis (eps 1e-5) with gamma/beta, 16x64",
    A((f32(2.0), (16, 64)), (f32(0.5), (64,)), (f32(0.5), (64,))),
)
def layernorm_f32(x, gamma, beta):
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * lax.rsqrt(var + 1e-5) * gamma + beta


@kernel(
    "f32 RMSNorm over the last axis (eps 1e-6) with weight, 16x64",
    A((f32(2.0), (16, 64)), (f32(0.5), (64,))),
)
def rmsnorm_f32(x, w):
    ms = jnp.mean(jnp.square(x), axis=-1, keepdims=True)
    return x * lax.rsqrt(ms + 1e-6) * w


@kernel("f32 GELU, tanh approximation, 16x64", A((f32(2.0), (16, 64)),))
def gelu_tanh_f32(x):
    return jax.nn.gelu(x, approximate=True)


@kernel("f32 GELU, exact (erf; jax expands erf to polynomials), 16x64", A((f32(2.0), (16, 64)),))
def gelu_erf_f32(x):
    return jax.nn.gelu(x, approximate=False)


@kernel(
    "f32 SwiGLU FFN: (silu(x.Wg) * (x.Wu)).Wd, 16x64 -> 64 -> 32",
    A((f32(), (16, 64)), (f32(0.125), (64, 64)), (f32(0.125), (64, 64)), (f32(0.125), (64, 32))),
)
def swiglu_f32(x, wg, wu, wd):
    return (jax.nn.silu(x @ wg) * (x @ wu)) @ wd


# --------------------------------------------------------------------------------------------
# Convolution and pooling (NHWC)
# --------------------------------------------------------------------------------------------

NHWC = ("NHWC", "HWIO", "NHWC")


@kernel(
    "f32 conv2d NHWC/HWIO, 3x3, stride 1, SAME padding, 1x16x16x8 -> 16 channels",
    A((f32(), (1, 16, 16, 8)), (f32(0.2), (3, 3, 8, 16))),
)
def conv2d_same_f32(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=NHWC)


@kernel(
    "f32 conv2d NHWC/HWIO, 3x3, stride 2, VALID padding, 1x16x16x16 -> 1x7x7x16",
    A((f32(), (1, 16, 16, 16)), (f32(0.2), (3, 3, 16, 16))),
)
def conv2d_s2_valid_f32(x, w):
    return lax.conv_general_dilated(x, w, (2, 2), "VALID", dimension_numbers=NHWC)


@kernel(
    "int8 conv2d NHWC/HWIO, 3x3, stride 1, SAME, int32 accumulation, 1x16x16x16 -> 16 channels",
    A((i8(), (1, 16, 16, 16)), (i8(), (3, 3, 16, 16))),
)
def conv2d_i8(x, w):
    return lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=NHWC, preferred_element_type=jnp.int32
    )


@kernel(
    "f32 depthwise conv2d (feature_group_count=16), 3x3, stride 1, SAME, 1x16x16x16",
    A((f32(), (1, 16, 16, 16)), (f32(0.3), (3, 3, 1, 16))),
)
def depthwise_conv_f32(x, w):
    return lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=NHWC, feature_group_count=16
    )


@kernel(
    "f32 max-pool 3x3 stride 2 SAME (reduce-window max with padding), 1x16x16x16",
    A((f32(), (1, 16, 16, 16)),),
)
def maxpool_f32(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")


@kernel(
    "f32 average-pool 2x2 stride 2 VALID (reduce-window add, divide), 1x16x16x16",
    A((f32(), (1, 16, 16, 16)),),
)
def avgpool_f32(x):
    s = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return s / 4.0


# --------------------------------------------------------------------------------------------
# Reductions, data movement
# --------------------------------------------------------------------------------------------


@kernel(
    "reductions: f32 sum(axis 0), max(axes 1,2), mean(axis 2), min(axis 1); s32 sum(axis 1)",
    A((f32(), (16, 16, 8)), (i32(-1000, 1000), (16, 64))),
)
def reductions(x, xi):
    return (
        jnp.sum(x, axis=0),
        jnp.max(x, axis=(1, 2)),
        jnp.mean(x, axis=2),
        jnp.min(x, axis=1),
        jnp.sum(xi, axis=1),
    )


@kernel(
    "argmax along axis 1 and axis 0 (variadic reduce over (value, iota)), f32 16x64",
    A((f32(), (16, 64)),),
)
def argmax_f32(x):
    return jnp.argmax(x, axis=1), jnp.argmax(x, axis=0)


@kernel("2-D transposes: f32 32x48 and int8 16x64", A((f32(), (32, 48)), (i8(), (16, 64))))
def transpose_2d(x, y):
    return x.T, y.T


@kernel(
    "4-D transposes: NHWC->NCHW (0,3,1,2) and (3,1,0,2) on f32 2x4x8x16",
    A((f32(), (2, 4, 8, 16)),),
)
def transpose_4d(x):
    return jnp.transpose(x, (0, 3, 1, 2)), jnp.transpose(x, (3, 1, 0, 2))


@kernel(
    "slices (plain and strided), concatenate along both axes, f32 16x64",
    A((f32(), (16, 64)), (f32(), (16, 16))),
)
def slice_concat(x, y):
    left = x[:, :32]
    strided = x[::2, 1::3]
    rows = jnp.concatenate([x[8:], x[:8]], axis=0)
    cols = jnp.concatenate([y, x[:, 16:48], y], axis=1)
    return left, strided, rows, cols


@kernel(
    "pad (edge, interior, negative) and reverse, f32 16x32",
    A((f32(), (16, 32)),),
)
def pad_reverse(x):
    padded = jnp.pad(x, ((1, 2), (3, 0)))
    interior = lax.pad(x, jnp.float32(-1.0), ((2, -3, 1), (0, 0, 0)))
    return padded, interior, jnp.flip(x, axis=0), jnp.flip(x, axis=(0, 1))


@kernel(
    "dynamic_slice and dynamic_update_slice with runtime s32 offsets (row 40 is clamped to 32)",
    A((f32(), (48, 64)), (scalar_i32(40), ()), (scalar_i32(5), ()), (f32(), (16, 16))),
)
def dynamic_slice_f32(x, i, j, upd):
    return lax.dynamic_slice(x, (i, j), (16, 16)), lax.dynamic_update_slice(x, upd, (i, j))


# --------------------------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------------------------


@kernel(
    "integer elementwise: s32 add/sub/mul with wrap-around, and/or/xor/not, clamp; s8 add/mul wrap",
    A((i32(-(2**31), 2**31 - 1), (16, 32)), (i32(-(2**31), 2**31 - 1), (16, 32)),
      (i8(-128, 128), (16, 32)), (i8(-128, 128), (16, 32))),
)
def int_elementwise(a, b, c, d):
    return (
        a + b,
        a - b,
        a * b,
        a & b,
        a | b,
        a ^ b,
        ~a,
        lax.clamp(jnp.int32(-(2**20)), a >> 8, jnp.int32(2**20)),
        c + d,
        c * d,
    )


@kernel(
    "shifts: s32 shift-left / arithmetic / logical right, u32 right (amounts 0..35: >= 32 too)",
    A((i32(-(2**31), 2**31 - 1), (16, 32)), (i32(0, 36), (16, 32)), (u32(0, 2**32 - 1), (16, 32))),
)
def int_shifts(a, s, u):
    return (
        jnp.left_shift(a, s),
        jnp.right_shift(a, s),
        lax.shift_right_logical(a, s),
        jnp.right_shift(u, s.astype(jnp.uint32)),
    )


@kernel(
    "integer division/remainder: s32 floor_divide, remainder (python semantics), lax.div/rem",
    A((i32(-1000, 1000), (16, 32)), (i32(1, 10), (16, 32)), (i32(-1, 2), (16, 32))),
)
def int_divrem(a, b, sign):
    b = b * jnp.where(sign < 0, -1, 1)
    return jnp.floor_divide(a, b), jnp.remainder(a, b), lax.div(a, b), lax.rem(a, b)


@kernel(
    "f32 elementwise chain (add, sub, neg, min, max, clamp) as generated by the fuzzer",
    A((f32(), (16, 32)), (f32(), (16, 32)), (f32(), (16, 32))),
)
def elementwise_chain_f32(a, b, c):
    t = lax.add(a, b)
    t = lax.sub(t, c)
    t = lax.neg(t)
    t = lax.min(t, a)
    t = lax.max(t, lax.sub(c, b))
    return lax.clamp(jnp.float32(-1.5), t, jnp.float32(2.0))


@kernel(
    "s32 elementwise chain (add, sub, neg, min, max, clamp) as generated by the fuzzer",
    A((i32(-100, 100), (16, 32)), (i32(-100, 100), (16, 32)), (i32(-100, 100), (16, 32))),
)
def elementwise_chain_i32(a, b, c):
    t = lax.add(a, b)
    t = lax.sub(t, c)
    t = lax.neg(t)
    t = lax.min(t, a)
    t = lax.max(t, lax.sub(c, b))
    return lax.clamp(jnp.int32(-50), t, jnp.int32(120))


@kernel(
    "f32 unary math on positive inputs: exp, log, sqrt, rsqrt, tanh, logistic, log1p, expm1, pow",
    A((f32u(0.1, 4.0), (16, 32)),),
)
def unary_math_f32(x):
    return (
        jnp.exp(x),
        jnp.log(x),
        jnp.sqrt(x),
        lax.rsqrt(x),
        jnp.tanh(x - 2.0),
        jax.nn.sigmoid(x - 2.0),
        jnp.log1p(x),
        jnp.expm1(x - 2.0),
        jnp.power(x, 1.5),
    )


@kernel(
    "f32 non-transcendental unary ops and comparisons: abs, sign, floor, ceil, round, compare, select",
    A((f32(2.0), (16, 32)), (f32(2.0), (16, 32))),
)
def compare_select_f32(x, y):
    return (
        jnp.abs(x),
        jnp.sign(x),
        jnp.floor(x),
        jnp.ceil(x),
        jnp.round(x),
        x > y,
        jnp.where(x > y, x, y * 2.0),
        (x >= 0) & (y < 0),
    )


# --------------------------------------------------------------------------------------------
# Gemmini evaluation kernels (Act paper): 16x16 int8 tiles, int32 results
#
# Act §9.3 evaluates the Gemmini SW library's "supported" kernels MAC (A.B+C), GEMM (A.B) and
# ADD (A+B), and "nine compositions of GEMM and ADD on a single tile ... a fusion of 2-3 Gemmini
# SW library kernels" ("composite", Fig. 18-19). The text names only A.B.C and A.B.C.D (and the
# same 2-3-4 operand chain for ADD); the full list is in the figures' labels and in the
# authors' artifact (github.com/act-compiler/act, kernels/gemmini/swlib/): A.B.C, A+B+C,
# A.B+A.C, A.B+C+D, A.B.C+D, A.B.C+A, A.B.C.D, A.B.C.A, A+B+C+D. Results are int32. Gemmini's
# systolic array multiplies int8 operands only, so where a product feeds another product it is
# requantized to int8 first (clamp to [-128, 127], as Gemmini's mvout does; the artifact's
# kernels are int8 throughout): that is the computation a Gemmini program can perform.
# gemmini_ab_plus_c (the MAC with an int8 C) and gemmini_apb_times_c ((A+B).C) are extra.
# --------------------------------------------------------------------------------------------

T16 = (16, 16)
I8x3 = A((i8(), T16), (i8(), T16), (i8(), T16))
I8x4 = A((i8(), T16), (i8(), T16), (i8(), T16), (i8(), T16))


def _mm(x, y):
    """int32 matmul of two 16x16 tiles (int8 or int32)."""
    return jnp.dot(x, y, preferred_element_type=jnp.int32)


def _i32(x):
    return x.astype(jnp.int32)


def _q8(x):
    """int32 -> int8 with saturation, as Gemmini moves an accumulator out."""
    return jnp.clip(x, -128, 127).astype(jnp.int8)


@kernel(
    "Gemmini single-tile MAC: A.B + C, A,B int8 16x16, C int32 16x16 (preloaded accumulator)",
    A((i8(), T16), (i8(), T16), (i32(-4096, 4096), T16)),
)
def gemmini_mac(a, b, c):
    return jnp.dot(a, b, preferred_element_type=jnp.int32) + c


@kernel("Gemmini GEMM: A.B, int8 16x16, int32 result", A((i8(), T16), (i8(), T16)))
def gemmini_gemm(a, b):
    return jnp.dot(a, b, preferred_element_type=jnp.int32)


@kernel("Gemmini ADD: A + B, int8 16x16, int32 result", A((i8(), T16), (i8(), T16)))
def gemmini_add(a, b):
    return a.astype(jnp.int32) + b.astype(jnp.int32)


@kernel("Gemmini A.B.C, int8 16x16 (products requantized to int8), int32 result", A((i8(), T16), (i8(), T16), (i8(), T16)))
def gemmini_abc(a, b, c):
    return _mm(_q8(_mm(a, b)), c)


@kernel("Gemmini A+B+C, int8 16x16, int32 result", A((i8(), T16), (i8(), T16), (i8(), T16)))
def gemmini_add3(a, b, c):
    return a.astype(jnp.int32) + b.astype(jnp.int32) + c.astype(jnp.int32)


@kernel("Gemmini A.B+C, int8 16x16, int32 result", A((i8(), T16), (i8(), T16), (i8(), T16)))
def gemmini_ab_plus_c(a, b, c):
    return jnp.dot(a, b, preferred_element_type=jnp.int32) + c.astype(jnp.int32)


@kernel("Gemmini (A+B).C, int8 16x16 (products requantized to int8), int32 result", A((i8(), T16), (i8(), T16), (i8(), T16)))
def gemmini_apb_times_c(a, b, c):
    return _mm(_q8(_i32(a) + _i32(b)), c)


@kernel("Gemmini A+B+C+D, int8 16x16, int32 result", I8x4)
def gemmini_add4(a, b, c, d):
    return _i32(a) + _i32(b) + _i32(c) + _i32(d)


@kernel("Gemmini A.B+A.C, int8 16x16, int32 result", I8x3)
def gemmini_ab_plus_ac(a, b, c):
    return _mm(a, b) + _mm(a, c)


@kernel("Gemmini A.B+C+D, int8 16x16, int32 result", I8x4)
def gemmini_ab_plus_c_plus_d(a, b, c, d):
    return _mm(a, b) + _i32(c) + _i32(d)


@kernel("Gemmini A.B.C+D, int8 16x16 (products requantized to int8), int32 result", I8x4)
def gemmini_abc_plus_d(a, b, c, d):
    return _mm(_q8(_mm(a, b)), c) + _i32(d)


@kernel("Gemmini A.B.C+A, int8 16x16 (products requantized to int8), int32 result", I8x3)
def gemmini_abc_plus_a(a, b, c):
    return _mm(_q8(_mm(a, b)), c) + _i32(a)


@kernel("Gemmini A.B.C.D, int8 16x16 (products requantized to int8), int32 result", I8x4)
def gemmini_abcd(a, b, c, d):
    return _mm(_q8(_mm(_q8(_mm(a, b)), c)), d)


@kernel("Gemmini A.B.C.A, int8 16x16 (products requantized to int8), int32 result", I8x3)
def gemmini_abca(a, b, c):
    return _mm(_q8(_mm(_q8(_mm(a, b)), c)), a)


# --------------------------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------------------------

_XLA_NAMES = {
    np.dtype(np.bool_): "pred",
    np.dtype(np.int8): "s8",
    np.dtype(np.int16): "s16",
    np.dtype(np.int32): "s32",
    np.dtype(np.int64): "s64",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16",
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
}


def _type_str(a: np.ndarray) -> str:
    return f"{_XLA_NAMES[np.dtype(a.dtype)]}[{','.join(map(str, a.shape))}]"


def _storable(a) -> np.ndarray:
    """numpy copy of ``a``; bf16/f16 widened to float32 (exact)."""
    a = np.asarray(a)
    if a.dtype in (np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)):
        a = a.astype(np.float32)
    return np.array(a, order="C", copy=True)  # (ascontiguousarray would make 0-d arrays 1-d)


def export(k: Kernel, out: pathlib.Path) -> str:
    args = k.args()
    jitted = jax.jit(k.fn)
    hlo = jitted.lower(*args).as_text(dialect="hlo")
    results = jax.tree_util.tree_leaves(jitted(*args))
    outs = [np.asarray(r) for r in results]
    (out / f"{k.name}.hlo").write_text(hlo)
    arrays = {f"arg{i}": _storable(a) for i, a in enumerate(args)}
    arrays.update({f"out{i}": _storable(o) for i, o in enumerate(outs)})
    write_npz(out / f"{k.name}.npz", arrays)
    ins = ", ".join(_type_str(np.asarray(a)) for a in args)
    res = ", ".join(_type_str(o) for o in outs)
    return f"{k.name:24s} ({ins}) -> ({res})"


def write_manifest(out: pathlib.Path) -> None:
    """JAX kernels, then the hand-written ones of examples/act_kernels.py."""
    entries = [(k.name, k.description) for k in KERNELS.values()]
    entries += [(name, k.description) for name, k in HAND_WRITTEN.items()]
    width = max(len(n) for n, _ in entries)
    lines = [f"{name:{width}s}  {description}" for name, description in entries]
    (out / "MANIFEST.txt").write_text("\n".join(lines) + "\n")


def generate(out: pathlib.Path, only: list[str] | None, quiet: bool = False) -> None:
    out.mkdir(parents=True, exist_ok=True)
    names = only if only else list(KERNELS)
    unknown = [n for n in names if n not in KERNELS]
    if unknown:
        raise SystemExit(f"unknown kernel(s): {', '.join(unknown)}; known: {', '.join(KERNELS)}")
    for name in names:
        line = export(KERNELS[name], out)
        if not quiet:
            print(line)
    write_manifest(out)
    if not only:  # a full run removes fixtures of kernels that no longer exist
        for stale in sorted(out.glob("*.hlo")) + sorted(out.glob("*.npz")):
            if stale.stem not in KERNELS and stale.stem not in HAND_WRITTEN:
                stale.unlink()
                print(f"removed stale {stale.name}")


def check(out: pathlib.Path, only: list[str] | None) -> int:
    """Regenerate into a temporary directory and compare byte for byte with ``out``."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = pathlib.Path(tmp)
        generate(tmp_path, only, quiet=True)
        bad = 0
        for f in sorted(tmp_path.iterdir()):
            ref = out / f.name
            if not ref.exists() or ref.read_bytes() != f.read_bytes():
                print(f"DIFFERS: {f.name}")
                bad += 1
        print(f"checked {len(list(tmp_path.iterdir()))} files, {bad} differ")
        return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT, help="output directory")
    p.add_argument("--only", nargs="+", metavar="NAME", help="export only these kernels")
    p.add_argument("--check", action="store_true",
                   help="regenerate into a temp dir and compare with --out (exit 1 on change)")
    p.add_argument("--list", action="store_true", help="list kernel names and exit")
    ns = p.parse_args(argv)
    if ns.list:
        for k in KERNELS.values():
            print(f"{k.name:24s} {k.description}")
        return 0
    if ns.check:
        return check(ns.out, ns.only)
    generate(ns.out, ns.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
