"""List scheduling of straight-line programs (superopt/schedule.py): the reordered
program computes what the old one did, never takes more cycles, and overlaps engines
that the old order kept waiting."""
import importlib

import pytest

from runtime_skeleton.fuzz.programs import random_program
from runtime_skeleton.program import parse_program
from runtime_skeleton.reference.compare import compare_outputs
from runtime_skeleton.reference.npz_io import random_inputs
from runtime_skeleton.sim import run_program
from runtime_skeleton.sim.timing import time_program
from runtime_skeleton.superopt.schedule import scheduled


def target(name):
    return importlib.import_module(f"generated.{name}").TARGET


@pytest.mark.parametrize("tname", ["gemmini", "amx"])
def test_scheduled_random_programs_compute_the_same_in_no_more_cycles(tname):
    t = target(tname)
    reordered = 0
    for seed in range(16):
        rp = random_program(t, seed)
        new = scheduled(t, rp.program)
        assert sorted(map(repr, new.instructions)) == sorted(map(repr, rp.program.instructions))
        assert time_program(t, new).cycles <= time_program(t, rp.program).cycles
        x = random_inputs(rp.input_types, seed)
        assert compare_outputs(run_program(t, new, x), run_program(t, rp.program, x)) == []
        reordered += new.instructions != rp.program.instructions
    assert reordered > 0  # some drawn order is not the fastest


HEAD = """.target gemmini
.input a s8[16,16] @0
.input b s8[1,16] @256
.output c s8[16,16] @512
.output d s8[1,16] @768
"""


def test_a_store_that_can_go_first_no_longer_waits_behind_one_that_cannot():
    """Each engine takes its instructions in issue order. The one-row store waits behind
    the 16-row one, which waits for the 16-row load; scheduled, the short store goes
    while the long one still waits."""
    t = target("gemmini")
    prog = parse_program(HEAD + """mvin rows=1 stride=16 dram=256 sp_addr=16
mvin rows=16 stride=16 dram=0 sp_addr=0
mvout_spad rows=16 stride=16 sp_addr=0 dram=512
mvout_spad rows=1 stride=16 sp_addr=16 dram=768
""")
    new = scheduled(t, prog)
    assert time_program(t, new).cycles < time_program(t, prog).cycles
    x = random_inputs([d.type for d in prog.inputs], 0)
    assert compare_outputs(run_program(t, new, x), run_program(t, prog, x)) == []


def test_an_instruction_never_passes_one_whose_slices_it_reads_or_overwrites():
    """The one-row value is stored before the 16-row load overwrites its place: no other
    order computes the same, so the program keeps its order."""
    t = target("gemmini")
    prog = parse_program(HEAD + """mvin rows=1 stride=16 dram=256 sp_addr=0
mvout_spad rows=1 stride=16 sp_addr=0 dram=768
mvin rows=16 stride=16 dram=0 sp_addr=0
mvout_spad rows=16 stride=16 sp_addr=0 dram=512
""")
    assert scheduled(t, prog) is prog


def test_a_program_with_loops_keeps_its_order():
    t = target("gemmini")
    looped = parse_program(""".target gemmini
.input a s8[32,16] @0
.output c s8[32,16] @512
.loop i 0 2
mvin rows=16 stride=16 dram=256*i sp_addr=0
mvout_spad rows=16 stride=16 sp_addr=0 dram=512+256*i
.endloop
mvin rows=1 stride=16 dram=0 sp_addr=16
""")
    assert scheduled(t, looped) is looped
