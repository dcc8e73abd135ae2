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
    ("unknown attribute in a native text", LOAD.replace("  semantics {", '  native "memcpy(d1 + {dst}, d0 + {srcx}, 1);"\n  semantics {'),
     9, 3, "'{srcx}' in the native text of 'load' is none of its attributes (n, src, dst)"),
    ("two native texts", LOAD.replace("  semantics {", '  native "a;"\n  native "b;"\n  semantics {'), 10, 3,
     "instruction 'load' has two native clauses"),
    ("native flags twice", 'native_flags "-O2"\nnative_flags "-O3"\n' + LOAD, 5, 1,
     "native_flags is declared twice (first at bad.isa:4:1)"),
    ("a CPU feature that is no cpuinfo flag", 'native_cpu "avx 2"\n' + LOAD, 4, 12,
     "a CPU feature is a /proc/cpuinfo flag"),
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
    # int('010', 0) raised ValueError: an internal error (exit 3)
    ("leading zero in a literal", LOAD.replace("8 + n", "08 + n"), 8, 22,
     "leading zeros are not allowed in integer literals: write 8, not 08"),
    # 'latency 1 / 2' was 0.5 in the checker (z3 crashed on the float); it is floor division, 0
    ("constant quotient in a latency", LOAD.replace("8 + n", "1 / 2"), 8, 24,
     "the latency of 'load' must be at least 1 cycle; it is 0"),
    # a divisor that can be 0 for some allowed attribute value passed; the simulator refused it at run time
    ("division by an attribute that can be 0 in a slice",
     LOAD.replace("(n ; src, dst)", "(n, k ; src, dst)").replace("where 1 <= n <= 128", "where 1 <= n <= 128, 0 <= k <= 40")
     .replace("d1[dst : n]", "d1[dst + 0 * (1 / (k - 20)) : n]"), 6, 27,
     "division by zero in '(1 / (k - 20))' at k=20, which the constraints of 'load' allow; exclude it with a 'where' "
     "clause (such as '(k - 20) != 0')"),
    ("modulo by an attribute that can be 0 in a where clause", LOAD.replace("1 <= n <= 128", "0 <= n <= 128, 64 % n == 0")
     .replace("d1[dst : n]", "d1[dst : n + 1]").replace("d0[src : n * 128]", "d0[src : n * 128 + 1]"), 7, 27,
     "division by zero in '(64 % n)' at n=0"),
    ("division by an attribute that can be 0 in a latency", LOAD.replace("8 + n", "8 + 128 / (n - 64)"), 8, 30,
     "division by zero in '(128 / (n - 64))' at n=64"),
    # braces in a '#' comment used to count when finding the block's end
    ("unterminated comment in semantics", LOAD.replace("parameter(0)", "parameter(0) /* a { brace"), 10, 34,
     "unterminated comment '/*' in semantics block"),
    ("unterminated string in semantics", LOAD.replace("parameter(0)", 'parameter(0), metadata={op_name="a}'), 10, 53,
     "unterminated string in semantics block"),
    # usage in the semantics is read from the parsed HLO, not from words of its text
    ("attribute named like an HLO keyword is not used by it",
     LOAD.replace("(n ; src, dst)", "(n, ROOT ; src, dst)").replace("1 <= n <= 128", "1 <= n <= 128, 0 <= ROOT <= 3"),
     4, 21, "attribute 'ROOT' of 'load' is declared but never used"),
    ("attribute only in a skipped HLO attribute is unused",
     LOAD.replace("(n ; src, dst)", "(n, k ; src, dst)").replace("1 <= n <= 128", "1 <= n <= 128, 0 <= k <= 3")
     .replace("reshape(x)", 'reshape(x), metadata={op_name="k"}'), 4, 21,
     "attribute 'k' of 'load' is declared but never used"),
    ("addressing attribute in another computation of the semantics", LOAD.replace("""  semantics {
    x = u8[n * 128] parameter(0)""", """  semantics {
    f {
      p = u8[dst - dst] parameter(0)
      ROOT q = u8[0] copy(p)
    }
    ENTRY e {
    x = u8[n * 128] parameter(0)""").replace("bitcast-convert(a)\n", "bitcast-convert(a)\n    }\n"), 11, 14,
     "semantics may only use computational attributes (α); 'dst' is an addressing attribute of 'load'"),
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

    with pytest.raises(IsaError, match="include cycle") as info:
        parse_file(tmp_path / "a.isa")
    a, b = tmp_path / "a.isa", tmp_path / "b.isa"
    assert str(info.value) == f"{b}:1:1: include cycle: {a} -> {b} -> {a}"


def test_an_include_cycle_through_the_top_file_is_found_at_its_first_repeat(tmp_path):
    """The file actgen was given was not recorded as being read: including it again read it a
    second time ('target already declared', or a cycle located in sub/../main.isa)."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "cyc.isa").write_text('include "../main.isa"\n')
    (tmp_path / "main.isa").write_text('include "sub/cyc.isa"\n' + HEAD + LOAD)
    r = subprocess.run([sys.executable, "-m", "generator", "check", "main.isa"], capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip() == "sub/cyc.isa:1:1: include cycle: main.isa -> sub/cyc.isa -> main.isa"
    (tmp_path / "sub" / "self.isa").write_text('include "self.isa"\n')
    with pytest.raises(IsaError, match=r"self.isa:1:1: include cycle: \S*self.isa -> \S*self.isa$"):
        from isa_lang.parser import parse_file

        parse_file(tmp_path / "sub" / "self.isa")


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


def test_leading_zero_is_a_located_error_not_a_crash(tmp_path):
    """int('010', 0) raised ValueError (exit 3). A leading zero is refused, as Python refuses
    it, saying what to write; 0 and hexadecimal 0x10 are integers as before."""
    bad = tmp_path / "bad.isa"
    bad.write_text(HEAD.replace("1 MiB", "010 MiB") + LOAD)
    r = subprocess.run([sys.executable, "-m", "generator", "check", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip() == (f"{bad}:2:10: leading zeros are not allowed in integer literals: write 10 "
                                "(or 0x8 if you meant octal), not 010")
    spec = _check(HEAD.replace("1 MiB", "0x1 MiB") + "const Z = 0\nconst H = 0x10\n" + LOAD)
    assert spec.constants == {"Z": 0, "H": 16} and spec.hbm.access_shape == (1 << 20,)


def _generated(tmp_path, text: str):
    """The instruction classes of the backend actgen generates from ``text``."""
    import importlib.util

    from generator.cli import main

    (tmp_path / "t.isa").write_text(text)
    assert main([str(tmp_path / "t.isa"), "-o", str(tmp_path / "pkg")]) == 0
    spec = importlib.util.spec_from_file_location("_isa_errors_pkg", tmp_path / "pkg" / "target.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.TARGET.instructions


def _valid_values(ins, name: str, window: range, fixed: dict[str, int]) -> list[int]:
    """The values of attribute ``name`` the generated backend accepts (its e, and slices inside
    their buffers), the other attributes at ``fixed``."""
    out = []
    for v in window:
        a = {**fixed, name: v}
        try:
            ok = ins.e(a) and all(s >= 0 and n >= 1 and s + n <= 128 for st, ln in ins.h(a) for s, n in zip(st, ln))
        except ZeroDivisionError:
            ok = False
        if ok:
            out.append(v)
    return out


MOV = """instruction mov(k ; a, b)
  in  x = d1[a : 1]
  out y = d1[b : 1]
  where WHERE
  engine dma latency 1
  semantics {
    x = bf16[1 + 0 * k, 64] parameter(0)
    ROOT y = bf16[1, 64] copy(x)
  }
"""


@pytest.mark.parametrize("where", [
    "k == 7 / 2 * 2",                          # constants only: the checker computed 7 / 2 = 3.5, so k in [7,7]
    "k == -7 / 2",                             # floor: -4, not -3
    "k == 7 % -2 + 10",                        # floor modulo of constants: -1
    "7 / k == -2, -4 <= k <= -1",              # z3's div is Euclidean: 7 div -3 = -2, but 7 // -3 = -3
    "-9 <= k <= 9, k != 0, 7 % k == -2",       # z3's mod is never negative; Python's takes the divisor's sign
    "-9 <= k <= 9, k != 0, k % -3 == -1",
    "-20 <= k <= 20, k != 0, (k - 3) / (-k) >= 2",
])
def test_the_checker_divides_as_the_generated_backend(tmp_path, where):
    """Division and modulo are Python's floor division everywhere: the checker's z3 terms
    (runtime_skeleton.symbolic.Z3Algebra) now give exactly what the generated e() computes,
    for constants and for negative divisors, so the derived range is that of the values the
    backend accepts."""
    spec = _check(HEAD + MOV.replace("WHERE", where))
    k = spec.instructions["mov"].comp_attrs[0]
    ins = _generated(tmp_path, HEAD + MOV.replace("WHERE", where))["mov"]
    valid = _valid_values(ins, "k", range(-30, 31), {"a": 0, "b": 0})
    assert valid and (k.lo, k.hi) == (min(valid), max(valid)), (k, valid)


def test_z3_algebra_divides_as_python():
    import itertools

    import z3

    from runtime_skeleton.symbolic import PY, Z3Algebra

    z, (a, b) = Z3Algebra(), z3.Ints("a b")
    for x, y in itertools.product(range(-7, 8), repeat=2):
        if y == 0:
            continue
        for op in ("div", "mod"):
            want = getattr(PY, op)(x, y)
            assert getattr(z, op)(x, y) == want  # two Python integers stay one (7 / 2 was 3.5)
            for lhs, rhs in ((a, y), (x, b), (a, b)):
                term = z3.substitute(getattr(z, op)(lhs, rhs), (a, z3.IntVal(x)), (b, z3.IntVal(y)))
                assert z3.simplify(term).as_long() == want, (op, x, y, lhs, rhs)


def test_a_divisor_that_is_never_zero_passes(tmp_path):
    spec = _check(HEAD + MOV.replace("WHERE", "1 <= k <= 64, 64 % k == 0").replace("latency 1", "latency 64 / k"))
    assert (spec.instructions["mov"].comp_attrs[0].lo, spec.instructions["mov"].comp_attrs[0].hi) == (1, 64)
    # excluded by another clause: the divisor is non-zero wherever the constraints hold
    _check(HEAD + MOV.replace("WHERE", "0 <= k <= 40, k != 20, 1 / (k - 20) >= -1"))


@pytest.mark.parametrize("block", [
    "x = bf16[n, 64] parameter(0)  # a { brace\n    ROOT y = bf16[n, 64] copy(x)",
    "x = bf16[n, 64] parameter(0)  # }}\n    ROOT y = bf16[n, 64] copy(x)  # {",
    "x = bf16[n, 64] parameter(0)  // a } brace\n    ROOT y = bf16[n, 64] copy(x)",
    "x = bf16[n, 64] parameter(0)  /* a {\n { brace */\n    ROOT y = bf16[n, 64] copy(x)",
    'x = bf16[n, 64] parameter(0), metadata={op_name="f}{#;"}\n    ROOT y = bf16[n, 64] copy(x)',
    "x = bf16[n, 64] parameter(0) /* see #3 */;\n    ROOT y = bf16[n, 64] copy(x);",
])
def test_braces_in_comments_and_strings_do_not_count(block):
    """A '{' in a '#' comment made the block 'unbalanced'. Comments (#, //, /* */) and strings
    are skipped when the parser finds the block's end; a '#' inside a string or a '/* */'
    comment is not a comment of its own."""
    text = HEAD + f"""instruction mov(n ; a, b)
  in  x = d1[a : n]
  out y = d1[b : n]
  where 1 <= n <= 64
  engine dma latency 2 + n
  semantics {{
    {block}
  }}
"""
    spec = _check(text)
    assert "#" not in spec.instructions["mov"].semantics.text.replace('"f}{#;"', "").replace("see #3", "")


def test_braces_in_a_comment_do_not_hide_the_nesting_limit():
    text = HEAD + LOAD.replace("semantics {", "semantics { # }\n {{{{{{}}}}}}")
    with pytest.raises(IsaError, match="braces nest 7 levels deep in this semantics block") as info:
        _check(text)
    assert (info.value.loc.line, info.value.loc.col) == (9, 13)


@pytest.mark.parametrize("attr", ["copy", "x", "ROOT", "parameter", "bf16"])
def test_an_addressing_attribute_may_be_named_like_a_word_of_the_semantics(attr):
    """Usage is read from the parsed HLO (the attributes its shapes and attributes use), not
    from the words of its text: an addressing attribute named like an opcode, an instruction
    or a keyword of the block is not 'used in the semantics'."""
    spec = _check(HEAD + LOAD.replace("(n ; src, dst)", f"(n ; src, {attr})").replace("d1[dst", f"d1[{attr}"))
    assert [a.name for a in spec.instructions["load"].addr_attrs] == ["src", attr]
