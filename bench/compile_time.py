"""Act Fig. 21: compile time of the generated backend, with a breakdown by phase.

Each kernel is compiled --repeat times (fresh, never cached: this measures the compiler)
with deterministic=True; the table gives the median over the runs of the total compile
time and of each phase as recorded in CompileResult.stats:
  phase 1 = saturation (equality saturation) + extraction of pii graphs,
  phase 2 = ordering (topological orders) + allocation (first fit, CP-SAT where it finds nothing),
  emit    = assembly emission,
plus the number of pii graphs and candidate programs of the last run.
Default kernels: the 12 Gemmini evaluation kernels on gemmini.

--large [N ...] instead times large kernels on amx: random DAGs of AVX-512 vector operators
of N nodes each (bench/large_kernels.py; default 150 270 390, Act Fig. 21's sizes).

--fuzz N instead times N random kernels drawn as the fuzz command draws them (the
operators the backend compiles alone, per dtype; --unfiltered: all of them; seeds --seed ..
--seed+N-1, at most --max-nodes nodes) on gemmini; kernels the backend cannot compile are
counted separately (with their reasons) and left out of the medians.

    python bench/compile_time.py [--kernels NAME ...] [--repeat 3] [--timeout 180]
    python bench/compile_time.py --fuzz 20 [--seed 0] [--max-nodes 30]
    python bench/compile_time.py --large [150 270 390] [--repeat 1] [--timeout 600]
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter

from _common import GEMMINI_EVAL, KERNELS, compile_record, median, one_line, print_table, progress
from large_kernels import vector_dag


STEPS = ("seconds", "saturation", "extraction", "ordering", "allocation", "emit")


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
    med = {k: median([r["stats"][k] for r in runs]) for k in STEPS}
    return {"ok": True, **med, "pii_graphs": runs[-1]["stats"]["pii_graphs"],
            "candidates": runs[-1]["stats"]["candidates"], "cycles": runs[-1]["cycles"]}


def row(name: str, r: dict) -> list:
    if not r["ok"]:
        return [name] + [""] * (len(STEPS) + 2) + [one_line(r["error"], 80)]
    return [name] + [f"{r[k]:.3f}" if k == "emit" else f"{r[k]:.2f}" for k in STEPS] + \
        [r["pii_graphs"], r["candidates"], ""]


COLUMNS = ["kernel", "total s", "saturation s", "extraction s", "ordering s", "allocation s", "emit s", "pii graphs",
           "candidates", "not compiled"]
RIGHT = set(range(1, len(COLUMNS) - 1))


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
    ap.add_argument("--unfiltered", action="store_true",
                    help="fuzz kernels of every operator in every dtype (default: those the backend compiles alone, "
                         "as the fuzz command draws them)")
    ap.add_argument("--large", type=int, nargs="*", metavar="N",
                    help="time generated AMX vector DAGs of N nodes instead (default 150 270 390)")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    rows = []

    if args.large is not None:
        for n in args.large or [150, 270, 390]:
            progress(f"vector DAG of {n} nodes (seed {args.seed}) on amx: compiling ×{args.repeat} ...")
            r = time_kernel("amx", vector_dag(n, args.seed), args.repeat, args.timeout)
            progress(f"vector DAG of {n} nodes: " + (f"median {r['seconds']:.2f} s" if r["ok"] else "not compiled"))
            rows.append(row(f"vector_dag_{n}", r))
        print_table(f"Compile time of large kernels on amx (median of {args.repeat}; Act Fig. 21)", COLUMNS, rows,
                    right=RIGHT)
    elif args.fuzz:
        from runtime_skeleton import fuzz

        target = "gemmini"
        if args.unfiltered:
            drawn = target
        else:
            drawn = fuzz.capable(target, say=progress)
            progress(f"drawing from the operators that compile alone: {fuzz.describe(drawn)}")
        ok, reasons = [], Counter()
        for seed in range(args.seed, args.seed + args.fuzz):
            text = fuzz.random_fuzz_kernel(drawn, seed, max_nodes=args.max_nodes).text
            progress(f"fuzz seed {seed}: compiling ...")
            r = time_kernel(target, text, args.repeat, args.timeout)
            progress(f"fuzz seed {seed}: " + (f"{r['seconds']:.2f} s" if r["ok"] else "unsupported"))
            rows.append(row(f"fuzz_{seed}", r))
            if r["ok"]:
                ok.append(r)
            else:
                reasons[one_line(r["error"], 60)] += 1
        print_table(f"Compile time on {target}, {args.fuzz} fuzz kernels (median of {args.repeat})",
                    COLUMNS, rows, right=RIGHT)
        print(f"compiled {len(ok)} of {args.fuzz}; unsupported {args.fuzz - len(ok)}")
        if ok:
            print("median over compiled kernels: total {:.2f} s, saturation {:.2f} s, extraction {:.2f} s, "
                  "ordering {:.2f} s, allocation {:.2f} s, emit {:.3f} s".format(*(median([r[k] for r in ok]) for k in STEPS)))
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
                    right=RIGHT)
    print(f"total time {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
