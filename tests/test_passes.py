"""The loop nest's named passes (superopt.passes): each stage computes what the assembled
loop nest computes, a pass that changes nothing adds no stage, a compile keeps the stages
of the loop nest it chose with the passes' times, and ``compile --dump-after`` prints one; the
statistics account for all of a compilation's time (``stopwatch``)."""
import pathlib
import subprocess
import sys

import pytest

from generated.amx import TARGET as AMX
from generated.gemmini import TARGET as GEMMINI
from program_rewrites import assert_same_results
from runtime_skeleton.backend_cli import _dump_after
from runtime_skeleton.compile import CompileOptions, compile_hlo, verify
from runtime_skeleton.program import parse_program
from runtime_skeleton.superopt.passes import ASSEMBLED, LOOP_PASSES, PASS_NAMES, run_passes
from test_strip import ADD16  # f32[16,16] + f32[16,16] on AMX: a loop with a small straight-line share

ROOT = pathlib.Path(__file__).resolve().parent.parent

GEMM_OS = """.target gemmini
.input  arg0 s8[16,64]{1,0} @0
.input  arg1 s8[64,16]{1,0} @4096
.output out0 s32[16,16]{1,0} @8192
preload_os_zero
.loop k 0 4
  mvin rows=16 stride=64 dram=16*k sp_addr=0
  mvin rows=16 stride=16 dram=4096+256*k sp_addr=16
  compute_os a_addr=0 b_addr=16
.endloop
flush_os c_addr=0
mvout_acc32 rows=16 stride=64 acc_addr=0 dram=8192
"""


def test_pass_names_are_the_stages_in_order():
    assert PASS_NAMES == (ASSEMBLED,) + tuple(p.name for p in LOOP_PASSES)
    assert len(set(PASS_NAMES)) == len(PASS_NAMES)
    assert all(p.doc for p in LOOP_PASSES)


def test_every_stage_computes_what_the_assembled_loop_nest_computes():
    prog = parse_program(GEMM_OS, "gemm.s")
    stages = run_passes(GEMMINI, prog)
    names = [s.name for s in stages]
    assert names[0] == ASSEMBLED and stages[0].program is prog
    assert "double-buffer" in names  # its loads overlap the previous iteration's compute
    assert names == [n for n in PASS_NAMES if n in names]  # in pipeline order, each once
    for s in stages[1:]:
        assert s.program.instructions != prog.instructions and s.seconds >= 0
        assert_same_results(GEMMINI, prog, s.program)


def test_a_pass_that_changes_nothing_adds_no_stage():
    straight = parse_program(""".target gemmini
.input  arg0 s8[16,16]{1,0} @0
.input  arg1 s8[16,16]{1,0} @4096
.output out0 s32[16,16]{1,0} @8192
preload_os_zero
mvin rows=16 stride=16 dram=0 sp_addr=0
mvin rows=16 stride=16 dram=4096 sp_addr=16
compute_os a_addr=0 b_addr=16
flush_os c_addr=0
mvout_acc32 rows=16 stride=64 acc_addr=0 dram=8192
""", "one.s")
    assert [s.name for s in run_passes(GEMMINI, straight)] == [ASSEMBLED]


@pytest.fixture(scope="module")
def looped():
    res = compile_hlo(AMX, ADD16, CompileOptions(timeout=30, direct_share=0.02, deterministic=True))
    assert res.tiling is not None and res.program.has_loops
    return res


def test_a_looped_compile_keeps_the_stages_up_to_the_program_it_chose(looped):
    assert looped.stages[0].name == ASSEMBLED
    assert looped.stages[-1].program == looped.program
    assert [s.name for s in looped.stages] == [n for n in PASS_NAMES if n in {s.name for s in looped.stages}]
    assert set(looped.stats.pass_seconds) <= set(PASS_NAMES[1:]) and looped.stats.pass_seconds
    assert verify(AMX, looped) == []


def test_dump_after_prints_the_stage_or_says_why_not(looped, capsys):
    _dump_after(looped, ASSEMBLED)
    err = capsys.readouterr().err
    assert err.startswith(f"# after {ASSEMBLED} (")
    assert parse_program(err.split("\n", 1)[1]) == looped.stages[0].program
    missing = next((n for n in PASS_NAMES if n not in {s.name for s in looped.stages}), None)
    if missing is not None:
        _dump_after(looped, missing)
        assert "changed nothing or was not kept" in capsys.readouterr().err


def test_dump_after_on_straight_line_code_says_no_pass_ran(tmp_path):
    r = subprocess.run([sys.executable, "-m", "generated.gemmini", "compile", str(ROOT / "examples/kernels/gemmini_add.hlo"),
                        "-o", str(tmp_path / "k.s"), "--dump-after", "double-buffer", "-q"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "straight-line code: no loop nest, so no pass ran" in r.stderr


def test_dump_after_names_the_passes_it_accepts(tmp_path):
    r = subprocess.run([sys.executable, "-m", "generated.gemmini", "compile", "k.hlo", "-o", str(tmp_path / "k.s"),
                        "--dump-after", "unroll"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 2 and "double-buffer" in r.stderr and "unroll" in r.stderr


def test_the_statistics_account_for_all_of_a_compilations_time(looped):
    spent = looped.stats.spent
    assert {"phase 1", "loops", "other"} <= set(spent) <= {"phase 1", "phase 2", "emit", "loops", "other"}
    assert all(v >= 0 for v in spent.values())
    assert abs(sum(spent.values()) - looped.stats.seconds) < 0.01 + 0.01 * looped.stats.seconds
