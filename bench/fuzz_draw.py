"""The fuzzer's own draw at the default budget (issue 37's `fuzz --n 200` figures): kernels of
Act's ten fuzzing operators (App. D) over the (operator, dtype) pairs the backend compiles
alone (the CLI's probed draw), compiled at `fuzz`'s budget (10 work-seconds, deterministic)
and each program verified on the simulator against the reference interpreter.

Per target: kernels, verified, refused within 1 s, refused later, not compiled (a time
limit), wrong; the share of the kernels not refused that compile; compile time p50/p95 of
the verified ones and of all. Then the draw's profile (operators, element types, shapes,
node counts), the refusals' reasons, and every kernel neither verified nor refused at once.
``--write`` puts the tables into docs/performance.md.

    python bench/fuzz_draw.py [--targets gemmini amx] [--n 200] [--seed 0] [--jobs 2] [--timeout 10] [--write]
"""
from __future__ import annotations

import sys
import time
from collections import Counter

from _common import (PROFILE_COLUMNS, campaign_args, markdown_table, percentile, print_table, profile_row, progress,
                     provenance, write_section)

from runtime_skeleton.fuzz import OPS, VERIFIED, capable, fuzz, random_fuzz_kernel
from runtime_skeleton.fuzz.run import FAILED
from runtime_skeleton.fuzz.profile import resolve_target

COLUMNS = ["target", "seeds", "verified", "refused < 1 s", "refused later", "not compiled", "wrong",
           "compiled of not refused", "p50 s (verified)", "p95 s (verified)", "p50 s (all)", "p95 s (all)"]
REFUSED_AT_ONCE = 1.0  # seconds


def _refused(o) -> bool:  # noqa: ANN001
    """Refused: no program and a reason that is not a time limit."""
    return not o.compiled and o.status != FAILED and not o.category.startswith("timeout") and not o.at_limit


def campaign(target: str, n: int, seed: int, timeout: float, jobs: int) -> tuple[list, list, list, Counter]:
    """One target's row, its profile row, its misses and its refusal reasons."""
    t = resolve_target(target)
    prof = capable(t, OPS, jobs=jobs)
    texts = [random_fuzz_kernel(prof, s).text for s in range(seed, seed + n)]
    rep = fuzz(t, n, seed, timeout_per_kernel=timeout, out_dir="fuzz_failures", quiet=True, jobs=jobs, probe=True)
    outs = rep.outcomes
    ok = [o for o in outs if o.status == VERIFIED]
    refused = [o for o in outs if _refused(o)]
    at_once = [o for o in refused if o.seconds < REFUSED_AT_ONCE]
    wrong = [o for o in outs if o.status == FAILED]
    left = len(outs) - len(refused)
    times, all_times = [o.seconds for o in ok], [o.seconds for o in outs]
    row = [target, f"{seed}-{seed + n - 1}", len(ok), len(at_once), len(refused) - len(at_once),
           len(outs) - len(ok) - len(refused) - len(wrong), len(wrong),
           f"{100 * len(ok) / left:.1f}%" if left else "-",
           f"{percentile(times, 0.5):.2f}", f"{percentile(times, 0.95):.2f}",
           f"{percentile(all_times, 0.5):.2f}", f"{percentile(all_times, 0.95):.2f}"]
    reasons = Counter(o.category for o in refused)
    quick = {o.seed for o in at_once}
    misses = [[target, o.seed, o.nodes, f"{o.seconds:.1f}", o.status, " ".join((o.message or o.category).split())[:120]]
              for o in outs if o.status != VERIFIED and o.seed not in quick]
    return row, profile_row(target, texts), misses, reasons


def main() -> None:
    args = campaign_args(__doc__.splitlines()[0], n=200, jobs=2, write=True)
    where = provenance()
    print(where)
    rows, profiles, misses, reasons = [], [], [], []
    t0 = time.perf_counter()
    for t in args.targets:
        progress(f"{t}: {args.n} fuzz kernels from seed {args.seed}")
        row, prof, miss, why = campaign(t, args.n, args.seed, args.timeout, args.jobs)
        rows.append(row)
        profiles.append(prof)
        misses += miss
        reasons += [[t, k, c] for c, k in sorted(((c, k) for k, c in why.items()), reverse=True)]
    tables = [("Fuzz kernels: verified, refused, not compiled, wrong", COLUMNS, rows, None),
              ("The draw: operators (kernels using each), element types and shapes (values), nodes",
               PROFILE_COLUMNS, profiles, {4}),
              ("Refusals by reason", ["target", "reason", "kernels"], reasons, {2}),
              ("Kernels neither verified nor refused at once", ["target", "seed", "nodes", "s", "status", "why"],
               misses, {1, 2, 3})]
    for title, cols, body, right in tables:
        if body:
            print_table(title, cols, body, right=right)
    if args.write:
        text = [f"`python bench/fuzz_draw.py --targets {' '.join(args.targets)} --n {args.n} --seed {args.seed} "
                f"--jobs {args.jobs} --timeout {args.timeout:g} --write`, {where}, {time.strftime('%Y-%m-%d')}, "
                f"{time.perf_counter() - t0:.0f} s in all."]
        text += [f"\n{title}:\n\n{markdown_table(cols, body)}" for title, cols, body, _ in tables if body]
        write_section("bench/fuzz_draw.py", "The fuzzer's draw at the default budget", "\n".join(text) + "\n")


if __name__ == "__main__":
    sys.exit(main())
