#!/usr/bin/env python3
"""From a JAX function to a verified Gemmini program, in one command:

    python examples/jax_to_gemmini.py [-o OUT_DIR] [--deterministic]

The function below (one int8 16x16 tile: C = saturate_int8(A . B + D), int32
accumulation) is lowered with ``jax.jit(f).lower(...)``; its HLO text is compiled
by the generated gemmini backend (``generated.gemmini.compile_hlo``), and the
program is run on the generated simulator against the reference interpreter.
OUT_DIR receives kernel.hlo, kernel.s and kernel.json. Needs jax (a development
dependency: ``pip install -e ".[dev]"``).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

import jax
import jax.numpy as jnp

jax.config.update("jax_platforms", "cpu")


def matmul_bias_relu_int8(a, b, d):
    """int8 GEMM with an int32 bias, ReLU and saturation to int8: one Gemmini tile."""
    acc = jnp.dot(a, b, preferred_element_type=jnp.int32) + d
    return jnp.clip(acc, 0, 127).astype(jnp.int8)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", default="jax_to_gemmini", help="output folder (default ./jax_to_gemmini)")
    ap.add_argument("--deterministic", action="store_true", help="byte-identical program on every run")
    ns = ap.parse_args(argv)
    root = pathlib.Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    from generated.gemmini import CompileError, compile_hlo, verify

    spec = [jax.ShapeDtypeStruct((16, 16), jnp.int8), jax.ShapeDtypeStruct((16, 16), jnp.int8),
            jax.ShapeDtypeStruct((16, 16), jnp.int32)]
    hlo = jax.jit(matmul_bias_relu_int8).lower(*spec).as_text(dialect="hlo")
    out = pathlib.Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "kernel.hlo").write_text(hlo)
    try:
        res = compile_hlo(hlo, deterministic=ns.deterministic)
    except CompileError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    (out / "kernel.s").write_text(res.text)
    (out / "kernel.json").write_text(json.dumps(res.json(), indent=1) + "\n")
    problems = verify(res)
    if problems:
        print("MISMATCH " + "; ".join(problems), file=sys.stderr)
        return 1
    print(f"{out / 'kernel.s'}: {len(res.program.instructions)} instructions, cost {res.cost:g}; "
          "verified on the simulator against the reference interpreter")
    return 0


if __name__ == "__main__":
    sys.exit(main())
