"""Fit the work clock's costs (runtime_skeleton.budget.COST) to this machine's seconds.

Compiles a fixed set of kernels in this process (the Gemmini evaluation kernels, AMX
K1-K5, fuzz kernels of both targets, a loop nest), records for each the wall seconds and
the events the work clock counted, and fits work-seconds per event by non-negative least
squares, so that the work clock reads about the seconds of this machine. Prints the fit,
each kernel's work-seconds against its wall seconds under the current costs, and the
commit and CPU. Run it alone on the machine:

    python bench/work_clock.py [--timeout 10]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from _common import GEMMINI_EVAL, KERNELS, backend, provenance

from runtime_skeleton import budget
from runtime_skeleton.compile import CompileError, CompileOptions, compile_hlo
from runtime_skeleton.fuzz.gen import random_fuzz_kernel
from runtime_skeleton.fuzz.profile import profile

FUZZ_SEEDS = range(93000, 93006)  # not a seed range any test or other bench draws from
LOOP_KERNELS = ["gemm_i8"]


def _cases() -> list[tuple[str, str, str]]:
    """(target, name, HLO text) of every kernel timed."""
    cases = [("gemmini", k, (KERNELS / f"{k}.hlo").read_text()) for k in GEMMINI_EVAL]
    cases += [("amx", f"amx_k{i}", (KERNELS / f"amx_k{i}.hlo").read_text()) for i in range(1, 6)]
    cases += [("gemmini", k, (KERNELS / f"{k}.hlo").read_text()) for k in LOOP_KERNELS if (KERNELS / f"{k}.hlo").exists()]
    for t in ("gemmini", "amx"):
        prof = profile(backend(t).TARGET)
        cases += [(t, f"fuzz_{s}", random_fuzz_kernel(prof, s, None, None, None).text) for s in FUZZ_SEEDS]
    return cases


def nonnegative_fit(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min |a x - b| with x >= 0: least squares, dropping the columns that come out negative."""
    keep = list(range(a.shape[1]))
    while True:
        x, *_ = np.linalg.lstsq(a[:, keep], b, rcond=None)
        if (x >= 0).all():
            out = np.zeros(a.shape[1])
            out[keep] = x
            return out
        keep = [k for k, v in zip(keep, x) if v >= 0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=10.0, help="work-seconds per compile (default 10)")
    ns = ap.parse_args()
    events = list(budget.COST)
    rows, walls, names = [], [], []
    for target, name, text in _cases():
        before, w0, t0 = budget.counts(), budget.now(), time.perf_counter()
        try:
            compile_hlo(backend(target).TARGET, text, CompileOptions(timeout=ns.timeout))
            status = "ok"
        except CompileError:
            status = "refused"
        wall, work = time.perf_counter() - t0, budget.now() - w0
        after = budget.counts()
        rows.append([after[e] - before[e] for e in events])
        walls.append(wall)
        names.append(name)
        print(f"{target:8} {name:28} {status:8} wall {wall:7.2f}s  work {work:7.2f}  ratio {work / wall:5.2f}",
              flush=True)
    a, b = np.array(rows, dtype=float), np.array(walls)
    x = nonnegative_fit(a, b)
    print("\nfitted work-seconds per event (budget.COST):")
    for e, v in zip(events, x):
        print(f"    \"{e}\": {v:.3g},  (now {budget.COST[e]:.3g}; {int(a[:, events.index(e)].sum())} counted)")
    fitted = a @ x
    print(f"fit: median |work - wall| / wall {np.median(np.abs(fitted - b) / b):.2f}; "
          f"total wall {b.sum():.1f}s, fitted {fitted.sum():.1f}")
    print(provenance())


if __name__ == "__main__":
    main()
