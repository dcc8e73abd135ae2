"""Malformed .isa descriptions: each gives one precise `file:line:col: message`."""
import subprocess
import sys

import pytest

from isa_lang.checker import check
from isa_lang.errors import IsaError
from isa_lang.parser import parse_text

HEAD = """target t
hbm d0 : 1 MiB
buffer d1 : bf16[64] x 128
"""

LOAD = """instruction load(n ; src, dst)
  in  x = d0[src : n * 128]
  out y = d1[dst : n]
  where 1 <= n <= 128
  engine dma latency 8 + n
  semantics {
    x = u8[n * 128] parameter(0)
    a = u8[n, 64, 2] reshape(x)
    ROOT y = bf16[n, 64] bitcast-convert(a)
  }
"""

# (name, text after HEAD, expected line, expected col, message fragment)
CASES = [
    ("unknown buffer", LOAD.replace("d1[dst", "d9[dst"), 6, 3, "unknown buffer 'd9'"),
    ("undeclared attribute in slice", LOAD.replace("d0[src : n * 128]", "d0[src : m * 128]"), 5, 20,
     "'m' is not an attribute of 'load'"),
    ("undeclared attribute in constraint", LOAD.replace("1 <= n <= 128", "1 <= n <= k"), 7, 19,
     "'k' is not an attribute"),
    ("undeclared attribute in latency", LOAD.replace("8 + n", "8 + q"), 8, 26, "'q' is not an attribute"),
    ("unknown name in semantics shape", LOAD.replace("u8[n, 64, 2]", "u8[w, 64, 2]"), 11, 12, "'w'"),
    ("attribute declared but unused", LOAD.replace("(n ; src, dst)", "(n, unused ; src, dst)"), 4, 21,
     "'unused' of 'load' is declared but never used"),
    ("slice/semantics shape mismatch for some alpha",
     LOAD.replace("x = u8[n * 128] parameter(0)\n    a = u8[n, 64, 2] reshape(x)",
                  "x = u8[n * 128] parameter(0)\n    a = u8[n, 64, 2] reshape(x)").replace("out y = d1[dst : n]",
                                                                                          "out y = d1[dst : 64]"),
     12, 10, "'y' is bf16[1,64] in the semantics but slice d1[dst : 64] is bf16[64,64] when n=1"),
    ("parameter dtype mismatch", LOAD.replace("x = u8[n * 128] parameter(0)", "x = s8[n * 128] parameter(0)")
     .replace("a = u8[n, 64, 2]", "a = s8[n, 64, 2]"), 10, 5, "'x' is s8 in the semantics but slice d0[src : (n * 128)] holds u8"),
    ("rank mismatch", LOAD.replace("x = u8[n * 128] parameter(0)", "x = u8[n, 128] parameter(0)"), 10, 5,
     "'x' has rank 2 in the semantics but slice d0[src : (n * 128)] has rank 1"),
    ("unsatisfiable constraint", LOAD.replace("1 <= n <= 128", "n >= 200"), 7, 9,
     "constraints of 'load' are unsatisfiable"),
    ("contradictory constraints", LOAD.replace("1 <= n <= 128", "n > 4, n < 2"), 7, 9, "unsatisfiable"),
    ("unbounded attribute", LOAD.replace("(n ; src, dst)", "(n, k ; src, dst)").replace(
        "ROOT y", "z = u8[] constant(0)\n    t = u8[k] broadcast(z), dimensions={}\n    ROOT y"), 4, 21,
     "attribute 'k' of 'load' has no lower bound; add a 'where' constraint"),
    ("unsupported op", LOAD.replace("ROOT y = bf16[n, 64] bitcast-convert(a)", "ROOT y = bf16[n, 64] custom-call(a)"),
     12, 26, "custom-call"),
    ("unknown op", LOAD.replace("ROOT y = bf16[n, 64] bitcast-convert(a)", "ROOT y = bf16[n, 64] frobnicate(a)"),
     12, 26, "frobnicate"),
    ("semantics type error at some alpha", LOAD.replace("a = u8[n, 64, 2] reshape(x)", "a = u8[n, 64, 2] reshape(x)")
     .replace("ROOT y = bf16[n, 64] bitcast-convert(a)", "b = u8[n, 64, 2] transpose(a), dimensions={1,0,2}\n    ROOT y = bf16[n, 64] bitcast-convert(b)"),
     12, 9, "transpose(u8[1,64,2]) gives u8[64,1,2] (with n=1)"),
    ("parameter count", LOAD.replace("  in  x = d0[src : n * 128]\n", "  in  x = d0[src : n * 128]\n  in  w = d0[src : 1]\n"),
     10, 14, "1 parameter(s) but the instruction declares 2 input slice(s)"),
    ("parameter name mismatch", LOAD.replace("x = u8[n * 128] parameter(0)", "p = u8[n * 128] parameter(0)")
     .replace("reshape(x)", "reshape(p)"), 10, 5, "parameter 'p' of the semantics should be named 'x'"),
    ("semantics uses addressing attribute", LOAD.replace("x = u8[n * 128] parameter(0)", "x = u8[n * 128 + dst - dst] parameter(0)"),
     10, 22, "semantics may only use computational attributes (α); 'dst' is an addressing attribute"),
    ("missing out slice", LOAD.replace("  out y = d1[dst : n]\n", ""), 4, 13, "has no 'out' slice"),
    ("two outputs", LOAD.replace("  out y = d1[dst : n]\n", "  out y = d1[dst : n]\n  out z = d1[dst : n]\n"), 7, 3,
     "second output"),
    ("missing semantics", LOAD.split("  semantics")[0], 4, 13, "has no semantics block"),
    ("syntax: missing colon in slice", LOAD.replace("d0[src : n * 128]", "d0[src n * 128]"), 5, 18,
     "unexpected 'n'; expected '(', ')', '*'"),
    ("syntax: bad character", LOAD.replace("where 1 <= n", "where 1 <= n $"), 7, 16, "unexpected character '$'"),
    ("syntax: unbalanced semantics brace", LOAD.replace("ROOT y = bf16[n, 64] bitcast-convert(a)\n  }", "ROOT y = bf16[n, 64] bitcast-convert(a)\n"), 9, 13, ""),
    ("duplicate instruction", LOAD + LOAD, 14, 13, "instruction 'load' is already declared as an instruction"),
    ("duplicate attribute", LOAD.replace("(n ; src, dst)", "(n ; src, src)"), 4, 27, "attribute 'src' declared twice"),
    ("slice dims vs buffer access dims", LOAD.replace("d1[dst : n]", "d1[dst : n, 0 : 1]"), 6, 3,
     "has 1 access dimension(s) but the slice gives 2 range(s)"),
    ("unknown function", LOAD.replace("1 <= n <= 128", "1 <= n <= clamp(128)"), 7, 19, "unknown function 'clamp'"),
    ("constant divided by zero", "const Z = 128 / 0\n" + LOAD, 4, 15, "division by zero in '(128 / 0)'"),
    ("latency modulo zero", LOAD.replace("8 + n", "8 + n % 0"), 8, 28, "division by zero in '(n % 0)'"),
    ("where clause not a condition", LOAD.replace("1 <= n <= 128", "n + 1"), 7, 11,
     "a 'where' clause of 'load' must be a condition"),
    ("latency a condition", LOAD.replace("8 + n", "n > 2"), 8, 22, "the latency of 'load' must be an integer"),
    ("boolean in arithmetic", "const Z = true + 1\n" + LOAD, 4, 11, "'+' needs an integer, got 'true'"),
    ("negative exponent", "const Z = 2 ** -1\n" + LOAD, 4, 11, "'**' needs a non-negative exponent"),
    ("huge power", "const Z = 9 ** 99999999\n" + LOAD, 4, 11, "has more than 256 bits"),
    ("peak of unknown engine", LOAD + "peak gemm bf16 100\n", 14, 1, "peak names engine 'gemm', which no instruction uses"),
    ("bandwidth of unknown buffer", LOAD + "bandwidth d0 -> d7 64\n", 14, 1, "bandwidth names unknown buffer 'd7'"),
    ("latency over addressing attribute", LOAD.replace("8 + n", "8 + src"), 8, 24,
     "latency may only use computational attributes"),
    ("zero latency", LOAD.replace("8 + n", "0"), 8, 22, "the latency of 'load' must be at least 1 cycle; it is 0"),
    ("latency negative for some attributes", LOAD.replace("8 + n", "100 - n"), 8, 26,
     "the latency of 'load' must be at least 1 cycle"),
    ("zero clock", LOAD + "clock 0 GHz\n", 14, 7, "the clock must be a positive number, got 0"),
    ("two clocks", LOAD + "clock 1 GHz\nclock 2 GHz\n", 15, 1, "the clock is declared twice (first at bad.isa:14:1)"),
    ("zero peak", LOAD + "peak dma u8 0\n", 14, 13, "a peak must be a positive number"),
    ("infinite peak", LOAD + "peak dma u8 1e999\n", 14, 13, "a peak must be a positive number"),
    ("two peaks of one engine and dtype", LOAD + "peak dma u8 64\npeak dma u8 32\n", 15, 1,
     "a second peak for engine 'dma' and u8 (first at bad.isa:14:1)"),
    ("zero bandwidth", LOAD + "bandwidth d0 -> d1 0\n", 14, 20, "a bandwidth must be a positive number"),
    ("two bandwidths of one pair", LOAD + "bandwidth d0 -> d1 64\nbandwidth d0 -> d1 128\n", 15, 1,
     "a second bandwidth from d0 to d1"),
    ("no instructions", "clock 1 GHz\n", 1, 1, "target 't' declares no instructions"),
    ("a sum of 20000 terms", "const Z = " + "+".join(["1"] * 20000) + "\n" + LOAD, 4, 11,
     "expression nested 20001 levels deep"),
    ("5000 negations", LOAD.replace("8 + n", "-" * 5000 + "n"), 8, 22, "expression nested 5001 levels deep"),
    ("3000 nested calls", LOAD.replace("1 <= n <= 128", "n <= " + "min(1, " * 3000 + "128" + ")" * 3000), 7, 9,
     "at most 200"),
]


def _check(text: str, name: str = "bad.isa"):
    return check(parse_text(text, name))


def test_base_description_is_valid():
    spec = _check(HEAD + LOAD)
    ins = spec.instructions["load"]
    assert [(a.name, a.lo, a.hi) for a in ins.attrs] == [("n", 1, 128), ("src", 0, 1048576 - 128), ("dst", 0, 127)]


@pytest.mark.parametrize("name,body,line,col,fragment", CASES, ids=[c[0] for c in CASES])
def test_malformed(name, body, line, col, fragment):
    text = HEAD + body
    with pytest.raises(IsaError) as info:
        _check(text)
    err = info.value
    assert err.loc is not None and err.loc.file == "bad.isa"
    assert fragment in err.message, str(err)
    assert (err.loc.line, err.loc.col) == (line + 0, col), str(err)


def test_missing_target_and_hbm():
    with pytest.raises(IsaError, match="missing 'target NAME'"):
        _check("hbm d0 : 1 MiB\n")
    with pytest.raises(IsaError, match="missing 'hbm"):
        _check("target t\n")


def test_include_and_constants(tmp_path):
    (tmp_path / "common.isa").write_text("const ROWS = 128\nhbm d0 : 1 MiB\n")
    main = tmp_path / "main.isa"
    main.write_text('target t\ninclude "common.isa"\nbuffer d1 : bf16[64] x ROWS\n' + LOAD.replace("128\n", "ROWS\n"))
    from isa_lang.parser import parse_file

    spec = check(parse_file(main))
    assert spec.buffers["d1"].access_shape == (128,)
    assert spec.constants == {"ROWS": 128}


def test_include_cycle(tmp_path):
    (tmp_path / "a.isa").write_text('include "b.isa"\n')
    (tmp_path / "b.isa").write_text('include "a.isa"\n')
    from isa_lang.parser import parse_file

    with pytest.raises(IsaError, match="include cycle"):
        parse_file(tmp_path / "a.isa")


def test_cli_reports_located_error_and_exit_2(tmp_path):
    bad = tmp_path / "bad.isa"
    bad.write_text(HEAD + LOAD.replace("d1[dst", "d9[dst"))
    r = subprocess.run([sys.executable, "-m", "generator", "check", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{bad}:6:3: unknown buffer 'd9'"), r.stderr
    assert "Traceback" not in r.stderr


def test_a_constraint_z3_cannot_decide_in_time_is_an_error_not_a_hang(monkeypatch):
    """n³ + src³ = dst³ has no solution with src ≥ 1 (Fermat), which z3 cannot prove: the
    checker ran with no limit. Now each query has Z3_TIMEOUT_S, and 'unknown' is an error."""
    from isa_lang import checker

    monkeypatch.setattr(checker, "Z3_TIMEOUT_S", 1)
    text = HEAD + LOAD.replace("where 1 <= n <= 128", "where 1 <= n <= 128, src >= 1, n * n * n + src * src * src == dst * dst * dst")
    with pytest.raises(IsaError, match="z3 could not decide whether the constraints of 'load' are satisfiable within 1 s"):
        _check(text)
