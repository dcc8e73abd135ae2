"""Random valid programs (fuzz/programs.py): their meaning is what the simulator runs,
the backend compiles it, and fuzz --from-programs reports both costs."""
import importlib

import pytest

from runtime_skeleton.compile import CompileError, CompileOptions, compile_hlo, verify
from runtime_skeleton.fuzz.programs import MAX_INSTRUCTIONS, MIN_INSTRUCTIONS, random_program, self_check
from runtime_skeleton.fuzz.run import fuzz, report_lines
from runtime_skeleton.isel.unread import unread_parameters
from runtime_skeleton.sim.timing import time_program


def target(name):
    return importlib.import_module(f"generated.{name}").TARGET


@pytest.mark.parametrize("tname", ["gemmini", "amx"])
def test_random_programs_compute_their_meaning_on_the_simulator(tname):
    t = target(tname)
    for seed in range(6):
        rp = random_program(t, seed)
        assert rp is not None
        assert MIN_INSTRUCTIONS <= rp.graph.num_instructions <= MAX_INSTRUCTIONS
        assert self_check(t, rp) == ""
        assert random_program(t, seed).hlo == rp.hlo  # the same seed draws the same program


@pytest.mark.parametrize("tname,seeds", [("gemmini", range(3)), ("amx", range(3))])
def test_the_backend_compiles_what_random_programs_compute(tname, seeds):
    t = target(tname)
    for seed in seeds:
        rp = random_program(t, seed)
        res = compile_hlo(t, rp.hlo, CompileOptions(timeout=20, deterministic=True))
        assert verify(t, res) == []
        assert res.cost >= 0 and time_program(t, rp.program).cycles > 0


def test_fuzz_from_programs_reports_both_costs():
    lines = []
    report = fuzz("amx", n=3, seed=5, out_dir=None, log=lines.append, from_programs=True)
    assert report.verified == 3 and report.failed == 0
    assert all(o.random_cycles > 0 for o in report.outcomes)
    assert any(line.startswith("  cost no more than the random program:") for line in report_lines(report))


def test_a_store_with_its_stride_equal_to_its_row_reads_none_of_the_old_region():
    t = target("gemmini")
    mvout = t.instructions["mvout"]
    assert unread_parameters(t, mvout, {"rows": 16, "stride": 16}) == {1}
    assert unread_parameters(t, mvout, {"rows": 1, "stride": 4096}) == {1}  # one row: nothing kept
    assert unread_parameters(t, mvout, {"rows": 2, "stride": 32}) == frozenset()  # the gap is kept
    assert unread_parameters(t, t.instructions["compute_ws"], {"rows": 16}) == frozenset()


EMPTY_CONCAT = """HloModule e
ENTRY main {
  a = s32[16,16]{1,0} parameter(0)
  b = s32[16,16]{1,0} parameter(1)
  s = s32[16,0]{1,0} slice(b), slice={[0:16], [0:0]}
  ROOT c = s32[16,16]{1,0} concatenate(a, s), dimensions={1}
}
"""


def test_a_concatenations_empty_operands_are_dropped_and_other_empty_values_refused():
    t = target("gemmini")
    res = compile_hlo(t, EMPTY_CONCAT, CompileOptions(timeout=20, deterministic=True))
    assert verify(t, res) == []
    empty_root = EMPTY_CONCAT.replace("ROOT c = s32[16,16]{1,0} concatenate(a, s), dimensions={1}",
                                      "ROOT c = s32[16,0]{1,0} negate(s)")
    with pytest.raises(CompileError, match="'s' \\(s32\\[16,0\\]"):
        compile_hlo(t, empty_root, CompileOptions(timeout=20))


SIGNED_ZERO = """HloModule z, entry_computation_layout={()->u32[16]}
ENTRY main {
  zero = f32[] constant(0)
  z = f32[16] broadcast(zero), dimensions={}
  d = f32[16] subtract(z, z)
  ROOT bits = u32[16] bitcast-convert(d)
}
"""


def test_a_kernel_that_reads_float_bits_gets_only_bit_exact_rules():
    """0 - 0 is +0; add(x, +0) = x holds up to the sign of a zero (add-zero-float), so
    subtract-as-add-negate and it made -0, which a bitcast to integers shows (fuzz
    --from-programs, amx seed 76)."""
    t = target("amx")
    res = compile_hlo(t, SIGNED_ZERO, CompileOptions(timeout=20, deterministic=True))
    assert verify(t, res) == []


def test_an_empty_slice_is_not_stored_to_hbm_and_back():
    """Gemmini's random program 0 slices u8[1,0] and u8[16,0] values (empty operands of its
    concatenations): with the lowering rules from round 1 the HBM round trip reached them and
    raised "has no elements" inside saturation, and the kernel ran to its time limit."""
    from runtime_skeleton.hlo import parse_module
    from runtime_skeleton.isel.phase1 import InstructionSelector, Limits

    t = target("gemmini")
    rp = random_program(t, 0)
    assert "u8[1,0]" in rp.hlo
    sel = InstructionSelector(t, parse_module(rp.hlo, "<rp0>"), Limits(timeout=30, tiles_first=True))
    assert sel.first().num_instructions > 0
