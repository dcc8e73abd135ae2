"""Programs run natively against numpy and XLA:CPU, and the timing model against the clock.

    python bench/native.py [--target avx2] [--write]

Each kernel is a JAX function at a few shapes: exported to HLO, compiled by the backend,
checked natively against the reference interpreter, then timed: the program's kernel alone
(inputs in place; the fastest of 5 means over >= 50 ms of calls), XLA:CPU (jax.jit on the
same arrays, the result ready), numpy (the same function written with numpy). The timing
model's cycles are set beside the measured ones (seconds x the CPU's clock as
/proc/cpuinfo reports it), and their ratio says how far the model is off. One core; run it
alone on the machine. ``--write`` puts the table into docs/performance.md.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import time

import numpy as np
from _common import backend, markdown_table, one_line, print_table, provenance, write_section


def _kernels():
    import jax.numpy as jnp

    def chain(a, b, c):
        return jnp.clip(jnp.maximum(jnp.minimum(-(a + b - c), a), c - b), -1.5, 2.0)

    def chain_np(a, b, c):
        return np.clip(np.maximum(np.minimum(-(a + b - c), a), c - b), -1.5, 2.0)

    return [
        ("add_relu", lambda a, b: jnp.maximum(a + b, 0.0), lambda a, b: np.maximum(a + b, 0.0), 2),
        ("axpy", lambda a, x, y: a * x + y, lambda a, x, y: a * x + y, 3),
        ("chain", chain, chain_np, 3),
    ]


SHAPES = [(8, 64), (16, 32), (64, 64)]


def cpu_hz() -> float | None:
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    m = re.search(r"cpu MHz\s*:\s*([0-9.]+)", text)
    return float(m.group(1)) * 1e6 if m else None


def measure(target: str, timeout: float) -> list[list]:
    import jax
    import jax.numpy as jnp

    from runtime_skeleton.compile import CompileError, verify
    from runtime_skeleton.emit.native import best_seconds
    from runtime_skeleton.sim.cost import cycles

    be = backend(target)
    hz = cpu_hz()
    rows = []
    rng = np.random.default_rng(0)
    for name, fn, np_fn, arity in _kernels():
        for shape in SHAPES:
            args = [rng.standard_normal(shape).astype(np.float32) for _ in range(arity)]
            label = f"{name} f32{list(shape)}"
            lowered = jax.jit(fn).lower(*[jax.ShapeDtypeStruct(shape, jnp.float32)] * arity)
            t0 = time.perf_counter()
            try:
                res = be.compile_hlo(lowered, timeout=timeout)
            except CompileError as err:
                rows.append([label, f"{time.perf_counter() - t0:.1f}", "", "", "", "", "", "", "",
                             one_line(err.message, 60)])
                continue
            compile_s = time.perf_counter() - t0
            problems = verify(be.TARGET, res, native=True)
            kernel = res.native()
            native_s = kernel.seconds(args)
            jitted = jax.jit(fn)
            jargs = [jnp.asarray(a) for a in args]
            xla_s = best_seconds(lambda: jitted(*jargs).block_until_ready())
            numpy_s = best_seconds(lambda: np_fn(*args))
            model = cycles(be.TARGET, res.program)
            measured = native_s * hz if hz else None
            rows.append([label, f"{compile_s:.1f}", res.program.executed(), model,
                         f"{measured:.0f}" if measured else "", f"{model / measured:.2f}" if measured else "",
                         f"{native_s * 1e6:.2f}", f"{xla_s * 1e6:.2f}", f"{numpy_s * 1e6:.2f}",
                         "ok" if not problems else one_line("; ".join(problems), 60)])
    return rows


COLUMNS = ["kernel", "compile s", "executed", "model cycles", "measured cycles", "model/measured",
           "native µs", "XLA:CPU µs", "numpy µs", "native vs reference"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="avx2", help="a generated target with native texts (default avx2)")
    ap.add_argument("--timeout", type=float, default=60.0, help="compile timeout per kernel, work-seconds")
    ap.add_argument("--write", action="store_true", help="write the table into docs/performance.md")
    args = ap.parse_args(argv)
    rows = measure(args.target, args.timeout)
    where = provenance()
    print_table(f"Native runs on {args.target} ({where})", COLUMNS, rows, right=set(range(1, 9)))
    if args.write:
        write_section("bench/native.py", f"Native runs on {args.target}",
                      f"`python bench/native.py --target {args.target} --write`, {where}, "
                      f"{time.strftime('%Y-%m-%d')}. Kernels alone (inputs in place), one core; model cycles from "
                      "the timing model, measured cycles = seconds x the clock /proc/cpuinfo reports.\n\n"
                      + markdown_table(COLUMNS, rows) + "\n")
    return 0 if all(r[-1] == "ok" or r[2] == "" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
