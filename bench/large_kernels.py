"""Generators of large kernels for Act Fig. 21's compile-time points on AMX (about 150,
270 and 390 nodes).

``vector_dag(nodes, seed)`` is a random DAG of AVX-512 work: ``inputs`` parameters of
f32[16] (one zmm register each), then binary operators (add, subtract, multiply,
maximum, minimum) whose first operand is one of the 4 most recent values (so chains
form, as in unrolled vector code) and whose second is one of the ``window`` most recent
(so values are shared: a DAG, not a tree); a value that leaves the window unused is
added into a running sum, the output. Few values are live at once (about ``window``),
so the program fits the 32 zmm registers without spilling, as unrolled vector code does.
Every node maps to one zmm instruction without tiling, so the size of the kernel,
not the tiling of one operator, is what the compile time measures. The node count
includes the parameters and is exact.

    python bench/large_kernels.py 150 --seed 0 > k150.hlo
"""
from __future__ import annotations

import argparse
import random
import sys

BINARY = ("add", "subtract", "multiply", "maximum", "minimum")


def vector_dag(nodes: int, seed: int = 0, inputs: int = 4, width: int = 16, dtype: str = "f32",
               window: int = 12) -> str:
    if nodes < 2 * inputs - 1:  # the parameters and the adds that join them
        raise ValueError(f"a vector DAG of {inputs} inputs needs at least {2 * inputs - 1} nodes, got {nodes}")
    rng = random.Random(seed)
    ty = f"{dtype}[{width}]{{0}}"
    lines = [f"  p{i} = {ty} parameter({i})" for i in range(inputs)]
    values = [f"p{i}" for i in range(inputs)]
    used: set[str] = set()
    acc: list[str] = []  # the running sum of the values nothing else uses

    def emit(op: str, a: str, b: str) -> str:
        name = f"v{len(values)}"
        lines.append(f"  {name} = {ty} {op}({a}, {b})")
        values.append(name)
        used.update((a, b))
        return name

    def unused() -> list[str]:
        return [v for v in values if v not in used and v not in acc]

    def join(v: str) -> None:
        acc[:] = [emit("add", acc[0], v) if acc else v]

    # nodes once the values nothing uses are joined into the sum: one add each
    while len(values) + len(unused()) + len(acc) - 1 < nodes - 1:
        emit(rng.choice(BINARY), rng.choice(values[-4:]), rng.choice(values[-window:]))
        for v in unused():  # leaving the window unused: into the sum now, so few values stay live
            if v not in values[-window:] and len(values) + len(unused()) + len(acc) - 1 < nodes:
                join(v)
    for v in unused():
        join(v)
    while len(values) < nodes:  # round up to the exact count
        acc[:] = [emit(rng.choice(BINARY), acc[0], rng.choice(values[-window:]))]
    lines[-1] = "  ROOT " + lines[-1].strip()
    params = ", ".join([ty] * inputs)
    return (f"HloModule vector_dag_{nodes}_{seed}, entry_computation_layout={{({params})->{ty}}}\n\n"
            "ENTRY main {\n" + "\n".join(lines) + "\n}\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("nodes", type=int, help="number of HLO instructions (parameters included)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--inputs", type=int, default=4)
    args = ap.parse_args(argv)
    try:
        sys.stdout.write(vector_dag(args.nodes, args.seed, args.inputs))
    except ValueError as err:
        ap.error(str(err))
    return 0


if __name__ == "__main__":
    sys.exit(main())
