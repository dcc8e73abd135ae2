"""Phase 1 on whole kernels: does enumeration yield a pii graph for the kernel as a whole
(not the tiles the compiler cuts it into), and how long, how many rounds and e-nodes it took.

For each kernel: InstructionSelector(target, kernel, Limits(...)).first() (every Limits field is an option),
timed; a kernel with no pii graph gets phase 1's reason (node limit, round limit or time
limit). Kernels the target refuses before phase 1 (tuple parameters) are reported as such.
The issue-4 figures (2026-11-27, 2 cores): at the defaults (20 s, 20k e-nodes) 28 of the 31
pairs the compiler runs map whole (20 before the instruction-sized tiling splits, 25 before
the unit-dimension alignment, the match-budget round robin and two cheap iterations per
round, 27 before a dot's converted operands were left to the dot's cuts); slice_concat also maps at
--max-nodes 50000 --timeout 180 (40 s, 103 instructions) since hbm-round-trip leaves values that only
move the inputs; batched_matmul_f32 at --iterations 13 --max-nodes 300000 --max-pii-nodes 8192
--expand-from 14 --timeout 600 (67 s, 4288 instructions) and gemm_f32 at --iterations 14
--max-pii-nodes 16384 --expand-from 15 (119 s, 6677) since a float dot no instruction's dot takes
is cut into outer products; see the session notes.

    python bench/phase1_whole.py --target amx [--kernels amx_k1 ...] [--timeout 20] [--max-nodes 20000]
    python bench/phase1_whole.py --target gemmini --fuzz 20 --seed 90017 [--tiles-first]
"""
from __future__ import annotations

import argparse
import dataclasses
import time

from _common import KERNELS, backend, one_line, print_table, progress, provenance

from runtime_skeleton.errors import ActgenError
from runtime_skeleton.hlo import parse_file, parse_module
from runtime_skeleton.isel.phase1 import InstructionSelector, Limits


def measure(target: str, name: str, limits: Limits, text: str | None = None) -> list:
    """``text``: the kernel's HLO (a fuzz kernel), else examples/kernels/<name>.hlo."""
    t0 = time.perf_counter()
    try:
        module = parse_module(text, name) if text is not None else parse_file(KERNELS / f"{name}.hlo")
        sel = InstructionSelector(backend(target).TARGET, module, limits)
        graph = next(iter(sel.pii_graphs()), None)
    except ActgenError as err:
        return [name, "refused", None, None, None, None, one_line(err.message, 68)]
    seconds = time.perf_counter() - t0
    st = sel.stats
    why = "" if graph else _reason(sel.explain())
    return [name, "yes" if graph else "no", f"{seconds:.1f}", st.rounds, st.saturation.nodes,
            graph.num_instructions if graph else None, why]


def _reason(text: str) -> str:
    """Which limit ended phase 1, then the start of its reason."""
    limit = ("node limit" if "reached its limit of" in text else "round limit" if "rounds before" in text
             else "time limit" if "s limit before" in text else "saturated")
    return f"{limit}: " + one_line(text.split(": ", 1)[-1], 56)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", default="amx")
    ap.add_argument("--kernels", nargs="*", help="names in examples/kernels (default: all)")
    ap.add_argument("--fuzz", type=int, default=0, metavar="N",
                    help="N fuzz kernels (the target's probed draw, as `fuzz` makes them) instead of examples")
    ap.add_argument("--seed", type=int, default=0, help="seed of the first fuzz kernel")
    for f in dataclasses.fields(Limits):  # --timeout, --max-nodes, --iterations, --max-pii-nodes, --tiles-first, ...
        flag = "--" + f.name.replace("_", "-")
        if isinstance(f.default, bool):
            ap.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        else:
            ap.add_argument(flag, type=type(f.default), default=f.default)
    args = ap.parse_args()
    limits = Limits(**{f.name: getattr(args, f.name) for f in dataclasses.fields(Limits)})
    rows = []
    for name, text in _kernels(args):
        progress(f"{args.target} {name} ...")
        rows.append(measure(args.target, name, limits, text))
    mapped = sum(r[1] == "yes" for r in rows)
    first = ", tiles first" if args.tiles_first else ""
    print_table(f"phase 1 on whole kernels, {args.target} ({args.timeout:g} s, {args.max_nodes} e-nodes{first}): "
                f"{mapped} of {len(rows)} yield a pii graph ({provenance()})",
                ["kernel", "pii graph", "s", "rounds", "e-nodes", "instructions", "why not"], rows,
                right={2, 3, 4, 5})


def _kernels(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    if not args.fuzz:
        return [(n, None) for n in args.kernels or sorted(p.stem for p in KERNELS.glob("*.hlo"))]
    from runtime_skeleton.fuzz.capability import capable
    from runtime_skeleton.fuzz.gen import chosen_ops, random_fuzz_kernel

    prof = capable(backend(args.target).TARGET, chosen_ops(None))
    return [(f"fuzz_{s}", random_fuzz_kernel(prof, s).text) for s in range(args.seed, args.seed + args.fuzz)]


if __name__ == "__main__":
    main()
