#!/usr/bin/env python3
"""Reference data for the hand-written Act kernels: the oneDNN kernels K1-K5 that the Act paper
compiles for Intel AMX (Table 4, Appendix E, Figs. 41-54).

The kernels are ``examples/kernels/amx_k<i>.hlo``, written by hand from the paper's listings
and made valid XLA (each file's comment says how and why). This script writes
``amx_k<i>.npz`` next to each in the format of examples/export_jax.py: the inputs ``arg0,
arg1, ...`` and the expected outputs ``out0, out1, ...``. The outputs are computed here with
numpy on the logical values, independently of the reference interpreter that
tests/test_kernels.py checks against them. Integer inputs cover the full u8/s8 range, with rows
that reach the extreme dot products.

    python examples/act_kernels.py [--out examples/kernels] [--check]

Deterministic: inputs come from ``numpy.random.default_rng(crc32(name))`` and the archives have
fixed zip timestamps; ``--check`` regenerates into a temporary directory and compares bytes.
examples/export_jax.py lists these kernels in MANIFEST.txt (from ``KERNELS`` below).
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from npz_fixture import write_npz

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "kernels"

Arrays = list[np.ndarray]


@dataclass(frozen=True)
class Kernel:
    description: str
    make: Callable[[np.random.Generator], tuple[Arrays, Arrays]]  # rng -> (inputs, outputs)


KERNELS: dict[str, Kernel] = {}


def kernel(name: str, description: str):
    def register(make):
        KERNELS[name] = Kernel(description, make)
        return make

    return register


def _u8_s8_operands(rng: np.random.Generator, m: int) -> tuple[np.ndarray, np.ndarray]:
    """A u8[m,64] and the paper's B operand s8[32,64] (row n: the 64 K values of output column
    n), uniform over the full ranges; A row 0 = 255 and B rows 0, 1 = -128, 127 give the extreme
    dot products 64*255*(-128) and 64*255*127."""
    a = rng.integers(0, 256, (m, 64), dtype=np.uint8)
    b = rng.integers(-128, 128, (32, 64), dtype=np.int8)
    a[0], b[0], b[1] = 255, -128, 127
    return a, b


def _u8_s8_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A . B^T in int64, exact; every value fits in int32 (|.| <= 64*255*128 < 2^31)."""
    return (a.astype(np.int64) @ b.astype(np.int64).T).astype(np.int32)


def _outer(rng: np.random.Generator, m: int, n: int) -> tuple[Arrays, Arrays]:
    """K3/K4: A f32[m], B f32[n,4]; out f32[n,m] with out[i,j] = B[i,0] * A[j] (one rounding)."""
    a = rng.standard_normal(m).astype(np.float32)
    b = rng.standard_normal((n, 4)).astype(np.float32)
    return [a, b], [b[:, :1] * a[None, :]]


@kernel("amx_k1", "Act oneDNN K1 (Fig. 42): u8[32,64] . s8 B in VNNI tiles -> s32[32,32] in 16x16 tiles")
def _k1(rng):
    a, b = _u8_s8_operands(rng, 32)
    return [a, b], [_u8_s8_matmul(a, b)]


@kernel("amx_k2", "Act oneDNN K2 (Fig. 45): u8[16,64] . s8 B in VNNI tiles -> s32[16,32] in 16x16 tiles")
def _k2(rng):
    a, b = _u8_s8_operands(rng, 16)
    return [a, b], [_u8_s8_matmul(a, b)]


@kernel("amx_k3", "Act oneDNN K3 (Fig. 48): f32 outer product B[:,0] x A[32] -> f32[14,32] in 14x16 tiles")
def _k3(rng):
    return _outer(rng, 32, 14)


@kernel("amx_k4", "Act oneDNN K4 (Fig. 51): f32 outer product B[:,0] x A[48] -> f32[8,48] in 8x16 tiles")
def _k4(rng):
    return _outer(rng, 48, 8)


@kernel("amx_k5", "Act oneDNN K5 (Fig. 54): K1 and f32 clamp(relu(A*B+C)*D, 0, 255) -> u8[3,16], tuple")
def _k5(rng):
    x, y = _u8_s8_operands(rng, 32)
    a = rng.uniform(-100, 400, (3, 16)).astype(np.float32)  # reaches both clamp bounds
    b, c, d = (rng.uniform(lo, hi, 16).astype(np.float32) for lo, hi in [(0.5, 1.5), (-20, 20), (0.5, 1.5)])
    t = np.maximum(np.float32(0), a * b + c) * d  # float32 numpy ops: one rounding per HLO op
    q = np.clip(t, 0, 255).astype(np.uint8)  # XLA's f32 -> u8 convert truncates toward zero
    return [x, y, a, b, c, d], [_u8_s8_matmul(x, y), q]


def arrays(name: str) -> dict[str, np.ndarray]:
    args, outs = KERNELS[name].make(np.random.default_rng(zlib.crc32(name.encode())))
    return {**{f"arg{i}": a for i, a in enumerate(args)}, **{f"out{i}": o for i, o in enumerate(outs)}}


def generate(out: pathlib.Path) -> None:
    for name in KERNELS:
        write_npz(out / f"{name}.npz", arrays(name))


def check(out: pathlib.Path) -> int:
    """Regenerate into a temporary directory and compare byte for byte with ``out``."""
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        generate(pathlib.Path(tmp))
        for name in KERNELS:
            ref, new = out / f"{name}.npz", pathlib.Path(tmp) / f"{name}.npz"
            if not (out / f"{name}.hlo").exists() or not ref.exists() or ref.read_bytes() != new.read_bytes():
                print(f"DIFFERS: {name} (.npz changed, or .hlo/.npz missing)")
                bad.append(name)
    print(f"checked {len(KERNELS)} kernels, {len(bad)} differ")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT, help="output directory")
    p.add_argument("--check", action="store_true",
                   help="regenerate into a temp dir and compare with --out (exit 1 on change)")
    ns = p.parse_args(argv)
    if ns.check:
        return check(ns.out)
    generate(ns.out)
    for name, k in KERNELS.items():
        print(f"{name:8s} {k.description}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
