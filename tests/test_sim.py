"""The generated simulators: hand-written programs against the reference, and located errors."""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from runtime_skeleton.errors import ActgenError
from runtime_skeleton.hlo import parse_file
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.compare import compare_outputs
from runtime_skeleton.reference.npz_io import random_inputs
from runtime_skeleton.sim import parse_program, run_program

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = [("qkv", "attention"), ("gemmini", "matmul_bias"), ("amx", "matmul_k1")]


def _target(name):
    import importlib

    return importlib.import_module(f"generated.{name}").TARGET


@pytest.mark.parametrize("target,kernel", EXAMPLES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_example_program_matches_reference(target, kernel, seed):
    prog_path = ROOT / "examples" / target / f"{kernel}.s"
    prog = parse_program(prog_path.read_text(), str(prog_path))
    module = parse_file(ROOT / "examples" / target / f"{kernel}.hlo")
    assert [d.type.same_shape_dtype(t) for d, t in zip(prog.inputs, module.parameter_types)]
    inputs = random_inputs([d.type for d in prog.inputs], seed)
    got = run_program(_target(target), prog, inputs)
    assert compare_outputs(got, evaluate(module, inputs)) == []


def test_int8_examples_are_exact():
    """Integer programs must match bit for bit, including saturation."""
    prog_path = ROOT / "examples/gemmini/matmul_bias.s"
    prog = parse_program(prog_path.read_text(), str(prog_path))
    rng = np.random.default_rng(7)
    a = rng.integers(-128, 128, (16, 16), dtype=np.int8)
    b = rng.integers(-128, 128, (16, 16), dtype=np.int8)
    d = rng.integers(-5000, 5000, (16, 16), dtype=np.int32)
    (got,) = run_program(_target("gemmini"), prog, [a, b, d])
    want = np.clip(a.astype(np.int32) @ b.astype(np.int32) + d, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(got, want)
    assert (want == 127).any() and (want == -128).any()


def test_gemmini_accumulator_scale_rounds_to_nearest_even_after_relu():
    """Gemmini's scaled mvout (the default acc_scale_func): ReLU, then int32 -> f32 times the
    scale, rounded to nearest even, clipped to int8; the scale comes from the constant section."""
    scale = np.float32(0.5).tobytes().hex()
    text = (".input arg0 s32[16,16] @0\n.output out0 s8[16,16] @1024\n.output out1 s8[16,16] @1280\n"
            f".const @1536 {scale}\n"
            "mvin_acc rows=16 stride=64 dram=0 acc_addr=0\nconfig_acc_scale dram=1536\n"
            "mvout_scale rows=16 stride=16 acc_addr=0 dram=1024\n"
            "mvout_scale_relu rows=16 stride=16 acc_addr=0 dram=1280\n")
    prog = parse_program(text, "p.s")
    acc = np.arange(-128, 128, dtype=np.int32).reshape(16, 16) * 3  # x * 0.5 has ties: 1.5, 2.5, -2.5, ...
    plain, relu = run_program(_target("gemmini"), prog, [acc])
    want = np.clip(np.round(acc * 0.5), -128, 127).astype(np.int8)  # numpy rounds ties to even
    np.testing.assert_array_equal(plain, want)
    np.testing.assert_array_equal(relu, np.maximum(want, 0))
    assert plain[0, 0] == -128 and plain[-1, -1] == 127 and (acc * 0.5 % 1 == 0.5).any()


def _run_text(target, text):
    prog = parse_program(text, "p.s")
    return run_program(_target(target), prog, random_inputs([d.type for d in prog.inputs], 0))


HEADER = ".input arg0 s8[16,16] @0\n.output out0 s8[16,16] @256\n"


@pytest.mark.parametrize("line,message", [
    ("mvin rows=17 stride=16 dram=0 sp_addr=0", "rows=17 is outside its range [1, 16]"),
    ("mvin rows=16 stride=8 dram=0 sp_addr=0", "stride=8 is outside its range"),
    ("mvin rows=16 stride=16 dram=0", "missing attribute 'sp_addr'"),
    ("mvin rows=16 stride=16 dram=0 sp_addr=0 bogus=1", "has no attribute 'bogus'"),
    ("frob x=1", "unknown instruction 'frob'"),
    ("mvin rows=16 stride=16 dram=0 sp_addr=16380", "slice sp[16380 : 16] is outside the buffer (size 16384)"),
    ("mvin rows=16 stride=16 dram=0 sp_addr=zz", "needs an integer value"),
    ("mvin rows=16 stride=16 dram=0 sp_addr=0 sp_addr=1", "given twice"),
    (".bogus 1", "unknown directive '.bogus'"),
])
def test_program_errors_are_located(line, message):
    with pytest.raises(ActgenError) as info:
        _run_text("gemmini", HEADER + line + "\n")
    assert str(info.value).startswith("p.s:3:"), str(info.value)
    assert message in str(info.value)


def test_constraint_violation_names_the_line():
    prog = ".input arg0 u8[32,64] @0\n.output out0 s32[16,16] @4096\ntdpbusd m=16 k=16 n=16 dst=1 src0=1 src1=2\n"
    with pytest.raises(ActgenError, match=r"p.s:3:1: tdpbusd .*violates the instruction's constraint"):
        _run_text("amx", prog)


def test_input_outside_hbm():
    with pytest.raises(ActgenError, match="does not fit in HBM"):
        _run_text("qkv", ".input arg0 bf16[64,64] @1048570\n.output out0 bf16[64,64] @0\n")


def test_cli_run_with_expect(tmp_path):
    out = tmp_path / "o.npz"
    r = subprocess.run([sys.executable, "-m", "generated.amx", "run", "examples/amx/matmul_k1.s", "--random", "3",
                        "-o", str(out), "--expect", "examples/amx/matmul_k1.hlo"], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "matches the reference" in r.stdout
    data = np.load(out)
    assert set(data.files) == {"out0", "arg0", "arg1"}


def test_cli_bad_program_exit_2(tmp_path):
    bad = tmp_path / "bad.s"
    bad.write_text(".input arg0 bf16[64,64] @0\n.output out0 bf16[64,64] @8192\nload_rm n=300 addr_in=0 addr_out=0\n")
    r = subprocess.run([sys.executable, "-m", "generated.qkv", "run", str(bad), "--random", "0", "-o",
                        str(tmp_path / "o.npz")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2
    assert r.stderr.strip() == f"{bad}:3:1: load_rm: n=300 is outside its range [1, 128]"


@pytest.mark.parametrize("loops,line,fragment", [
    (".loop i 0 1000000000\n  .loop j 0 10\n  .endloop\n.endloop\n", 4, "this loop runs 11000000000 steps"),
    (".loop i 0 1" + "0" * 50 + "\n.endloop\n", 4, "this loop runs about 10^50 steps"),
])
def test_a_program_running_too_many_steps_is_refused_at_its_loop(loops, line, fragment):
    """An empty loop of 10^9 trips hung the simulator as surely as 10^9 instructions."""
    from runtime_skeleton.program import MAX_EXECUTED

    text = ".target gemmini\n.input arg0 s8[16,16] @0\n.output out0 s8[16,16] @256\n" + loops
    with pytest.raises(ActgenError) as info:
        parse_program(text, "p.s")
    assert info.value.loc.line == line and fragment in info.value.message
    assert f"at most {MAX_EXECUTED}" in info.value.message
