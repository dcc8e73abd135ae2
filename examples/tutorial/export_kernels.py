#!/usr/bin/env python3
"""Export the tutorial's kernels (docs/new-target.md) from JAX to HLO text.

    python examples/tutorial/export_kernels.py

writes matmul_bias_relu.hlo, matmul_f32.hlo and matmul_16x16.hlo next to this
script. Needs jax (CPU is enough).
"""
import os
import pathlib

import jax
import jax.numpy as jnp

jax.config.update("jax_platforms", "cpu")

HERE = pathlib.Path(__file__).resolve().parent


def matmul_bias_relu(a, b, bias):
    """One TMU tile: relu(a . b + bias), int8 inputs, int32 accumulation."""
    acc = jnp.dot(a, b, preferred_element_type=jnp.int32) + bias
    return jnp.maximum(acc, 0)


def matmul_f32(a, b):
    """A float matmul: TMU has no float arithmetic."""
    return jnp.dot(a, b)


def matmul_16x16(a, b):
    """Four output tiles, two steps of the reduction each."""
    return jnp.dot(a, b, preferred_element_type=jnp.int32)


def spec(shape, dtype):
    return jax.ShapeDtypeStruct(shape, dtype)


KERNELS = {
    "matmul_bias_relu": (matmul_bias_relu, [spec((8, 8), jnp.int8), spec((8, 8), jnp.int8),
                                            spec((8, 8), jnp.int32)]),
    "matmul_f32": (matmul_f32, [spec((8, 8), jnp.float32), spec((8, 8), jnp.float32)]),
    "matmul_16x16": (matmul_16x16, [spec((16, 16), jnp.int8), spec((16, 16), jnp.int8)]),
}

for name, (f, args) in KERNELS.items():
    hlo = jax.jit(f).lower(*args).as_text(dialect="hlo")
    path = HERE / f"{name}.hlo"
    path.write_text(hlo)
    print("wrote", os.path.relpath(path))
