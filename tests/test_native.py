"""Programs run natively: the description's C texts, emitted per instruction, built with the
system's compiler, run on this CPU, and checked against the simulator and the reference."""
import dataclasses
import importlib.util
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from generator.cli import main as actgen
from runtime_skeleton.compile import compile_hlo, verify
from runtime_skeleton.emit.native import NativeError, c_source, native_function
from runtime_skeleton.program import parse_program
from runtime_skeleton.reference.npz_io import random_inputs
from runtime_skeleton.sim import run_program
from runtime_skeleton.sim.machine import SimError

ROOT = pathlib.Path(__file__).resolve().parent.parent
ISA = ROOT / "tests/data/targets/tmu_native.isa"


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    out = tmp_path_factory.mktemp("native")
    assert actgen([str(ISA), "-o", str(out / "tmu_native")]) == 0
    return out


@pytest.fixture(scope="module")
def tmu(gen):
    spec = importlib.util.spec_from_file_location("tmu_native_target", gen / "tmu_native" / "target.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.TARGET


LOOPED = """.target tmu_native
.input  arg0 s8[64,8]{1,0} @0
.input  arg1 s8[8,8]{1,0} @512
.output out0 s32[64,8]{1,0} @1024
ld rows=8 dram=512 sp_addr=8
.loop i 0 8
  ld rows=8 dram=64*i sp_addr=0
  ld_acc rows=8 dram=1024+256*i acc_addr=0
  mma a_addr=0 b_addr=8 c_addr=0
  st_relu rows=8 acc_addr=0 dram=1024+256*i
.endloop
"""


def test_a_loop_program_runs_natively_as_on_the_simulator(tmu):
    prog = parse_program(LOOPED, "looped.s")
    x = random_inputs([d.type for d in prog.inputs], 3)
    hbm_zero_out = run_program(tmu, prog, x)  # the output region starts as zeros on both
    got = native_function(tmu, prog)(*x)
    assert len(got) == 1 and got[0].dtype == np.int32 and np.array_equal(got[0], hbm_zero_out[0])
    want = np.maximum(x[0].astype(np.int32) @ x[1].astype(np.int32), 0)
    assert np.array_equal(got[0], want)
    assert "for (int64_t loop_i = 0; loop_i < 8; loop_i++) {" in c_source(tmu, prog)


def test_a_compiled_kernel_verifies_natively(tmu):
    res = compile_hlo(tmu, ROOT / "examples/tutorial/matmul_bias_relu.hlo", timeout=20)
    assert verify(tmu, res, native=True) == []
    x = random_inputs([d.type for d in res.program.inputs], 7)
    assert np.array_equal(res.native()(*x)[0], run_program(tmu, res.program, x)[0])


def test_a_program_leaving_its_buffers_never_reaches_the_cpu(tmu):
    # sp has 64 rows: from the second iteration on, 8 rows from 56+i pass its end
    bad = LOOPED.replace("ld rows=8 dram=64*i sp_addr=0", "ld rows=8 dram=64*i sp_addr=56+i")
    with pytest.raises(SimError, match=r"outside the buffer.*in the iteration i=1\)"):
        native_function(tmu, parse_program(bad, "bad.s"))


def test_what_cannot_run_natively_is_refused_with_the_reason(tmu):
    from generated import gemmini

    prog = parse_program(".target gemmini\n.input arg0 s8[16,16]{1,0} @0\n.output out0 s8[16,16]{1,0} @0\n"
                         "mvin rows=16 stride=16 dram=0 sp_addr=0\n", "g.s")
    with pytest.raises(NativeError, match="says nothing of how its programs run natively"):
        c_source(gemmini.TARGET, prog)
    no_text = dataclasses.replace(tmu, instructions={**tmu.instructions,
                                                     "ld": type("ld", (tmu.instructions["ld"],), {"native": None})})
    with pytest.raises(NativeError, match="ld has no native text"):
        c_source(no_text, parse_program(LOOPED, "looped.s"))
    alien = dataclasses.replace(tmu, native=dataclasses.replace(tmu.native, cpu=("no_such_cpu_flag",)))
    with pytest.raises(NativeError, match="this CPU lacks no_such_cpu_flag"):
        native_function(alien, parse_program(LOOPED, "looped.s"))


def test_the_command_line_emits_c_and_shared_libraries_and_runs_natively(gen, tmp_path):
    env = {"PYTHONPATH": f"{gen}:{ROOT}", "PATH": "/usr/bin:/bin"}
    kernel = str(ROOT / "examples/tutorial/matmul_bias_relu.hlo")

    def cli(*args):
        r = subprocess.run([sys.executable, "-m", "tmu_native", *args], capture_output=True, text=True, cwd=gen,
                           env=env)
        assert r.returncode == 0, r.stderr
        return r.stdout

    assert "its native run on this CPU matches" in cli("compile", kernel, "-o", str(tmp_path / "k.s"), "--verify",
                                                        "--native")
    cli("compile", kernel, "-o", str(tmp_path / "k.c"), "--emit", "c", "-q")
    assert "void actgen_kernel(uint8_t *d0)" in (tmp_path / "k.c").read_text()
    cli("compile", kernel, "-o", str(tmp_path / "k.so"), "--emit", "so", "-q")
    assert (tmp_path / "k.so").read_bytes()[:4] == b"\x7fELF"
    out = cli("run", str(tmp_path / "k.s"), "--random", "0", "-o", str(tmp_path / "o.npz"), "--native",
              "--expect", kernel)
    assert "natively on this CPU" in out and "matches the reference interpreter" in out
    again = tmp_path / "again.hlo"
    again.write_text(pathlib.Path(kernel).read_text())
    table = cli("compile", kernel, str(again), "-o", str(tmp_path / "batch"), "--verify", "--native")
    assert table.count("verified natively") == 2, table


ADD_RELU_SCALE = """HloModule add_relu_scale

ENTRY main {
  a = f32[4,16]{1,0} parameter(0)
  b = f32[4,16]{1,0} parameter(1)
  c = f32[4,16]{1,0} parameter(2)
  s = f32[4,16]{1,0} add(a, b)
  z = f32[] constant(0)
  zb = f32[4,16]{1,0} broadcast(z), dimensions={}
  r = f32[4,16]{1,0} maximum(s, zb)
  ROOT m = f32[4,16]{1,0} multiply(r, c)
}
"""


def test_the_avx2_target_runs_its_programs_natively():
    from generated import avx2

    res = compile_hlo(avx2.TARGET, ADD_RELU_SCALE, timeout=30)
    assert "_mm256_" in c_source(avx2.TARGET, res.program)
    assert verify(avx2.TARGET, res, native=True) == []
    x = random_inputs([d.type for d in res.program.inputs], 5)
    got = res.native()(*x)[0]
    assert np.allclose(got, np.maximum(x[0] + x[1], 0) * x[2], rtol=1e-6)


AVX2_EXAMPLES = ["elementwise_chain_f32", "transpose_2d", "amx_k3", "amx_k4", "slice_concat", "gemm_f32", "mlp_f32"]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", AVX2_EXAMPLES)
def test_avx2_runs_the_f32_examples_it_computes_natively(kernel):
    """The f32 kernels of examples/kernels that the avx2 target computes (the others use
    exp, rsqrt, convolutions... that AVX2 has no instruction for, and are refused at once)."""
    from generated import avx2

    res = compile_hlo(avx2.TARGET, ROOT / f"examples/kernels/{kernel}.hlo", timeout=60)
    assert verify(avx2.TARGET, res, native=True) == []


def test_a_batch_row_says_when_its_program_could_not_run_natively(monkeypatch):
    """A program the CPU or the C compiler cannot run is no mismatch: the row says so."""
    import runtime_skeleton.compile as compiling
    from generated.gemmini import TARGET
    from runtime_skeleton.batch import compile_batch
    from runtime_skeleton.errors import ActgenError

    simulated = compiling.verify

    def verify(target, res, native=False, **kw):  # noqa: ANN001, ANN202
        if native:
            raise ActgenError("this CPU lacks the feature")
        return simulated(target, res, **kw)

    monkeypatch.setattr(compiling, "verify", verify)  # the batch imports it when it runs
    [row] = compile_batch(TARGET, [ROOT / "examples/kernels/gemmini_add.hlo"],
                          compiling.CompileOptions(deterministic=True), check=True, native=True)
    assert row.not_run_natively and not row.mismatch and row.verified is False
    assert row.error == "native: this CPU lacks the feature"
