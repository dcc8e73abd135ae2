"""``python -m runtime_skeleton.reference KERNEL.hlo (--inputs IN.npz | --random SEED) [-o OUT.npz]``"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from ..cli_util import add_common_flags, at_least, refuse_overwrite, run_cli
from .interpreter import evaluate
from .npz_io import load_inputs, random_inputs, save_arrays

_EPILOG = """\
files:
  inputs are named arg0, arg1, ... in parameter order and converted to the
  parameter types (bf16/f16 may be given as float32: rounded to nearest even).
  Outputs are named out0, out1, ... (a tuple result is flattened); bf16/f16
  outputs are written as float32, which holds them exactly.
  With --random, the generated inputs are saved in the output file too, as
  arg0, arg1, ... beside out0, out1, ...; that file is itself a valid --inputs
  file. Random inputs: floats ~ N(0,1), signed ints in [-10,10], unsigned ints in
  [0,20], pred uniform.
  Without -o the outputs are printed.
exit status: 0 ok, 2 bad input (one line on stderr: file:line:col: message or
  error: message).
"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m runtime_skeleton.reference",
        description="Evaluate an HLO kernel with actgen's reference interpreter (XLA:CPU semantics).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common_flags(p)
    p.add_argument("kernel", help="kernel file: HLO text, an XLA dump, StableHLO or a serialized "
                   "HloModuleProto (the last two need jax installed); - for standard input")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--inputs", metavar="IN.npz", help="input arrays arg0, arg1, ...")
    src.add_argument("--random", metavar="SEED", type=at_least(int, 0), help="generate deterministic random inputs")
    p.add_argument("-o", "--output", metavar="OUT.npz", help="write outputs (and --random inputs) here")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    refuse_overwrite({"-o": args.output}, {"the kernel": args.kernel, "the inputs": args.inputs})
    from ..hlo import parse_file  # the parser is only needed here, not by the interpreter

    module = parse_file(args.kernel)
    types = module.parameter_types
    inputs = load_inputs(args.inputs, types) if args.inputs else random_inputs(types, args.random)
    outputs = evaluate(module, inputs)
    named = {f"out{i}": o for i, o in enumerate(outputs)}
    if args.output:
        if args.random is not None:
            named = {**{f"arg{i}": a for i, a in enumerate(inputs)}, **named}
        save_arrays(args.output, named)
    else:
        for name, arr in named.items():
            print(f"{name}: {arr.dtype}{list(arr.shape)}")
            print(np.array2string(arr, threshold=200))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
