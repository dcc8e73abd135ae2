"""Every reader, fed damaged copies of shipped files (issue 42, Deliver 5): truncation, byte
flips, deleted and duplicated lines, huge numbers, deep nesting, bytes that are not UTF-8.
Each must end in a clean, located error (an ActgenError) or a correct run; nothing else
may escape, and nothing may hang (each example runs in well under a second)."""
from __future__ import annotations

import io
import pathlib
import re
import tempfile

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime_skeleton.errors import ActgenError

ROOT = pathlib.Path(__file__).resolve().parent.parent
NUMBER = re.compile(rb"\d+")
SNIPPETS = [b"99999999999999999999999999999999", b"1" + b"0" * 400, b"-1", b"0", b"(" * 300, b"[" * 300,
            b"{" * 300, b"1+" * 300, b"\xff\xfe", b"\xc3", b"\x00", b"\n", b"#", b"@"]


@st.composite
def damaged(draw, data: bytes) -> bytes:
    """``data`` with one to three of the damages a user's file meets."""
    for _ in range(draw(st.integers(1, 3))):
        lines = data.split(b"\n")
        kind = draw(st.sampled_from(["truncate", "flip", "delete line", "duplicate line", "huge number",
                                     "insert"]))
        i = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "truncate":
            data = data[:i]
        elif kind == "flip" and data:
            data = data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1:]
        elif kind in ("delete line", "duplicate line"):
            k = draw(st.integers(0, len(lines) - 1))
            lines[k:k + 1] = [] if kind == "delete line" else [lines[k], lines[k]]
            data = b"\n".join(lines)
        elif kind == "huge number" and (numbers := list(NUMBER.finditer(data))):
            m = numbers[draw(st.integers(0, len(numbers) - 1))]
            data = data[:m.start()] + draw(st.sampled_from(SNIPPETS[:2])) + data[m.end():]
        else:
            data = data[:i] + draw(st.sampled_from(SNIPPETS)) + data[i:]
    return data


def _through_a_file(data: bytes, suffix: str, read):  # noqa: ANN001, ANN202
    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / f"f{suffix}"
        path.write_bytes(data)
        try:
            return read(path)
        except ActgenError as err:
            assert "internal error" not in err.message, err.message
            return None


MUTATIONS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                           HealthCheck.data_too_large])
QKV = (ROOT / "targets/qkv.isa").read_bytes()
MAC_HLO = (ROOT / "examples/kernels/gemmini_mac.hlo").read_bytes()
MAC_S = (ROOT / "tests/data/gemmini_mac.s").read_bytes()


@MUTATIONS
@given(damaged(QKV))
def test_a_damaged_description_is_a_located_error_or_a_valid_target(data):
    from generator.cli import load

    spec = _through_a_file(data, ".isa", lambda p: load(str(p))[0])
    assert spec is None or spec.instructions


@MUTATIONS
@given(damaged(MAC_HLO))
def test_a_damaged_kernel_is_a_located_error_or_a_module(data):
    from runtime_skeleton.hlo import parse_file, parse_module, print_module

    m = _through_a_file(data, ".hlo", parse_file)
    assert m is None or parse_module(print_module(m)) == m


@MUTATIONS
@given(damaged(MAC_S))
def test_a_damaged_program_is_a_located_error_or_runs_on_the_simulator(data):
    """A program that still parses either runs, every output written, or stops with an
    error at the line at fault."""
    from generated.gemmini import TARGET
    from runtime_skeleton.reference.npz_io import random_inputs
    from runtime_skeleton.sim import parse_program, run_program
    from runtime_skeleton.program import ProgramError

    def run(path):  # noqa: ANN001, ANN202
        from runtime_skeleton.errors import read_source

        prog = parse_program(read_source(path, ProgramError), str(path))
        outs = run_program(TARGET, prog, random_inputs([d.type for d in prog.inputs], 0))
        return prog, outs

    ran = _through_a_file(data, ".s", run)
    if ran is not None:
        prog, outs = ran
        assert [o.shape for o in outs] == [d.type.shape for d in prog.outputs]


def _npz() -> bytes:
    f = io.BytesIO()
    rng = np.random.default_rng(0)
    np.savez(f, arg0=rng.integers(-9, 9, (16, 16), dtype=np.int8), arg1=rng.integers(-9, 9, (16, 16), dtype=np.int8),
             arg2=rng.integers(-9, 9, (16, 16), dtype=np.int32))
    return f.getvalue()


@MUTATIONS
@given(damaged(_npz()))
def test_damaged_inputs_are_a_clean_error_or_arrays_of_the_kernels_types(data):
    from runtime_skeleton.hlo import parse_module
    from runtime_skeleton.reference.npz_io import load_inputs

    types = parse_module(MAC_HLO.decode()).parameter_types
    arrays = _through_a_file(data, ".npz", lambda p: load_inputs(str(p), types))
    assert arrays is None or [a.shape for a in arrays] == [t.shape for t in types]
