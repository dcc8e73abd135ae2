"""Programs bind their inputs by name, and a program whose .input/.output declarations
clash is refused where it says so (issue 42)."""
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from runtime_skeleton.program import ProgramError, parse_program

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


MAC = (ROOT / "tests/data/gemmini_mac.s").read_text()


@pytest.mark.parametrize("text,says", [
    ("\n".join(MAC.splitlines()[:8]) + "\n", "5:1: output out0 is never written: no instruction, input or constant"),
    (MAC.replace("mvout_acc32 rows=16", "mvout_acc32 rows=8"),
     "5:1: output out0 is only partly written: no instruction, input or constant sets 512 of its 1024 bytes "
     "(the first at @2048)"),
    ("".join(ln + "\n" for ln in MAC.splitlines() if not ln.startswith(".output")),
     "1:1: the program declares no '.output'"),
])
def test_outputs_no_instruction_writes_are_errors(tmp_path, text, says):
    """A program truncated after three instructions reported "wrote 1 output(s)" (zeros)."""
    prog = tmp_path / "p.s"
    prog.write_text(text)
    r = _cli("run", str(prog), "--random", "0", "-o", str(tmp_path / "o.npz"), cwd=tmp_path)
    assert r.returncode == 2 and f"{prog}:{says}" in r.stderr, r.stderr
    full = tmp_path / "full.s"
    full.write_text(MAC)
    assert _cli("run", str(full), "--random", "0", "-o", str(tmp_path / "o.npz"), cwd=tmp_path).returncode == 0


def test_a_wrong_target_and_a_missing_input_line_are_said_where_they_are(tmp_path):
    """The '.target' line is known, so the mismatch is located there; an input the npz has
    and the program does not declare is the program's missing '.input', not the npz's fault."""
    wrong = tmp_path / "wrong.s"
    wrong.write_text(MAC.replace(".target gemmini", ".target amx"))
    r = _cli("run", str(wrong), "--random", "0", "-o", str(tmp_path / "o.npz"), cwd=tmp_path)
    assert r.returncode == 2 and f"{wrong}:1:9: program is for target 'amx', not 'gemmini'" in r.stderr
    full = tmp_path / "full.s"
    full.write_text(MAC)
    assert _cli("run", str(full), "--random", "0", "-o", str(tmp_path / "in.npz"), cwd=tmp_path).returncode == 0
    short = tmp_path / "short.s"
    short.write_text("".join(ln + "\n" for ln in MAC.splitlines() if "arg2" not in ln and "mvin_acc" not in ln))
    r = _cli("run", str(short), "--inputs", str(tmp_path / "in.npz"), "-o", str(tmp_path / "o.npz"), cwd=tmp_path)
    assert r.returncode == 2 and "has input 'arg2', which the program declares no '.input' for (its inputs: " \
        "arg0, arg1)" in r.stderr, r.stderr
