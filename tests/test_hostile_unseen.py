"""What a hostile-input corpus built without reading ours found (433 cases, 2026-11-28):
each fixed finding, kept as a regression test."""
from __future__ import annotations

import ast
import errno
import pathlib
import zipfile

import numpy as np
import pytest

from generator.render import render
from isa_lang.errors import IsaError
from isa_lang.parser import parse_file, parse_text
from runtime_skeleton.cli_util import run_cli
from runtime_skeleton.errors import ActgenError, HloError
from runtime_skeleton.hlo import parse_module
from runtime_skeleton.ir.dtypes import dtype
from runtime_skeleton.ir.types import TensorType
from runtime_skeleton.reference.npz_io import load_inputs
from runtime_skeleton.program import ProgramError, parse_program

ROOT = pathlib.Path(__file__).resolve().parent.parent
QKV = ROOT / "targets" / "qkv.isa"
MAC = (ROOT / "tests" / "data" / "gemmini_mac.s").read_text()


def test_a_newline_in_the_description_name_stays_inside_the_generated_comment():
    spec = parse_file(QKV)
    label = "evil\nimport os; os.system('false')\n#.isa"
    for name, text in render(spec, label, QKV.read_text()).items():
        tree = ast.parse(text)
        assert not any(isinstance(n, ast.Import) and any(a.name == "os" for a in n.names) for n in tree.body), name
    assert "evil\\nimport os" in render(spec, label, QKV.read_text())["__init__.py"].splitlines()[0]


@pytest.mark.parametrize("sep", ["\x85", "\x0c", "\u2028", "\x1e"])
def test_a_comment_holding_a_line_separator_stays_a_comment(sep):
    first = MAC.splitlines()[5]  # an instruction line
    text = MAC.replace(first, first + " # note" + sep + "mvin rows=1 stride=16 dram=0 sp_addr=0", 1)
    assert len(parse_program(text).instructions) == len(parse_program(MAC).instructions)


@pytest.mark.parametrize("old,new", [("rows=16", "rows=\u0661\u0666"), ("@256", "@\u0662\u0665\u0666")])
def test_digits_of_other_scripts_are_not_numbers(old, new):
    with pytest.raises(ProgramError):
        parse_program(MAC.replace(old, new, 1))


@pytest.mark.parametrize("shape,message", [
    ("f32[" + ",".join(["1"] * 65) + "]", "at most 64 dimensions"),
    ("f32[99999999999,99999999999]", "does not fit in int64"),
    ("f32[4,4]{1,0:T(0,0)}", "tile dimension 0"),
    ("f32[4,4]{1,0:T(99999999999,8)}", "tile dimension 99999999999"),
])
def test_shapes_numpy_cannot_hold_are_refused_where_they_are_written(shape, message):
    text = f"HloModule m\n\nENTRY main {{\n  ROOT x = {shape} parameter(0)\n}}\n"
    with pytest.raises(HloError, match=message) as err:
        parse_module(text, "k.hlo")
    assert err.value.loc is not None and err.value.loc.line == 4


def test_description_integers_past_256_bits_are_refused():
    base = QKV.read_text()
    parse_text("const OK = 2 ** 200\n" + base, "t.isa")  # 201 bits: fine (it was refused past 128)
    for bad in ["const BIG = 2 ** 256\n", "const BIG = " + "9" * 5000 + "\n",
                "const A = 2 ** 200\nconst B = A * A\n"]:
        with pytest.raises(IsaError, match="bits"):
            parse_text(bad + base, "t.isa")


def test_a_closed_pipe_ends_the_command_quietly(monkeypatch):
    import os

    monkeypatch.setattr(os, "dup2", lambda *a: None)

    def main(argv):  # noqa: ANN001, ANN202
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    assert run_cli(main, []) == 1


def test_a_full_disk_is_an_error_not_a_crash(capsys):
    def main(argv):  # noqa: ANN001, ANN202
        raise OSError(errno.ENOSPC, "No space left on device", "/dev/full")

    assert run_cli(main, []) == 2
    assert "error: /dev/full: No space left on device" in capsys.readouterr().err


def test_an_encrypted_npz_member_is_an_unreadable_archive(tmp_path):
    path = tmp_path / "in.npz"
    np.savez(path, arg0=np.zeros(4, np.int32))
    data = bytearray(path.read_bytes())
    for sig, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local and central headers: bit 0
        at = data.find(sig)
        data[at + flags_at] |= 1
    path.write_bytes(bytes(data))
    assert zipfile.is_zipfile(path)
    with pytest.raises(ActgenError, match="not a readable .npz"):
        load_inputs(str(path), [TensorType(dtype("s32"), (4,))])


def test_isel_may_not_write_its_graphs_over_the_kernel(tmp_path, capsys):
    from runtime_skeleton.backend_cli import main as backend_main
    from generated import gemmini

    kernel = tmp_path / "k.hlo"
    kernel.write_text((ROOT / "examples" / "kernels" / "gemmini_gemm.hlo").read_text())
    before = kernel.read_bytes()
    for flag in ("--dot", "--egraph-dot"):
        code = run_cli(lambda argv: backend_main(gemmini.TARGET, argv), ["isel", str(kernel), flag, str(kernel)])
        assert code == 2 and kernel.read_bytes() == before
    assert "the kernel" in capsys.readouterr().err


@pytest.mark.parametrize("literal", ["f16[] constant(70000)", "f32[] constant(1e400)", "bf16[] constant(-4e38)"])
def test_a_float_literal_past_its_type_is_refused_as_xla_does(literal):
    with pytest.raises(HloError, match="out of range"):
        parse_module(f"HloModule m\nENTRY e {{\n  ROOT c = {literal}\n}}\n", "k.hlo")
    parse_module("HloModule m\nENTRY e {\n  ROOT c = f16[] constant(-inf)\n}\n", "k.hlo")  # inf is a value


def test_including_a_directory_says_so(tmp_path):
    (tmp_path / "t.isa").write_text('include "."\n' + QKV.read_text())
    with pytest.raises(IsaError, match="is not a regular file"):
        parse_file(tmp_path / "t.isa")


def test_a_constant_over_an_input_is_refused():
    at = MAC.index(".input  arg1")
    with pytest.raises(ProgramError, match="constant at bytes \\[0, 4\\) overlaps input 'arg0'"):
        parse_program(MAC[:at] + ".const @0 01020304\n" + MAC[at:])
