"""Batches and fuzz campaigns through the executors: here, local processes, and a local Ray
instance (started and stopped by the test) give the same results."""
import pathlib
import subprocess
import sys

import pytest

from runtime_skeleton.batch import compile_batch
from runtime_skeleton.compile import CompileOptions
from runtime_skeleton.fuzz.run import fuzz

ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNELS = [ROOT / f"examples/kernels/{k}.hlo" for k in ("gemmini_gemm", "gemmini_add", "gemmini_mac")]
F32 = """HloModule f
ENTRY e {
  a = f32[16,16]{1,0} parameter(0)
  ROOT n = f32[16,16]{1,0} negate(a)
}
"""


@pytest.fixture(scope="module")
def gemmini():
    from generated import gemmini
    return gemmini.TARGET


@pytest.fixture(scope="module")
def local_ray():
    import ray  # the dev extra installs it

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


def test_a_batch_gives_the_same_programs_here_and_on_ray(gemmini, local_ray, tmp_path):
    (tmp_path / "float.hlo").write_text(F32)  # gemmini computes no float: refused at once
    kernels = KERNELS + [tmp_path / "float.hlo"]
    opts = CompileOptions(timeout=20)
    here = compile_batch(gemmini, kernels, opts)
    there = compile_batch(gemmini, kernels, opts, executor="ray")
    assert [r.program for r in here] == [r.program for r in there]
    assert all(r.program for r in here[:3]) and here[3].program is None and "f32" in here[3].error


def test_a_fuzz_campaign_reports_the_same_on_ray(gemmini, local_ray):
    def run(**kw):
        report = fuzz(gemmini, n=3, seed=93100, timeout_per_kernel=2, out_dir=None, quiet=True, **kw)
        return [(o.status, o.nodes, o.instructions) for o in report.outcomes]

    assert run() == run(executor="ray")


def test_the_batch_command_line(tmp_path):
    (tmp_path / "float.hlo").write_text(F32)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "generated.gemmini", "compile", *map(str, KERNELS[:2]),
                        str(tmp_path / "float.hlo"), "-o", str(out), "--verify"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2, r.stderr  # one kernel the target cannot compute
    assert sorted(p.name for p in out.iterdir()) == ["gemmini_add.s", "gemmini_gemm.s"]
    assert r.stdout.count("verified") == 2 and "no program" in r.stdout
    twice = subprocess.run([sys.executable, "-m", "generated.gemmini", "compile", str(KERNELS[0]), str(KERNELS[0]),
                            "-o", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert twice.returncode == 2 and "two kernels are named gemmini_gemm" in twice.stderr
