"""Act Fig. 21: compile time of the generated backend, with a breakdown by phase.

Each kernel is compiled --repeat times (fresh, never cached: this measures the compiler)
with deterministic=True; the table gives the median over the runs of the total compile
time and of each phase as recorded in CompileResult.stats:
  phase 1 = equality saturation + extraction of pii graphs (instruction selection),
  phase 2 = ordering + CP-SAT allocation,
  emit    = assembly emission,
plus the number of pii graphs and candidate programs of the last run.
Default kernels: the 12 Gemmini evaluation kernels on gemmini.

--fuzz N instead times N random kernels from runtime_skeleton.fuzz.random_kernel
(seeds --seed .. --seed+N-1, at most --max-nodes nodes) on gemmini; kernels the backend
cannot compile are counted separately (with their reasons) and left out of the medians.

    python bench/compile_time.py [--kernels NAME ...] [--repeat 3] [--timeout 180]
    python bench/compile_time.py --fuzz 20 [--seed 0] [--max-nodes 30]
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from _common import GEMMINI_EVAL, KERNELS, compile_record, median, one_line, print_table, progress


def time_kernel(target: str, text: str, repeat: int, timeout: float) -> dict:
    runs, err = [], None
    for _ in range(repeat):
        rec = compile_record(target, text, timeout=timeout)
        if not rec["ok"]:
            err = rec["error"]
            break
        runs.append(rec)
    if err is not None:
        return {"ok": False, "error": err}
    med = {k: median([r["stats"][k] for r in runs]) for k in ("seconds", "phase1", "phase2", "emit")}
    return {"ok": True, **med, "pii_graphs": runs[-1]["stats"]["pii_graphs"],
            "candidates": runs[-1]["stats"]["candidates"], "cycles": runs[-1]["cycles"]}


def row(name: str, r: dict) -> list:
    if not r["ok"]:
        return [name, "", "", "", "", "", "", one_line(r["error"], 80)]
    return [name, f"{r['seconds']:.2f}", f"{r['phase1']:.2f}", f"{r['phase2']:.2f}", f"{r['emit']:.3f}",
            r["pii_graphs"], r["candidates"], ""]


COLUMNS = ["kernel", "total s", "phase 1 s", "phase 2 s", "emit s", "pii graphs", "candidates", "not compiled"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--kernels", nargs="+", default=GEMMINI_EVAL, metavar="NAME",
                    help="kernels in examples/kernels (default: the 12 Gemmini evaluation kernels)")
    ap.add_argument("--target", default="gemmini", help="target (default gemmini)")
    ap.add_argument("--repeat", type=int, default=3, help="compiles per kernel; the median is shown (default 3)")
    ap.add_argument("--timeout", type=float, default=180.0, help="compile timeout per run, s (default 180)")
    ap.add_argument("--fuzz", type=int, metavar="N", help="time N random fuzz kernels on gemmini instead")
    ap.add_argument("--seed", type=int, default=0, help="first fuzz seed (default 0)")
    ap.add_argument("--max-nodes", type=int, default=30, help="fuzz kernel size bound (default 30)")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    rows = []

    if args.fuzz:
        try:
            from runtime_skeleton import fuzz
        except ImportError:
            fuzz = None
        if fuzz is None or not hasattr(fuzz, "random_kernel"):
            ap.error("runtime_skeleton.fuzz.random_kernel is not available")
        target = "gemmini"
        ok, reasons = [], Counter()
        for seed in range(args.seed, args.seed + args.fuzz):
            text = fuzz.random_kernel(target, seed, max_nodes=args.max_nodes)
            progress(f"fuzz seed {seed}: compiling ...")
            r = time_kernel(target, text, args.repeat, args.timeout)
            progress(f"fuzz seed {seed}: " + (f"{r['seconds']:.2f} s" if r["ok"] else "unsupported"))
            rows.append(row(f"fuzz_{seed}", r))
            if r["ok"]:
                ok.append(r)
            else:
                reasons[one_line(r["error"], 60)] += 1
        print_table(f"Compile time on {target}, {args.fuzz} fuzz kernels (median of {args.repeat})",
                    COLUMNS, rows, right={1, 2, 3, 4, 5, 6})
        print(f"compiled {len(ok)} of {args.fuzz}; unsupported {args.fuzz - len(ok)}")
        if ok:
            print("median over compiled kernels: total {:.2f} s, phase 1 {:.2f} s, phase 2 {:.2f} s, emit {:.3f} s"
                  .format(*(median([r[k] for r in ok]) for k in ("seconds", "phase1", "phase2", "emit"))))
        for reason, n in reasons.most_common():
            print(f"  unsupported ×{n}: {reason}")
    else:
        for name in args.kernels:
            path = KERNELS / f"{name}.hlo"
            if not path.exists():
                rows.append(row(name, {"ok": False, "error": f"no such kernel {path}"}))
                continue
            progress(f"{name}: compiling ×{args.repeat} ...")
            r = time_kernel(args.target, path.read_text(), args.repeat, args.timeout)
            progress(f"{name}: " + (f"median {r['seconds']:.2f} s" if r["ok"] else "not compiled"))
            rows.append(row(name, r))
        print_table(f"Compile time on {args.target} (median of {args.repeat}; Act Fig. 21)", COLUMNS, rows,
                    right={1, 2, 3, 4, 5, 6})
    print(f"total time {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
