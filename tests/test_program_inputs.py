"""Programs bind their inputs by name, and a program whose .input/.output declarations
clash is refused where it says so (issue 42)."""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from runtime_skeleton.sim.program import ProgramError, parse_program

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "generated.gemmini", *args], cwd=cwd, capture_output=True, text=True)


def test_inputs_declared_out_of_order_bind_by_name(tmp_path):
    kernel = ROOT / "examples/kernels/gemmini_gemm.hlo"  # A·B: the order of its inputs matters
    prog = tmp_path / "k.s"
    assert _cli("compile", str(kernel), "-o", str(prog), "--deterministic", cwd=ROOT).returncode == 0
    first = _cli("run", str(prog), "--random", "3", "-o", str(tmp_path / "a.npz"), cwd=ROOT)
    assert first.returncode == 0, first.stderr
    lines = prog.read_text().splitlines()
    ins = [i for i, ln in enumerate(lines) if ln.startswith(".input")]
    assert len(ins) == 2
    lines[ins[0]], lines[ins[1]] = lines[ins[1]], lines[ins[0]]  # .input arg1 before .input arg0
    swapped = tmp_path / "swapped.s"
    swapped.write_text("\n".join(lines) + "\n")
    again = _cli("run", str(swapped), "--inputs", str(tmp_path / "a.npz"), "-o", str(tmp_path / "b.npz"),
                 "--expect", str(kernel), cwd=ROOT)
    assert again.returncode == 0, again.stdout + again.stderr
    with np.load(tmp_path / "a.npz") as a, np.load(tmp_path / "b.npz") as b:
        assert np.array_equal(a["out0"], b["out0"])


@pytest.mark.parametrize("text,message", [
    (".input x s8[16] @0\n.input x s8[16] @64\n", "'x' is declared twice"),
    (".input x s8[16] @0\n.output x s8[16] @64\n", "'x' is declared twice"),
    (".input x s8[16] @0\n.input y s8[16] @8\n", "input 'y' at bytes \\[8, 24\\) overlaps input 'x'"),
])
def test_clashing_declarations_are_refused_where_they_are(text, message):
    with pytest.raises(ProgramError, match=message) as err:
        parse_program(text, "p.s")
    assert err.value.loc.line == 2
