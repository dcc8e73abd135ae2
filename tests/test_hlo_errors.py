"""Malformed HLO: every error is an HloError at the offending token, never a traceback."""
import subprocess
from pathlib import Path
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime_skeleton.errors import HloError
from runtime_skeleton.hlo import parse_file, parse_module, print_module

ROOT = Path(__file__).resolve().parent.parent
P = "x = f32[4] parameter(0)\n"
REDUCER = "add_f32 { a = f32[] parameter(0) b = f32[] parameter(1) ROOT c = f32[] add(a, b) }\n"

CASES = [
    # (text, "line:col", key phrase)
    (P + "ROOT y = f32[4] foo(x)", "2:17", "unknown HLO op 'foo'"),
    (P + "ROOT y = f32[4] custom-call(x)", "2:17", "HLO op 'custom-call' is not supported by actgen"),
    (P + "ROOT y = f32[4] add(x, z)", "2:24", "undefined operand 'z'"),
    ("ROOT y = f32[4] negate(x)\n" + P, "1:24", "operand 'x' is used before it is defined"),
    (P + "x = f32[4] negate(x)", "2:1", "duplicate instruction name 'x'"),
    ("y = f33[4] parameter(0)", "1:5", "unknown element type 'f33'"),
    (P + "ROOT y = f32[4] add(x)", "2:17", "'add' takes 2 operands, got 1"),
    ("ROOT c = f32[2] constant({1, abc})", "1:30", "expected a literal value, found 'abc'"),
    ("ROOT c = f32[] constant(true)", "1:25", "bad f32 literal 'true'"),
    ("ROOT c = f32[2] constant({1, 2, 3})", "1:26", "constant has 3 elements but f32[2] needs 2"),
    ("ROOT c = u8[2] constant({1, 256})", "1:29", "literal 256 is out of range for u8"),
    (P + "ROOT y = f32[5] negate(x)", "2:10", "declared f32[5] but negate(f32[4]) gives f32[4]"),
    ("x = f32[4] parameter(1)", "1:22", "parameter number 1 is out of range"),
    (P + "y = f32[4] parameter(0)", "2:22", "duplicate parameter number 0"),
    ("ENTRY main {\n  x = f32[4] parameter(0)\n", "1:12", "unterminated '{': computation 'main' is never closed"),
    ("x = f32[n] parameter(0)", "1:9", "unknown dimension name 'n'"),
    ("x = f32[4] parameter(0", "1:23", "expected ')' to close the operands of 'parameter', found end of input"),
    (P + "ROOT y = f32[4] reduce(x, x), dimensions={0}, to_apply=nope", "2:56", "unknown computation 'nope'"),
    (P + "ROOT y = f32[4] dot(x, x), frobnicate={0}", "2:28", "unknown attribute 'frobnicate' for 'dot'"),
    (P + "ROOT y = f32[4] negate(x), dimensions={0}", "2:28", "attribute 'dimensions' is not valid for 'negate'"),
    (P + "ROOT y = f32[4,2] broadcast(x)", "2:19", "'broadcast' needs attribute 'dimensions'"),
    ("a = f32[4,8] parameter(0)\nROOT d = f32[4,4] dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
     "2:19", "contracting dimensions differ in size"),
    (P + "ROOT y = f32[4] negate(x), metadata={op_name=\"abc}", "2:46", "unterminated string"),
    ("x = f32[4,2]{0,0} parameter(0)", "1:13", "layout {0,0} is not a permutation"),
    ("HloModule m, entry_computation_layout={(f32[8])->f32[8]}\n" + P + "ROOT y = f32[4] negate(x)",
     "1:39", "entry_computation_layout (f32[8]) -> f32[8] does not match"),
    ("ROOT " + P + "ROOT y = f32[4] negate(x)", "2:1", "more than one ROOT"),
    ("f { a = f32[] parameter(0) ROOT b = f32[] call(a), to_apply=f }", "1:61", "computation 'f' calls itself"),
    (P + "c = f32[] constant(0)\nROOT y = f32[5] pad(x, c), padding=0_1x", "3:40", "expected an integer in padding"),
    ("a = f32[1,4,3] parameter(0)\nROOT c = f32[1,4,3] convolution(a, a), dim_labels=b0f_0ix->b0f", "2:51",
     "bad dim_labels 'b0f_0ix->b0f'"),
    (P + "ROOT y = pred[4] compare(x, x), direction=BIGGER", "2:43", "unknown comparison direction 'BIGGER'"),
    ("", "1:1", "expected a computation or an instruction, found end of input"),
    ("   /* unterminated", "1:4", "unterminated comment"),
    (P + "ROOT y = f32[4] copy(x) junk", "2:29", "expected '=' after instruction name 'junk'"),
    (REDUCER + "ENTRY e { x = s32[4] parameter(0) i = s32[] constant(0)\n"
     "ROOT r = s32[] reduce(x, i), dimensions={0}, to_apply=add_f32 }", "3:16",
     "parameter 0 of to_apply computation 'add_f32' must be s32[]"),
    ("ROOT c = f32[2] constant({...})", "1:27", "constant is elided"),
    ("x = f32[4]{0:T(2,*)} parameter(0)", "1:18", "tile dimension '*' is not supported"),
    ("c = f32[2] constant({1, 2}) ROOT t = (f32[2], f32[2]) tuple(c, c)\n"
     "ROOT g = f32[2] get-tuple-element(t), index=2", "2:1", "more than one ROOT"),
    ("c = f32[2] constant({1, 2}) t = (f32[2], f32[2]) tuple(c, c)\n"
     "ROOT g = f32[2] get-tuple-element(t), index=2", "2:17", "index 2 is out of range"),
    ("main { ROOT a = f32[] constant(0) }\nmain { ROOT b = f32[] constant(1) }", "2:1",
     "duplicate computation name 'main'"),
    ("x = u8[4] parameter(0) ROOT y = bf16[4] bitcast-convert(x)", "1:41", "needs a last dimension of size 2"),
    ("x = f32[4] parameter(0) ROOT y = f32[4] add(s32[4] x, x)", "1:45", "operand 'x' is annotated s32[4]"),
]


@pytest.mark.parametrize("text, where, phrase", CASES, ids=[c[2][:40] for c in CASES])
def test_malformed(text, where, phrase):
    with pytest.raises(HloError) as info:
        parse_module(text, "f.hlo")
    err = info.value
    assert str(err).startswith(f"f.hlo:{where}: "), str(err)
    assert phrase in err.message, str(err)


def test_error_count():
    assert len(CASES) >= 15


def test_deep_nesting_is_an_error_not_a_crash():
    with pytest.raises(HloError, match="nested too deeply"):
        parse_module("x = " + "(" * 20000 + "f32[]" + ")" * 20000 + " parameter(0)")
    with pytest.raises(HloError):
        parse_module("ROOT c = f32[2] constant(" + "{" * 5000 + ")")


def test_symbols_errors():
    with pytest.raises(HloError, match="division by zero") as info:
        parse_module("x = f32[n/0] parameter(0)", "f.hlo", symbols={"n": 4})
    assert str(info.value).startswith("f.hlo:1:10:")
    with pytest.raises(HloError, match="unknown dimension name 'm'") as info:
        parse_module("x = f32[8] parameter(0) c = f32[] constant(0)\nROOT p = f32[8] pad(x, c), padding=0_mx",
                     "f.hlo", symbols={"n": 4})
    assert str(info.value).startswith("f.hlo:2:38:")
    with pytest.raises(HloError, match="dimension size -1 is negative"):
        parse_module("x = f32[n-5] parameter(0)", symbols={"n": 4})


def test_invalid_utf8_file(tmp_path):
    path = tmp_path / "bad.hlo"
    path.write_bytes(b"x = f32[4] parameter(0)\nROOT y = f32[4] neg\xffate(x)\n")
    with pytest.raises(HloError) as info:
        parse_file(path)
    assert str(info.value) == f"{path}:2:20: file is not valid UTF-8"


# ---------------------------------------------------------------- fuzzing

VALID = """HloModule jit_f, entry_computation_layout={(f32[4,8]{1,0}, s32[])->(f32[4]{0}, bf16[2,2])}

%region_0.1 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0), metadata={op_name="x"}
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}

ENTRY %main.2 {
  x.1 = f32[4,8]{1,0:T(8,128)} parameter(0)
  i.1 = s32[] parameter(1)
  c.1 = f32[] constant(-inf)
  r.1 = f32[4]{0} reduce(x.1, c.1), dimensions={1}, to_apply=%region_0.1
  s.1 = f32[2,2]{1,0} dynamic-slice(x.1, i.1, i.1), dynamic_slice_sizes={2,2}
  t.1 = f32[2,2]{0,1} transpose(s.1), dimensions={1,0}
  k.1 = bf16[2,2]{1,0} constant({ { 1, -2.5 }, { inf, nan } })
  z.1 = f32[] constant(0)
  p.1 = f32[5,3] pad(t.1, z.1), padding=1_2x0_0_1
  w.1 = f32[3,2] reduce-window(p.1, z.1), window={size=2x2 stride=2x1 pad=0_1x0_0}, to_apply=%region_0.1
  d.1 = f32[3,2] dot(w.1, s.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  cv.1 = bf16[2,2] convert(t.1)
  mul.1 = bf16[2,2] multiply(cv.1, k.1)
  ROOT tuple.1 = (f32[4]{0}, bf16[2,2]) tuple(r.1, mul.1)
}
"""

_SNIPPETS = ["{", "}", "(", ")", "[", "]", ",", "=", ":", "%", "-", "_", "x", "0", "7", "-1", ".", '"', "ROOT",
             "ENTRY", "f32", "s32[]", "{1,0}", "nan", "inf", "->", "dimensions={0}", "add", "tuple", "/*", "\n",
             " ", "999999999999999999999", "T(2,1)", "pred", "constant", "parameter(0)", "é"]


@st.composite
def mutated(draw):
    text = VALID
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = min(len(text), i + draw(st.integers(0, 25)))
        kind = draw(st.sampled_from(["delete", "insert", "replace", "duplicate"]))
        if kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "insert":
            text = text[:i] + draw(st.sampled_from(_SNIPPETS)) + text[i:]
        elif kind == "replace":
            text = text[:i] + draw(st.sampled_from(_SNIPPETS)) + text[j:]
        else:
            text = text[:i] + text[i:j] + text[i:]
    return text


def test_valid_fuzz_seed_parses():
    m = parse_module(VALID)
    assert parse_module(print_module(m)) == m


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutations_raise_only_hlo_error(text):
    try:
        m = parse_module(text, "f.hlo")
    except HloError as err:
        assert err.loc is not None and err.loc.file == "f.hlo"
        assert "internal error" not in err.message, err.message
        return
    assert parse_module(print_module(m)) == m


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(list("{}[]()=,:%-_x019abfEROTNY. \n\"") + ["f32", "ROOT", "->", "add"]),
                max_size=40).map("".join))
def test_random_garbage_raises_only_hlo_error(text):
    try:
        parse_module(text)
    except HloError as err:
        assert err.loc is not None and "internal error" not in err.message


# ---------------------------------------------------------------- CLI


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "runtime_skeleton.hlo", *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_cli_malformed_file_exits_2_with_one_located_line(tmp_path):
    path = tmp_path / "bad.hlo"
    path.write_text(P + "ROOT y = f32[4] foo(x)\n")
    r = _cli(path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [f"{path}:2:17: unknown HLO op 'foo'"]


def test_cli_summary_print_and_help(tmp_path):
    path = tmp_path / "ok.hlo"
    path.write_text(VALID)
    r = _cli(path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ("jit_f: 2 computations, 17 instructions; entry main.2(f32[4,8]{1,0:T(8,128)}, s32[]) "
                                "-> (f32[4]{0}, bf16[2,2])")
    r = _cli(path, "--print")
    assert r.returncode == 0 and parse_module(r.stdout) == parse_module(VALID)
    r = _cli("--help")
    assert r.returncode == 0 and "--print" in r.stdout
    r = _cli(tmp_path / "missing.hlo")
    assert r.returncode == 2 and "missing.hlo" in r.stderr


def test_a_file_larger_than_the_readers_limit_is_refused(tmp_path, monkeypatch):
    """Readers stop at MAX_SOURCE_BYTES: /dev/zero as a kernel read until memory ran out."""
    from runtime_skeleton import errors

    monkeypatch.setattr(errors, "MAX_SOURCE_BYTES", 64)
    p = tmp_path / "k.hlo"
    p.write_text("HloModule m\n" + "x" * 100)
    with pytest.raises(HloError, match="file is larger than") as info:
        parse_file(p)
    assert (info.value.loc.line, info.value.loc.col) == (2, 53)


def test_an_endless_device_is_refused_not_read_forever():
    r = subprocess.run([sys.executable, "-m", "runtime_skeleton.hlo", "/dev/zero"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "file is larger than 64 MiB" in r.stderr
