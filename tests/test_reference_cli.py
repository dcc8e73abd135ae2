"""``python -m runtime_skeleton.reference``: npz round trips, --random, and one-line errors."""
from __future__ import annotations

import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from runtime_skeleton.cli_util import run_cli
from runtime_skeleton.reference.__main__ import main

KERNEL = """\
HloModule k

ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  y = bf16[3]{0} parameter(1)
  n = s8[2]{0} parameter(2)
  yb = bf16[2,3]{1,0} broadcast(y), dimensions={1}
  xb = bf16[2,3]{1,0} convert(x)
  s = bf16[2,3]{1,0} add(xb, yb)
  m = s8[2]{0} multiply(n, n)
  ROOT t = (bf16[2,3]{1,0}, s8[2]{0}) tuple(s, m)
}
"""


@pytest.fixture
def kernel(tmp_path):
    path = tmp_path / "k.hlo"
    path.write_text(KERNEL)
    return path


def cli(*args) -> int:
    return run_cli(main, [str(a) for a in args])


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_inputs_round_trip_and_bf16_written_as_f32(kernel, tmp_path):
    x = np.array([[1, 2 ** -9, 3], [0.1, 200, -1]], np.float32)
    y = np.array([1 + 2 ** -9, 1, 0.5], np.float32)  # given as f32: rounded to bf16 (1 + 2^-9 -> 1)
    n = np.array([12, -100], np.int64)  # any integer dtype holding the values exactly
    np.savez(tmp_path / "in.npz", arg0=x, arg1=y, arg2=n)
    assert cli(kernel, "--inputs", tmp_path / "in.npz", "-o", tmp_path / "out.npz") == 0
    with np.load(tmp_path / "out.npz") as out:
        assert sorted(out.files) == ["out0", "out1"]
        s, m = out["out0"], out["out1"]
    assert s.dtype == np.float32 and m.dtype == np.int8
    bf = ml_dtypes.bfloat16
    want = (x.astype(bf).astype(np.float32) + y.astype(bf).astype(np.float32)).astype(bf).astype(np.float32)
    np.testing.assert_array_equal(s, want)
    assert s.astype(bf).astype(np.float32).tobytes() == s.tobytes()  # f32 holds bf16 exactly
    np.testing.assert_array_equal(m, np.array([-112, 16], np.int8))  # 144 and 10000 wrap in s8


def test_bf16_arrays_saved_by_numpy_are_read_back(kernel, tmp_path):
    # np.savez stores ml_dtypes' bf16 as raw 2-byte records; they are read back as bf16
    y = np.array([1.5, -2, 3], ml_dtypes.bfloat16)
    np.savez(tmp_path / "in.npz", arg0=np.zeros((2, 3), np.float32), arg1=y, arg2=np.zeros(2, np.int8))
    assert cli(kernel, "--inputs", tmp_path / "in.npz", "-o", tmp_path / "out.npz") == 0
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_array_equal(out["out0"], np.array([[1.5, -2, 3]] * 2, np.float32))


def test_random_inputs_saved_beside_outputs_and_reusable(kernel, tmp_path):
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    assert cli(kernel, "--random", 7, "-o", a) == 0
    assert cli(kernel, "--random", 7, "-o", b) == 0
    with np.load(a) as fa, np.load(b) as fb:
        assert sorted(fa.files) == ["arg0", "arg1", "arg2", "out0", "out1"]
        for k in fa.files:
            np.testing.assert_array_equal(fa[k], fb[k])  # deterministic
        assert fa["arg1"].dtype == np.float32 and fa["arg2"].dtype == np.int8
        assert np.abs(fa["arg2"]).max() <= 10  # small ints
        saved = {k: fa[k] for k in fa.files}
    # the file is itself a valid --inputs file and reproduces the outputs
    c = tmp_path / "c.npz"
    assert cli(kernel, "--inputs", a, "-o", c) == 0
    with np.load(c) as fc:
        for k in ("out0", "out1"):
            np.testing.assert_array_equal(fc[k], saved[k])


def test_prints_outputs_without_o(kernel, capsys):
    assert cli(kernel, "--random", 1) == 0
    out = capsys.readouterr().out
    assert "out0: bfloat16[2, 3]" in out and "out1: int8[2]" in out


def test_missing_input(kernel, tmp_path, capsys):
    np.savez(tmp_path / "in.npz", arg0=np.zeros((2, 3)), arg2=np.zeros(2))
    assert cli(kernel, "--inputs", tmp_path / "in.npz", "-o", tmp_path / "o.npz") == 2
    line = one_error_line(capsys)
    assert line.startswith("error: ") and "missing input 'arg1'" in line and "bf16[3]" in line
    assert not (tmp_path / "o.npz").exists()


def test_wrong_shape(kernel, tmp_path, capsys):
    np.savez(tmp_path / "in.npz", arg0=np.zeros((3, 2)), arg1=np.zeros(3), arg2=np.zeros(2))
    assert cli(kernel, "--inputs", tmp_path / "in.npz") == 2
    line = one_error_line(capsys)
    assert "'arg0'" in line and "f32[2,3]" in line and "(3,2)" in line


def test_unexpected_and_inexact_inputs(kernel, tmp_path, capsys):
    np.savez(tmp_path / "in.npz", arg0=np.zeros((2, 3)), arg1=np.zeros(3), arg2=np.zeros(2), arg3=np.zeros(1))
    assert cli(kernel, "--inputs", tmp_path / "in.npz") == 2
    assert "unexpected input 'arg3'" in one_error_line(capsys)
    np.savez(tmp_path / "in.npz", arg0=np.zeros((2, 3)), arg1=np.zeros(3), arg2=np.array([0.5, 1]))
    assert cli(kernel, "--inputs", tmp_path / "in.npz") == 2
    assert "cannot convert float64 values to s8 exactly" in one_error_line(capsys)


def test_parse_error_is_located(tmp_path, capsys):
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\n\nENTRY main {\n  x = f32[2] parameter(0)\n  ROOT y = f32[2] frobnicate(x)\n}\n")
    assert cli(bad, "--random", 0) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"{bad}:5:"), line


def test_missing_files(kernel, tmp_path, capsys):
    assert cli(tmp_path / "nope.hlo", "--random", 0) == 2
    assert "nope.hlo" in one_error_line(capsys)
    assert cli(kernel, "--inputs", tmp_path / "nope.npz") == 2
    assert "nope.npz" in one_error_line(capsys)


def test_module_entry_point(kernel, tmp_path):
    """The real ``python -m`` entry: exit status 0, and 2 with one stderr line."""
    ok = subprocess.run([sys.executable, "-m", "runtime_skeleton.reference", str(kernel), "--random", "3",
                         "-o", str(tmp_path / "o.npz")], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    again = subprocess.run([sys.executable, "-m", "runtime_skeleton.reference", str(kernel), "--inputs",
                            str(tmp_path / "o.npz"), "-o", str(tmp_path / "o2.npz")], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr  # an output file of --random is a valid input file
    over = subprocess.run([sys.executable, "-m", "runtime_skeleton.reference", str(kernel), "--inputs",
                           str(tmp_path / "o.npz"), "-o", str(tmp_path / "o.npz")], capture_output=True, text=True)
    assert over.returncode == 2 and "refusing to overwrite it" in over.stderr  # the inputs are kept
    np.savez(tmp_path / "short.npz", arg0=np.zeros((2, 3)))
    err = subprocess.run([sys.executable, "-m", "runtime_skeleton.reference", str(kernel), "--inputs",
                          str(tmp_path / "short.npz")], capture_output=True, text=True)
    assert err.returncode == 2 and len(err.stderr.strip().splitlines()) == 1, err.stderr
    assert "--random" in subprocess.run([sys.executable, "-m", "runtime_skeleton.reference", "--help"],
                                        capture_output=True, text=True).stdout


def test_an_npz_header_claiming_10_to_the_11_elements_is_refused_unread(tmp_path):
    """The shapes are checked from the .npy headers before any array is read: such a header
    was an out-of-memory error that named neither the file nor the input."""
    import zipfile

    from runtime_skeleton.errors import EvalError
    from runtime_skeleton.ir.dtypes import DTYPES
    from runtime_skeleton.ir.types import TensorType
    from runtime_skeleton.reference.npz_io import load_inputs

    header = "{'descr': '<i4', 'fortran_order': False, 'shape': (100000000000,), }"
    header += " " * (63 - len(header) % 64) + "\n"
    npy = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + bytes(16)
    path = tmp_path / "huge.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("arg0.npy", npy)
    with pytest.raises(EvalError, match=r"input 'arg0': expected s32\[16\], got an array of shape \(100000000000\)"):
        load_inputs(str(path), [TensorType(DTYPES["s32"], (16,))])
