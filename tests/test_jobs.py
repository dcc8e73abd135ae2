"""``--jobs N``: the tiled search's options compiled in worker processes."""
from __future__ import annotations

import math
import time

import pytest

import generated.gemmini as gemmini
from runtime_skeleton.backend_cli import main
from runtime_skeleton.compile import CompileOptions, compile_hlo, verify
from runtime_skeleton.superopt import parallel, tiled

GEMM = """HloModule gemm
ENTRY main {
  a = s8[32,64]{1,0} parameter(0)
  b = s8[64,32]{1,0} parameter(1)
  ROOT d = s32[32,32]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_results_come_back_from_every_job():
    got = [g for g in parallel.unordered(math.pow, [(2, 3), (3, 2), (5, 1)], 2) if g is not None]
    assert sorted(got) == [(0, 8.0), (1, 9.0), (2, 5.0)]


def test_closing_the_results_stops_the_workers():
    t0 = time.perf_counter()
    results = parallel.unordered(time.sleep, [(60,), (60,)], 2)
    assert next(results) is None  # nothing has finished
    results.close()
    assert time.perf_counter() - t0 < 20


def test_a_tiled_kernel_compiles_in_worker_processes_and_verifies(monkeypatch):
    used = []
    real = parallel.unordered

    def spy(fn, jobs, workers, poll=0.1):  # noqa: ANN001, ANN202
        used.append((len(jobs), workers))
        return real(fn, jobs, workers, poll)

    monkeypatch.setattr(parallel, "unordered", spy)
    res = compile_hlo(gemmini.TARGET, GEMM, CompileOptions(timeout=30, jobs=2, direct_share=0.0))
    assert used and used[0][1] == 2 and used[0][0] > 2  # every option of the whole kernel, two workers
    assert res.tiling is not None
    assert verify(gemmini.TARGET, res) == []


def test_options_that_all_fail_give_their_reasons(monkeypatch):
    """Every option failing in the workers: the error names them, as in one process."""
    monkeypatch.setattr(tiled, "_option_job", _fail_job)
    with pytest.raises(tiled.CompileError, match="strip-mining did not help either: .*: refused by the test"):
        compile_hlo(gemmini.TARGET, GEMM, CompileOptions(timeout=20, jobs=2))


def _fail_job(*job):  # noqa: ANN002, ANN202  (module level: workers import it)
    return "refused by the test", None


def test_deterministic_mode_stays_in_one_process(monkeypatch):
    monkeypatch.setattr(parallel, "unordered", _no_workers)
    opts = CompileOptions(timeout=30, jobs=2, deterministic=True)
    assert verify(gemmini.TARGET, compile_hlo(gemmini.TARGET, GEMM, opts)) == []


def _no_workers(*args):  # noqa: ANN002, ANN202
    raise AssertionError("workers started")


def test_cli_jobs(tmp_path, capsys):
    src = tmp_path / "gemm.hlo"
    src.write_text(GEMM)
    with pytest.raises(SystemExit) as exit_:
        main(gemmini.TARGET, ["compile", str(src), "-o", str(tmp_path / "p.s"), "--jobs", "0"])
    assert exit_.value.code == 2 and "argument --jobs: must be >= 1, got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(gemmini.TARGET, ["compile", "--help"])
    assert "--jobs N" in capsys.readouterr().out
