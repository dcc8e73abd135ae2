"""Roofline table: how close the generated backends get to each target's roofline bound.

For every kernel in examples/kernels/*.hlo (plus examples/qkv/attention.hlo) and each
target (default gemmini and amx; qkv is also accepted), try to compile the kernel with a
short timeout and report the program's instruction count, its cycles under the timing
model (runtime_skeleton.sim.timing), the roofline bound T_peak
(runtime_skeleton.sim.roofline, computed with the kernel's own flops),
% of roofline = 100 * T_peak / cycles and the program's shape (straight-line, loops,
stages or pieces); or the reason the target could not compile the
kernel (first 80 characters). A summary line per target gives how many compiled and the
median % of roofline. Results are cached in bench/.cache/ (keyed by kernel text hash,
target and timeout); --no-cache recompiles.

    python bench/roofline.py [--targets gemmini amx] [--kernels NAME ...] [--timeout 30] [--no-cache]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from _common import KERNELS, ROOT, Cache, compile_record, median, one_line, print_table, progress

QKV_ATTENTION = ROOT / "examples" / "qkv" / "attention.hlo"


def kernel_paths() -> dict[str, Path]:
    paths = {p.stem: p for p in sorted(KERNELS.glob("*.hlo"))}
    if QKV_ATTENTION.exists():
        paths["qkv_attention"] = QKV_ATTENTION
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--targets", nargs="+", default=["gemmini", "amx"], help="targets (default: gemmini amx)")
    ap.add_argument("--kernels", nargs="+", metavar="NAME",
                    help="kernel names (file stems in examples/kernels, or qkv_attention); default all")
    ap.add_argument("--timeout", type=float, default=30.0, help="compile timeout per kernel, s (default 30)")
    ap.add_argument("--no-cache", action="store_true", help="recompile instead of reading bench/.cache/")
    args = ap.parse_args(argv)
    cache = Cache(not args.no_cache)
    paths = kernel_paths()
    names = args.kernels or list(paths)
    unknown = [n for n in names if n not in paths]
    if unknown:
        ap.error(f"unknown kernel(s): {', '.join(unknown)}; choose from {', '.join(paths)}")
    t_start = time.perf_counter()

    rows, summary = [], []
    for target in args.targets:
        pcts, compiled = [], 0
        for name in names:
            text = paths[name].read_text()
            extra = f"t={args.timeout},roofline"
            rec = cache.get("roof", target, text, extra)
            if rec is None:
                progress(f"{target} {name}: compiling ...")
                rec = compile_record(target, text, timeout=args.timeout, do_roofline=True)
                cache.put("roof", target, text, rec, extra)
                progress(f"{target} {name}: " + (f"{rec['cycles']} cycles" if rec["ok"] else "not compiled")
                         + f" ({rec['wall']:.1f} s)")
            else:
                progress(f"{target} {name}: cached")
            if not rec["ok"]:
                rows.append([target, name, "", "", "", "", one_line(rec["error"], 80)])
                continue
            compiled += 1
            t_peak = rec.get("t_peak")
            if t_peak is None:
                bound, pct, note = "—", "—", one_line(rec.get("roofline_reason") or "roofline undefined", 80)
            else:
                p = 100.0 * t_peak / rec["cycles"] if rec["cycles"] else None
                if p is not None:
                    pcts.append(p)
                bound = f"{t_peak:.0f}"
                pct = f"{p:.1f}%" if p is not None else "—"
                note = f"bound: {rec.get('roofline_term')}"
            if "program" in rec:  # records cached before it was kept lack it
                note = one_line(f"{note}; {rec['program']}", 80)
            rows.append([target, name, rec["instructions"], rec["cycles"], bound, pct, note])
        med = median(pcts)
        summary.append(f"{target}: compiled {compiled} of {len(names)}, median % roofline "
                       + (f"{med:.1f}%" if med is not None else "—"))

    print_table("Cycles vs. roofline bound", ["target", "kernel", "instructions", "cycles", "roofline bound",
                                              "% of roofline", "notes / why not compiled"], rows,
                right={2, 3, 4, 5})
    for line in summary:
        print(line)
    print(f"total time {time.perf_counter() - t_start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
