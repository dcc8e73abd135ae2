"""The command lines never overwrite what they read, refuse non-finite numbers, and locate
bytes that are not UTF-8 (issue 42)."""
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _run(*args, cwd):
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True)


@pytest.fixture()
def kernel(tmp_path):
    k = tmp_path / "k.hlo"
    shutil.copy(ROOT / "examples/kernels/gemmini_mac.hlo", k)
    return k


@pytest.mark.parametrize("args,says", [
    (("generated.gemmini", "compile", "k.hlo", "-o", "k.hlo"), "-o k.hlo is the kernel k.hlo"),
    (("generated.gemmini", "compile", "k.hlo", "-o", "k.s", "--json", "k.s"), "--json k.s is the file -o writes"),
    (("runtime_skeleton.reference", "k.hlo", "--random", "1", "-o", "k.hlo"), "-o k.hlo is the kernel k.hlo"),
])
def test_outputs_that_are_inputs_are_refused(kernel, args, says):
    before = kernel.read_text()
    out = _run(*args, cwd=kernel.parent)
    assert out.returncode == 2 and says in out.stderr and "refusing to overwrite it" in out.stderr
    assert kernel.read_text() == before


def test_a_program_and_its_inputs_are_not_overwritten_by_run(kernel):
    d = kernel.parent
    assert _run("generated.gemmini", "compile", "k.hlo", "-o", "k.s", cwd=d).returncode == 0
    assert _run("generated.gemmini", "run", "k.s", "--random", "1", "-o", "in.npz", cwd=d).returncode == 0
    prog, npz = (d / "k.s").read_bytes(), (d / "in.npz").read_bytes()
    for args in (("-o", "k.s"), ("-o", "o.npz", "--trace", "k.s"), ("--inputs", "in.npz", "-o", "in.npz")):
        src = () if "--inputs" in args else ("--random", "1")
        out = _run("generated.gemmini", "run", "k.s", *src, *args, cwd=d)
        assert out.returncode == 2 and "refusing to overwrite it" in out.stderr, args
    assert (d / "k.s").read_bytes() == prog and (d / "in.npz").read_bytes() == npz


@pytest.mark.parametrize("flag", ["--timeout", "--patience"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_non_finite_numbers_are_usage_errors(kernel, flag, value):
    out = _run("generated.gemmini", "compile", "k.hlo", "-o", "k.s", flag, value, cwd=kernel.parent)
    assert out.returncode == 2 and "must be a finite number" in out.stderr


def test_files_that_are_not_utf8_are_located_errors(tmp_path):
    from isa_lang.errors import IsaError
    from isa_lang.parser import parse_file
    from runtime_skeleton.errors import read_source
    from runtime_skeleton.program import ProgramError

    bad = tmp_path / "bad.isa"
    bad.write_bytes(b"target t\n\xff\xfe bad\n")
    with pytest.raises(IsaError, match="file is not valid UTF-8") as err:
        parse_file(bad)
    assert (err.value.loc.line, err.value.loc.col) == (2, 1)
    inc = tmp_path / "inc.isa"
    inc.write_text('target t\ninclude "bad.isa"\n')
    with pytest.raises(IsaError, match="bad.isa:2:1: file is not valid UTF-8"):
        parse_file(inc)
    prog = tmp_path / "p.s"
    prog.write_bytes(b".target gemmini\n.input arg0 s8[16] @0 \xe9\n")
    with pytest.raises(ProgramError) as err:
        read_source(prog, ProgramError)
    assert (err.value.loc.line, err.value.loc.col) == (2, 23)
    out = _run("generated.gemmini", "run", "p.s", "--random", "1", "-o", "o.npz", cwd=tmp_path)
    assert out.returncode == 2 and "p.s:2:23: file is not valid UTF-8" in out.stderr
    gen = _run("generator", "check", "bad.isa", cwd=tmp_path)  # actgen check
    assert gen.returncode == 2 and "bad.isa:2:1: file is not valid UTF-8" in gen.stderr


def _crash(kind):
    def main(argv):
        if kind == "bug":
            raise ValueError("x" * 10_000)
        if kind == "deep":
            raise RecursionError("maximum recursion depth exceeded")
        raise MemoryError()
    return main


@pytest.mark.parametrize("kind,status,says", [
    ("bug", 3, "internal error (a bug in actgen"),
    ("deep", 2, "error: the input is nested too deeply"),
    ("memory", 2, "error: out of memory"),
])
def test_a_crash_is_one_line_naming_it_and_its_traceback_only_under_v(capsys, kind, status, says):
    from runtime_skeleton.cli_util import run_cli

    assert run_cli(_crash(kind), ["k.hlo"]) == status
    err = capsys.readouterr().err
    assert err.startswith(says) and len(err.splitlines()) == 1 and "Traceback" not in err
    assert len(err) < 600  # a huge message is not echoed in full
    assert run_cli(_crash(kind), ["k.hlo", "-v"]) == status
    assert "Traceback" in capsys.readouterr().err


@pytest.mark.parametrize("module", ["generated.gemmini", "runtime_skeleton.reference", "runtime_skeleton.hlo"])
def test_every_command_line_says_its_version(module, tmp_path):
    r = _run(module, "--version", cwd=ROOT)
    assert r.returncode == 0 and r.stdout.startswith("actgen "), r


@pytest.mark.parametrize("args,says", [
    (("runtime_skeleton.reference", "k.hlo", "--random", "-1"), "--random: must be >= 0, got -1"),
    (("runtime_skeleton.reference", "k.hlo", "--inputs", "x.npy"), "x.npy: not an .npz archive"),
    (("runtime_skeleton.reference", "k.hlo", "--inputs", "junk.npz"), "junk.npz: not an .npz archive"),
])
def test_bad_inputs_are_clean_errors(kernel, args, says):
    import numpy as np

    np.save(kernel.parent / "x.npy", np.zeros(3))
    (kernel.parent / "junk.npz").write_text("not a zip\n")
    r = _run(*args, cwd=kernel.parent)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr and "bug" not in r.stderr, r


def test_a_directory_given_as_a_description_is_named_as_such(tmp_path):
    """An existing directory was "no such file"."""
    (tmp_path / "t").mkdir()
    r = _run("generator", "t", "-o", "out", cwd=tmp_path)
    assert r.returncode == 2 and "t: is a directory, not a .isa file" in r.stderr
    r = _run("generator", "missing.isa", "-o", "out", cwd=tmp_path)
    assert r.returncode == 2 and "missing.isa: no such file" in r.stderr
