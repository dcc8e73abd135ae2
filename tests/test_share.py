"""Values shared with the instruction that overwrites them in place (alloc/share.py):
a value that other instructions read and an in-place instruction then updates is
computed once, its readers ordered before the update; a value an output holds is never
overwritten."""
import dataclasses
import importlib

import pytest

from runtime_skeleton.alloc.order import heuristic_order
from runtime_skeleton.alloc.share import in_place_waits, shared_in_place
from runtime_skeleton.compile import CompileOptions, compile_hlo, verify
from runtime_skeleton.fuzz.programs import random_program
from runtime_skeleton.hlo import parse_module
from runtime_skeleton.isel.phase1 import InstructionSelector
from runtime_skeleton.sim.timing import time_program

# (b + a) stored saturated, then (b + a) + c stored exact: Gemmini loads b into the
# accumulator, adds a in place, stores, and adds c in place of the same row
KERNEL = """HloModule shared
ENTRY shared {
  a = s32[1,16] parameter(0)
  b = s32[1,16] parameter(1)
  c = s32[1,16] parameter(2)
  s = s32[1,16] add(b, a)
  lo = s32[] constant(-128)
  hi = s32[] constant(127)
  k = s32[1,16] clamp(lo, s, hi)
  q = s8[1,16] convert(k)
  t = s32[1,16] add(s, c)
  ROOT out = (s8[1,16], s32[1,16]) tuple(q, t)
}
"""


def target(name):
    return importlib.import_module(f"generated.{name}").TARGET


def _first_graph(t, text):
    return InstructionSelector(t, parse_module(text)).first()


def test_a_value_read_before_its_in_place_update_is_computed_once():
    t = target("gemmini")
    g = _first_graph(t, KERNEL)
    shared = shared_in_place(t, g)
    assert shared is not None and shared.num_instructions < g.num_instructions
    waits = in_place_waits(t, shared)
    assert waits  # the update waits for the other readers
    order = heuristic_order(shared, t)
    pos = {v: i for i, v in enumerate(order)}
    assert all(pos[r] < pos[w] for w, rs in waits.items() for r in rs)
    assert in_place_waits(t, g) == {}  # as extracted, an overwritten operand has one reader


def test_the_compiled_program_loads_the_shared_row_once_and_verifies():
    t = target("gemmini")
    res = compile_hlo(t, KERNEL, CompileOptions(timeout=20, deterministic=True))
    assert verify(t, res) == []
    names = [i.name for i in res.program.instructions]
    assert names.count("mvin_acc") + names.count("mvin_acc_add") == 3, names  # b, then a and c added


def test_a_value_an_output_holds_is_not_overwritten():
    t = target("gemmini")
    g = _first_graph(t, KERNEL)
    shared = shared_in_place(t, g)
    assert shared is not None
    # the shared value as an output too: the update may no longer take its place
    w, rs = next(iter(in_place_waits(t, shared).items()))
    x = shared.nodes[w].args[t.instructions[shared.nodes[w].op].alias]
    held = dataclasses.replace(g, outputs=g.outputs + [_equal_in(g, shared.nodes[x])])
    assert shared_in_place(t, held) is None


def _equal_in(g, node):
    return next(v for v, n in enumerate(g.nodes)
                if n.is_instruction and (n.eclass, n.buffer, n.op) == (node.eclass, node.buffer, node.op))


@pytest.mark.parametrize("tname,seed", [("gemmini", 12), ("gemmini", 52), ("amx", 1012)])
def test_random_programs_that_read_a_value_before_updating_it_cost_no_more(tname, seed):
    """Random programs store a Gemmini accumulator row and then add into it, or update an
    AMX register in place with itself as another operand (vfmadd231ps dst=2 a=2): the
    compiled programs do not compute the value twice."""
    t = target(tname)
    rp = random_program(t, seed)
    res = compile_hlo(t, rp.hlo, CompileOptions(timeout=20, deterministic=True))
    assert verify(t, res) == []
    assert time_program(t, res.program).cycles <= time_program(t, rp.program).cycles
