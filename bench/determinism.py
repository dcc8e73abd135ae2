"""Same input, same program: each kernel compiled alone, then again with a busy process
beside it (a spinning loop on every core), must give byte-identical programs.

    python bench/determinism.py [--timeout 10] [--target T] [KERNEL.hlo ...]
    (default: the gemmini_* and amx_k* kernels of examples/kernels)

Prints one line per kernel (same / DIFFERENT / refused both times) with the wall seconds of
each compile, the commit and the machine; exits 1 when any program differs.
"""
from __future__ import annotations

import argparse
import multiprocessing
import sys
import time

from _common import KERNELS, backend, provenance

from runtime_skeleton.compile import CompileError, CompileOptions, compile_hlo


def _spin(stop) -> None:  # noqa: ANN001
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def _compile(target: str, path: str, timeout: float) -> tuple[str, float]:
    t0 = time.perf_counter()
    try:
        text = compile_hlo(backend(target).TARGET, path, CompileOptions(timeout=timeout)).text
    except CompileError as err:
        text = "refused: " + err.message
    return text, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernels", nargs="*")
    ap.add_argument("--timeout", type=float, default=10.0, help="work-seconds per compile (default 10)")
    ap.add_argument("--target", help="the target of the kernels given (default: amx for amx_* files, else gemmini)")
    ns = ap.parse_args()
    paths = ns.kernels or sorted(str(p) for p in KERNELS.glob("*.hlo")
                                 if p.stem.startswith("gemmini_") or p.stem.startswith("amx_k"))
    differ = 0
    ctx = multiprocessing.get_context("spawn")
    for path in paths:
        target = ns.target or ("amx" if path.rsplit("/", 1)[-1].startswith("amx") else "gemmini")
        alone, t_alone = _compile(target, path, ns.timeout)
        stop = ctx.Event()
        spinners = [ctx.Process(target=_spin, args=(stop,)) for _ in range(multiprocessing.cpu_count())]
        for p in spinners:
            p.start()
        try:
            busy, t_busy = _compile(target, path, ns.timeout)
        finally:
            stop.set()
            for p in spinners:
                p.join()
        same = alone == busy
        differ += not same
        kind = "refused both times" if same and alone.startswith("refused") else "same" if same else "DIFFERENT"
        print(f"{path.rsplit('/', 1)[-1]:36} {target:8} {kind:20} alone {t_alone:6.2f}s  busy {t_busy:6.2f}s",
              flush=True)
    print(f"{len(paths) - differ} of {len(paths)} kernels give the same program; {provenance()}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
