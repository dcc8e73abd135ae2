"""Completeness by construction (issue 37, Deliver 6): random valid programs of a target
(3-30 instructions, runtime_skeleton/fuzz/programs.py), the kernels they compute
compiled by the backend at the default budget of `fuzz` (10 s, deterministic), every
program verified on the simulator against the reference interpreter, and its cost
compared with the random program's.

Per target: how many programs were drawn, compiled, verified, failed; the share whose
compiled program costs no more cycles than the random one, and each that costs more
with both costs; compile time p50 and p95; the random programs' sizes.

    python bench/random_programs.py [--targets gemmini amx] [--n 200] [--seed 0] [--jobs 2] [--timeout 10]
"""
from __future__ import annotations

import statistics

from _common import campaign_args, percentile, print_table, progress, provenance

from runtime_skeleton.fuzz.run import VERIFIED, fuzz


def main() -> None:
    args = campaign_args(__doc__.splitlines()[0], n=200, jobs=1)
    print(provenance())
    rows, worse = [], []
    for t in args.targets:
        progress(f"{t}: {args.n} random programs")
        rep = fuzz(t, args.n, args.seed, timeout_per_kernel=args.timeout, out_dir="fuzz_failures", quiet=True,
                   jobs=args.jobs, from_programs=True)
        ok = [o for o in rep.outcomes if o.status == VERIFIED]
        cheaper = [o for o in ok if o.cycles <= o.random_cycles]
        worse += [(t, o) for o in ok if o.cycles > o.random_cycles]
        times = [o.seconds for o in rep.outcomes if o.compiled]
        rows.append([t, rep.n, rep.compiled, rep.verified, rep.unsupported, rep.failed,
                     f"{100 * len(cheaper) / max(1, len(ok)):.1f}%", f"{percentile(times, 0.5):.2f}",
                     f"{percentile(times, 0.95):.2f}",
                     f"{statistics.median(o.nodes for o in rep.outcomes):g}"])
    print_table("Random programs: compiled, verified, and no dearer than the random program",
                ["target", "programs", "compiled", "verified", "unsupported", "failed", "cost <= random",
                 "compile p50 s", "compile p95 s", "kernel nodes (median)"], rows)
    if worse:
        print_table("Compiled programs dearer than their random program",
                    ["target", "seed", "cycles", "random program's cycles"],
                    [[t, o.seed, f"{o.cycles:g}", f"{o.random_cycles:g}"] for t, o in worse])


if __name__ == "__main__":
    main()
