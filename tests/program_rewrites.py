"""Shared checks for passes that rewrite a parsed program's instructions
(double buffering, reuse): apply the pass to assembly text, and compare the two
programs' outputs on the simulator."""
import dataclasses

import numpy as np

from runtime_skeleton.reference.npz_io import random_inputs
from runtime_skeleton.sim import parse_program, run_program


def rewritten(rewrite, target, text):
    """(the parsed program, the program with its instructions passed through rewrite)."""
    prog = parse_program(text, "t.s")
    return prog, dataclasses.replace(prog, instructions=rewrite(target, prog.instructions))


def assert_same_results(target, prog, new):
    for seed in (0, 1):
        x = random_inputs([d.type for d in prog.inputs], seed)
        for a, b in zip(run_program(target, prog, x), run_program(target, new, x)):
            np.testing.assert_array_equal(a, b)
