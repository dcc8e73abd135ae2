"""``python -m runtime_skeleton.hlo FILE [--print]``: parse and type-check a kernel file."""
from __future__ import annotations

import argparse
import sys

from ..cli_util import add_common_flags, run_cli
from ..ir.graph import Module
from .forms import read_kernel as parse_file
from .printer import print_module, print_type


def summary(m: Module) -> str:
    count = sum(len(c.instructions) for c in m.computations.values())
    params = ", ".join(map(print_type, m.parameter_types))
    return (f"{m.name}: {len(m.computations)} computation{'s' * (len(m.computations) != 1)}, "
            f"{count} instruction{'s' * (count != 1)}; entry {m.entry}({params}) -> {print_type(m.result_type)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m runtime_skeleton.hlo",
        description="Parse and type-check a kernel: HLO text as JAX or XLA print it "
                    "(jax.jit(f).lower(...).as_text(dialect='hlo'), or an --xla_dump_to file), StableHLO text "
                    "(JAX's default as_text()) or a serialized HloModuleProto (these two need jax installed). "
                    "Prints a one-line summary; errors print as file:line:col: message and exit with status 2.",
    )
    add_common_flags(ap)
    ap.add_argument("file", help="the kernel file; - for standard input")
    ap.add_argument("--print", action="store_true", dest="reprint",
                    help="print the canonical HLO text instead of the summary")
    args = ap.parse_args(argv)
    m = parse_file(args.file)
    print(print_module(m) if args.reprint else summary(m), end="" if args.reprint else "\n")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
