"""A corpus of hand-made hostile inputs (issue 42): malformed and hostile HLO kernels, .isa
descriptions, programs, command lines and .npz inputs. Each is run through its command line
in-process and must end with exit status 2 and one clean message (located as file:line:col
where the input has lines), never a traceback, a crash report, a hang or an output written
over an input."""
from __future__ import annotations

import contextlib
import io
import math
import pathlib
import shutil
import zipfile

import pytest

from runtime_skeleton.cli_util import run_cli
from tests.test_isa_errors import HEAD, LOAD

ROOT = pathlib.Path(__file__).resolve().parent.parent

H = """HloModule m, entry_computation_layout={(s8[16,16]{1,0}, s8[16,16]{1,0}, s32[16,16]{1,0})->s32[16,16]{1,0}}

ENTRY main {
  a = s8[16,16]{1,0} parameter(0)
  b = s8[16,16]{1,0} parameter(1)
  d = s32[16,16]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c = s32[16,16]{1,0} parameter(2)
  ROOT r = s32[16,16]{1,0} add(d, c)
}
"""
P = "HloModule m\n\nENTRY main {\n  x = f32[4,8]{1,0} parameter(0)\n"


def h(old: str, new: str) -> str:
    """H with ``old`` replaced."""
    assert old in H, old
    return H.replace(old, new, 1)


def body(*lines: str) -> str:
    """A kernel of one f32[4,8] parameter ``x`` and these instructions."""
    return P + "".join("  " + ln + "\n" for ln in lines) + "}\n"


HLO = [
 ("empty", ""),
 ("only-header", "HloModule m\n"),
 ("unknown-op", h("add(d, c)", "frobnicate(d, c)")),
 ("custom-call", h("add(d, c)", "custom-call(d, c), custom_call_target=\"foo\"")),
 ("add-arity", h("add(d, c)", "add(d)")),
 ("add-shape-mismatch", h("ROOT r = s32[16,16]{1,0} add(d, c)", "ROOT r = s32[16,16]{1,0} add(d, a)")),
 ("undefined-operand", h("add(d, c)", "add(d, zz)")),
 ("duplicate-name", h("c = s32[16,16]{1,0} parameter(2)", "d = s32[16,16]{1,0} parameter(2)")),
 ("two-roots", body("ROOT y = f32[4,8]{1,0} negate(x)", "ROOT z = f32[4,8]{1,0} negate(y)")),
 ("bad-dtype", body("ROOT y = f33[4,8]{1,0} negate(x)")),
 ("negative-dim", body("ROOT y = f32[-4,8]{1,0} negate(x)")),
 ("layout-repeat", body("ROOT y = f32[4,8]{1,1} negate(x)")),
 ("layout-rank", body("ROOT y = f32[4,8]{2,1,0} negate(x)")),
 ("declared-type-wrong", body("ROOT y = f32[8,4]{1,0} negate(x)")),
 ("dot-contract-size", body("w = f32[4,8]{1,0} parameter(1)", "ROOT y = f32[4,4]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}")),
 ("dot-no-dims", body("ROOT y = f32[4,4]{1,0} dot(x, x)")),
 ("dot-dim-out-of-range", body("ROOT y = f32[4,4]{1,0} dot(x, x), lhs_contracting_dims={5}, rhs_contracting_dims={1}")),
 ("param-gap", body("w = f32[4,8]{1,0} parameter(3)", "ROOT y = f32[4,8]{1,0} add(x, w)")),
 ("param-repeat", body("w = f32[4,8]{1,0} parameter(0)", "ROOT y = f32[4,8]{1,0} add(x, w)")),
 ("slice-out-of-bounds", body("ROOT y = f32[4,8]{1,0} slice(x), slice={[0:4], [4:12]}")),
 ("slice-stride-zero", body("ROOT y = f32[4,4]{1,0} slice(x), slice={[0:4], [0:8:0]}")),
 ("slice-rank", body("ROOT y = f32[4]{0} slice(x), slice={[0:4]}")),
 ("reshape-size", body("ROOT y = f32[5,8]{1,0} reshape(x)")),
 ("broadcast-dims", body("ROOT y = f32[2,4,8]{2,1,0} broadcast(x), dimensions={0,1}")),
 ("broadcast-dim-range", body("ROOT y = f32[2,4,8]{2,1,0} broadcast(x), dimensions={1,7}")),
 ("transpose-perm", body("ROOT y = f32[8,4]{1,0} transpose(x), dimensions={0,0}")),
 ("transpose-no-dims", body("ROOT y = f32[8,4]{1,0} transpose(x)")),
 ("concat-mismatch", body("w = f32[4,3]{1,0} parameter(1)", "ROOT y = f32[8,8]{1,0} concatenate(x, w), dimensions={0}")),
 ("concat-no-dim", body("ROOT y = f32[8,8]{1,0} concatenate(x, x)")),
 ("convert-bad-type", body("ROOT y = q8[4,8]{1,0} convert(x)")),
 ("constant-count", "HloModule m\n\nENTRY main {\n  ROOT c = f32[3]{0} constant({1, 2})\n}\n"),
 ("constant-text", "HloModule m\n\nENTRY main {\n  ROOT c = f32[2]{0} constant({1, banana})\n}\n"),
 ("constant-range", "HloModule m\n\nENTRY main {\n  ROOT c = s8[2]{0} constant({1, 300})\n}\n"),
 ("compare-no-direction", body("ROOT y = pred[4,8]{1,0} compare(x, x)")),
 ("compare-bad-direction", body("ROOT y = pred[4,8]{1,0} compare(x, x), direction=SIDEWAYS")),
 ("reduce-no-apply", body("z = f32[] constant(0)", "ROOT y = f32[4]{0} reduce(x, z), dimensions={1}")),
 ("reduce-unknown-apply", body("z = f32[] constant(0)", "ROOT y = f32[4]{0} reduce(x, z), dimensions={1}, to_apply=nosuch")),
 ("call-self", "HloModule m\n\nf {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), to_apply=f\n}\n\nENTRY main {\n  x = f32[] parameter(0)\n  ROOT y = f32[] call(x), to_apply=f\n}\n"),
 ("iota-no-dim", "HloModule m\n\nENTRY main {\n  ROOT i = s32[4,8]{1,0} iota()\n}\n"),
 ("pad-config", body("z = f32[] constant(0)", "ROOT y = f32[6,8]{1,0} pad(x, z), padding=1_1")),
 ("select-shape", body("p = pred[4]{0} parameter(1)", "ROOT y = f32[4,8]{1,0} select(p, x, x)")),
 ("bitcast-size", body("ROOT y = f64[4,8]{1,0} bitcast-convert(x)")),
 ("entry-layout-params", h("(s8[16,16]{1,0}, s8[16,16]{1,0}, s32[16,16]{1,0})", "(s8[16,16]{1,0}, s8[16,16]{1,0})")),
 ("entry-layout-result", h("->s32[16,16]{1,0}}", "->s8[16,16]{1,0}}")),
 ("unterminated", H[:-3]),
 ("unbalanced-paren", h("add(d, c)", "add((d, c)")),
 ("nul-bytes", H.replace("add", "a\0dd")),
 ("long-token", body("ROOT y = f32[4,8]{1,0} negate(" + "x" * 100000 + ")")),
 ("huge-literal", body("ROOT y = f32[4,8]{1,0} slice(x), slice={[0:4], [0:" + "9" * 40 + "]}")),
 ("deep-tuple", "HloModule m\n\nENTRY main {\n  ROOT p = " + "(" * 2000 + "f32[]" + ")" * 2000 + " parameter(0)\n}\n"),
 ("tuple-index-range", "HloModule m\n\nENTRY main {\n  p = (f32[], f32[]) parameter(0)\n  ROOT g = f32[] get-tuple-element(p), index=5\n}\n"),
 ("missing-equals", h("ROOT r = s32[16,16]{1,0} add(d, c)", "ROOT r s32[16,16]{1,0} add(d, c)")),
 ("missing-type", h("ROOT r = s32[16,16]{1,0} add(d, c)", "ROOT r = add(d, c)")),
 ("attr-unknown-value", body("ROOT y = f32[4,8]{1,0} reverse(x), dimensions={9}")),
 ("attr-400-digits", body("ROOT y = f32[4,8]{1,0} reverse(x), dimensions={" + "9" * 400 + "}")),
 ("clamp-shapes", body("lo = f32[4]{0} parameter(1)", "ROOT y = f32[4,8]{1,0} clamp(lo, x, x)")),
]

I = HEAD + "clock 1 GHz\npeak dma bf16 64\nbandwidth d0 -> d1 128\n\n" + LOAD


def i(old: str, new: str) -> str:
    assert old in I, old
    return I.replace(old, new, 1)


ISA = [
 ("empty", ""),
 ("comment-only", "# nothing\n"),
 ("no-target", i("target t\n", "")),
 ("no-hbm", i("hbm d0 : 1 MiB\n", "")),
 ("two-targets", i("target t\n", "target t\ntarget u\n")),
 ("two-hbm", i("hbm d0 : 1 MiB\n", "hbm d0 : 1 MiB\nhbm d9 : 1 MiB\n")),
 ("hbm-zero", i("1 MiB", "0 MiB")),
 ("hbm-unit", i("1 MiB", "1 MiBB")),
 ("buffer-zero-rows", i("x 128", "x 0")),
 ("buffer-bad-dtype", i("bf16[64] x 128", "bf17[64] x 128")),
 ("buffer-dup", i("buffer d1 : bf16[64] x 128\n", "buffer d1 : bf16[64] x 128\nbuffer d1 : bf16[64] x 128\n")),
 ("buffer-named-as-hbm", i("buffer d1 : bf16[64] x 128\n", "buffer d1 : bf16[64] x 128\nbuffer d0 : bf16[64] x 8\n")),
 ("clock-zero", i("clock 1 GHz", "clock 0 GHz")),
 ("clock-unit", i("clock 1 GHz", "clock 1 GHzz")),
 ("clock-twice", i("clock 1 GHz", "clock 1 GHz\nclock 2 GHz")),
 ("clock-huge", i("clock 1 GHz", "clock 1e999 GHz")),
 ("peak-zero", i("peak dma bf16 64", "peak dma bf16 0")),
 ("peak-unknown-engine", i("peak dma bf16 64", "peak mxu bf16 64")),
 ("peak-twice", i("peak dma bf16 64", "peak dma bf16 64\npeak dma bf16 32")),
 ("bandwidth-zero", i("bandwidth d0 -> d1 128", "bandwidth d0 -> d1 0")),
 ("bandwidth-unknown", i("bandwidth d0 -> d1 128", "bandwidth d0 -> d7 128")),
 ("bandwidth-twice", i("bandwidth d0 -> d1 128", "bandwidth d0 -> d1 128\nbandwidth d0 -> d1 64")),
 ("no-instructions", I.split("instruction")[0]),
 ("instr-dup", I + I[I.index("instruction"):]),
 ("attr-dup", i("(n ; src, dst)", "(n ; src, src)")),
 ("attr-unused", i("(n ; src, dst)", "(n, k ; src, dst)")),
 ("attr-undeclared-slice", i("d0[src : n * 128]", "d0[src : m * 128]")),
 ("unknown-buffer", i("d1[dst : n]", "d5[dst : n]")),
 ("slice-rank", i("d1[dst : n]", "d1[dst : n, 0 : 1]")),
 ("no-out", i("  out y = d1[dst : n]\n", "")),
 ("two-outs", i("  out y = d1[dst : n]\n", "  out y = d1[dst : n]\n  out z = d1[dst : n]\n")),
 ("no-semantics", I[: I.index("  semantics")]),
 ("no-engine", i("  engine dma latency 8 + n\n", "")),
 ("where-not-condition", i("where 1 <= n <= 128", "where n + 1")),
 ("where-unsat", i("where 1 <= n <= 128", "where n > 200, n < 100")),
 ("latency-bool", i("latency 8 + n", "latency n > 2")),
 ("latency-zero", i("latency 8 + n", "latency 0")),
 ("latency-negative-somewhere", i("latency 8 + n", "latency 100 - n")),
 ("latency-addr", i("latency 8 + n", "latency 8 + src")),
 ("latency-undeclared", i("latency 8 + n", "latency 8 + q")),
 ("div-zero-const", "const Z = 128 / 0\n" + I),
 ("mod-zero-latency", i("latency 8 + n", "latency 8 + n % 0")),
 ("bool-arith", "const Z = true + 1\n" + I),
 ("neg-exponent", "const Z = 2 ** -1\n" + I),
 ("huge-power", "const Z = 9 ** 99999999\n" + I),
 ("long-sum", "const Z = " + "+".join(["1"] * 20000) + "\n" + I),
 ("deep-negation", i("latency 8 + n", "latency " + "-" * 5000 + "n")),
 ("deep-calls", i("where 1 <= n <= 128", "where 1 <= n <= " + "min(128, " * 3000 + "128" + ")" * 3000)),
 ("unknown-function", i("1 <= n <= 128", "1 <= n <= clamp(128)")),
 ("sem-unknown-op", i("bitcast-convert(a)", "frobnicate(a)")),
 ("sem-unsupported-op", i("bitcast-convert(a)", "custom-call(a)")),
 ("sem-param-count", i("  in  x = d0[src : n * 128]\n", "  in  x = d0[src : n * 128]\n  in  w = d0[src : 1]\n")),
 ("sem-param-name", i("x = u8[n * 128] parameter(0)\n    a = u8[n, 64, 2] reshape(x)", "p = u8[n * 128] parameter(0)\n    a = u8[n, 64, 2] reshape(p)")),
 ("sem-dtype", i("x = u8[n * 128] parameter(0)\n    a = u8[n, 64, 2]", "x = s8[n * 128] parameter(0)\n    a = s8[n, 64, 2]")),
 ("sem-addr-attr", i("x = u8[n * 128] parameter(0)", "x = u8[n * 128 + dst - dst] parameter(0)")),
 ("sem-shape-at-some-n", i("out y = d1[dst : n]", "out y = d1[dst : 64]")),
 ("sem-braces-unbalanced", i("bitcast-convert(a)\n  }", "bitcast-convert(a)\n")),
 ("sem-braces-seven-deep", i("semantics {", "semantics { {{{{{{}}}}}}")),
 ("syntax-bad-char", i("where 1 <= n", "where 1 <= n $")),
 ("syntax-missing-colon", i("d0[src : n * 128]", "d0[src n * 128]")),
 ("include-missing", 'include "nosuch.isa"\n' + I),
 ("non-utf8", I.replace("# ", "") + "# caf\udce9\n"),
 ("nul-byte", i("target t", "target t\0")),
 ("huge-int", i("x 128", "x " + "9" * 100)),
 ("huge-buffer", i("x 128", "x " + "9" * 70)),
 ("string-token", i("target t", 'target "t"')),
]

S = (ROOT / "tests/data/gemmini_mac.s").read_text()
LINES = S.splitlines(keepends=True)


def s(old: str, new: str) -> str:
    assert old in S, old
    return S.replace(old, new, 1)


PROG = [
 ("empty", ""),
 ("no-output", "".join(l for l in LINES if not l.startswith(".output"))),
 ("truncated", "".join(LINES[:8])),
 ("partly-written", s("mvout_acc32 rows=16", "mvout_acc32 rows=8")),
 ("wrong-target", s(".target gemmini", ".target amx")),
 ("target-no-name", s(".target gemmini", ".target")),
 ("unknown-directive", s(".target gemmini", ".targte gemmini")),
 ("unknown-instruction", s("preload_ws k=16", "preload_xx k=16")),
 ("missing-attribute", s("preload_ws k=16 b_addr=16", "preload_ws k=16")),
 ("unknown-attribute", s("preload_ws k=16 b_addr=16", "preload_ws k=16 b_addr=16 zz=1")),
 ("attribute-range", s("mvin rows=16 stride=16 dram=0", "mvin rows=99 stride=16 dram=0")),
 ("attribute-not-int", s("preload_ws k=16", "preload_ws k=sixteen")),
 ("attribute-no-value", s("preload_ws k=16", "preload_ws k=")),
 ("attribute-twice", s("preload_ws k=16 b_addr=16", "preload_ws k=16 k=16 b_addr=16")),
 ("attribute-huge", s("dram=0 sp_addr=0", "dram=" + "9" * 400 + " sp_addr=0")),
 ("attribute-negative", s("dram=0 sp_addr=0", "dram=-5 sp_addr=0")),
 ("slice-outside-hbm", s("mvout_acc32 rows=16 stride=64 acc_addr=0 dram=1536", "mvout_acc32 rows=16 stride=64 acc_addr=0 dram=16777000")),
 ("input-twice", s(".input  arg1 s8[16,16]{1,0} @256", ".input  arg0 s8[16,16]{1,0} @256")),
 ("input-output-same-name", s(".output out0", ".output arg0")),
 ("inputs-overlap", s("@256\n", "@128\n")),
 ("input-outside-hbm", s("@256\n", "@16777200\n")),
 ("input-no-offset", s(" @256\n", "\n")),
 ("input-bad-offset", s("@256\n", "@x\n")),
 ("input-bad-type", s("s8[16,16]{1,0} @256", "s9[16,16]{1,0} @256")),
 ("input-bad-layout", s("s8[16,16]{1,0} @256", "s8[16,16]{1,1} @256")),
 ("input-negative-dim", s("s8[16,16]{1,0} @256", "s8[-16,16]{1,0} @256")),
 ("input-huge", s("s8[16,16]{1,0} @256", "s8[100000000000,16]{1,0} @256")),
 ("input-tuple", s("s8[16,16]{1,0} @256", "(s8[16,16], s8[2]) @256")),
 ("directive-in-loop", s("mvin rows=16 stride=16 dram=0 sp_addr=0\n", ".loop i 0 2\n.input  arg9 s8[2] @4000\n.endloop\n")),
 ("loop-no-end", s("mvin rows=16 stride=16 dram=0 sp_addr=0\n", ".loop i 0 2\nmvin rows=16 stride=16 dram=0 sp_addr=0\n")),
 ("endloop-no-loop", s("mvin rows=16 stride=16 dram=0 sp_addr=0\n", ".endloop\n")),
 ("loop-bad-bound", s("mvin rows=16 stride=16 dram=0 sp_addr=0\n", ".loop i 0 two\n.endloop\n")),
 ("loop-args", s("mvin rows=16 stride=16 dram=0 sp_addr=0\n", ".loop i 0\n.endloop\n")),
 ("loop-var-reused", s("mvin rows=16 stride=16 dram=0 sp_addr=0\n", ".loop i 0 2\n.loop i 0 2\n.endloop\n.endloop\n")),
 ("loop-trips-1e9", s("mvin rows=16 stride=16 dram=0 sp_addr=0\n", ".loop i 0 1000000000\n.endloop\n")),
 ("loop-trips-1e400", s("mvin rows=16 stride=16 dram=0 sp_addr=0\n", ".loop i 0 1" + "0" * 400 + "\n.endloop\n")),
 ("loop-nested-product", s("mvin rows=16 stride=16 dram=0 sp_addr=0\n", ".loop i 0 100000\n.loop j 0 100000\n.endloop\n.endloop\n")),
 ("affine-unknown-var", s("dram=0 sp_addr=0", "dram=16*k sp_addr=0")),
 ("const-bad-hex", ".const @4096 0g\n" + S),
 ("const-odd-hex", ".const @4096 abc\n" + S),
 ("const-missing-npy", ".const @4096 nosuch.npy\n" + S),
 ("const-outside-hbm", ".const @16777215 00112233\n" + S),
 ("non-utf8", S + "# caf\udce9\n"),
 ("nul-byte", s("preload_ws", "preload\0ws")),
 ("long-token", s("preload_ws", "p" * 100000)),
 ("binary-junk", "\udcff\udcfe\x00\x01" * 50),
 ("only-comments", "# nothing here\n"),
]


# command lines of `python -m generated.gemmini` (K: the kernel file, P: a program, N: an npz)
ARGS = [
 ("compile-timeout-nan", ["compile", "K", "-o", "out.s", "--timeout", "nan"]),
 ("compile-timeout-negative", ["compile", "K", "-o", "out.s", "--timeout", "-1"]),
 ("compile-timeout-text", ["compile", "K", "-o", "out.s", "--timeout", "soon"]),
 ("compile-patience-nan", ["compile", "K", "-o", "out.s", "--patience", "nan"]),
 ("compile-jobs-zero", ["compile", "K", "-o", "out.s", "--jobs", "0"]),
 ("compile-onto-kernel", ["compile", "K", "-o", "K"]),
 ("compile-json-onto-output", ["compile", "K", "-o", "out.s", "--json", "out.s"]),
 ("compile-missing-kernel", ["compile", "nosuch.hlo", "-o", "out.s"]),
 ("compile-directory", ["compile", ".", "-o", "out.s"]),
 ("compile-no-output", ["compile", "K"]),
 ("run-random-negative", ["run", "P", "--random", "-3", "-o", "o.npz"]),
 ("run-random-text", ["run", "P", "--random", "x", "-o", "o.npz"]),
 ("run-no-inputs", ["run", "P", "-o", "o.npz"]),
 ("run-onto-program", ["run", "P", "--random", "0", "-o", "P"]),
 ("run-trace-onto-program", ["run", "P", "--random", "0", "-o", "o.npz", "--trace", "P"]),
 ("run-inputs-not-npz", ["run", "P", "--inputs", "K", "-o", "o.npz"]),
 ("run-inputs-onto-output", ["run", "P", "--inputs", "N", "-o", "N"]),
 ("fuzz-n-negative", ["fuzz", "--n", "-1"]),
 ("fuzz-unknown-op", ["fuzz", "--n", "1", "--ops", "frobnicate"]),
 ("unknown-command", ["frobnicate"]),
]


def _npy(header: str, payload: bytes = b"") -> bytes:
    header += " " * (63 - len(header) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + payload


def _zip(members: dict) -> bytes:
    f = io.BytesIO()
    with zipfile.ZipFile(f, "w") as z:
        for k, v in members.items():
            z.writestr(k, v)
    return f.getvalue()


def _arr(shape: tuple[int, ...], descr: str = "<i4", fill: bytes = b"\0") -> bytes:
    n = math.prod(shape) * int(descr[-1])
    return _npy(f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple(shape)}, }}", fill * n)


# inputs for a kernel of one s32[16] parameter (`python -m runtime_skeleton.reference`)
NPZ = [
 ("empty-file", b""),
 ("not-a-zip", b"hello"),
 ("a-npy", _arr((16,))),
 ("truncated-zip", _zip({"arg0.npy": _arr((16,))})[:40]),
 ("missing-arg0", _zip({"arg1.npy": _arr((16,))})),
 ("extra-arg", _zip({"arg0.npy": _arr((16,)), "arg1.npy": _arr((16,))})),
 ("wrong-shape", _zip({"arg0.npy": _arr((4, 4))})),
 ("header-claims-1e11", _zip({"arg0.npy": _npy("{'descr': '<i4', 'fortran_order': False, 'shape': (100000000000,), }", bytes(16))})),
 ("pickled-objects", _zip({"arg0.npy": _npy("{'descr': '|O', 'fortran_order': False, 'shape': (16,), }", b"\x80\x04N.")})),
 ("bad-header", _zip({"arg0.npy": b"\x93NUMPY\x01\x00\x10\x00{not a dict}   \n"})),
 ("bad-magic", _zip({"arg0.npy": b"NOTNUMPY" + bytes(64)})),
 ("short-data", _zip({"arg0.npy": _npy("{'descr': '<i4', 'fortran_order': False, 'shape': (16,), }", bytes(8))})),
 ("lossy-floats", _zip({"arg0.npy": _npy("{'descr': '<f8', 'fortran_order': False, 'shape': (16,), }", bytes.fromhex("000000000000e03f") * 16)})),
 ("out-of-range-int", _zip({"arg0.npy": _npy("{'descr': '<i8', 'fortran_order': False, 'shape': (16,), }", (2**40).to_bytes(8, "little") * 16)})),
]

HLO += [
 ("two-entries", H + "\nENTRY other {\n  ROOT z = f32[] parameter(0)\n}\n"),
 ("use-before-def", body("ROOT y = f32[4,8]{1,0} add(x, w)", "w = f32[4,8]{1,0} negate(x)")),
 ("unterminated-string", h("add(d, c)", "add(d, c), metadata={op_name=\"foo}")),
 ("unterminated-attr", h("add(d, c)", "add(d, c), metadata={op_name=\"foo\"")),
 ("while-op", body("ROOT y = f32[4,8]{1,0} while(x), condition=c, body=b")),
]

EXPECT_HLO = {
    'empty': ('1:1', 'expected a computation or an instruction, found end of input'),
    'only-header': ('2:1', 'expected a computation or an instruction, found end of input'),
    'unknown-op': ('8:28', "unknown HLO op 'frobnicate'"),
    'custom-call': ('8:28', "HLO op 'custom-call' is not supported by actgen"),
    'add-arity': ('8:28', "'add' takes 2 operands, got 1"),
    'add-shape-mismatch': ('8:28', "operands of 'add' must have the same type, got s32[16,16] and s8[16,16"),
    'undefined-operand': ('8:35', "undefined operand 'zz'"),
    'duplicate-name': ('7:3', "duplicate instruction name 'd'"),
    'two-roots': ('6:3', "more than one ROOT in computation 'main'"),
    'bad-dtype': ('5:12', "unknown element type 'f33'"),
    'negative-dim': ('5:16', 'dimension size -4 is negative'),
    'layout-repeat': ('5:20', 'layout {1,1} is not a permutation of the 2 dimensions of its shape'),
    'layout-rank': ('5:20', 'layout {2,1,0} is not a permutation of the 2 dimensions of its shape'),
    'declared-type-wrong': ('5:12', "type mismatch for 'y': declared f32[8,4] but negate(f32[4,8]) gives f3"),
    'dot-contract-size': ('6:26', "'dot' contracting dimensions differ in size: lhs dimension 1 is 8, rhs"),
    'dot-no-dims': ('5:12', "type mismatch for 'y': declared f32[4,4] but dot(f32[4,8], f32[4,8]) g"),
    'dot-dim-out-of-range': ('5:26', "lhs_contracting_dims of 'dot' has dimension 5, out of range for rank 2"),
    'param-gap': ('5:31', "parameter number 3 is out of range: computation 'main' has 2 parameter"),
    'param-repeat': ('5:31', "duplicate parameter number 0 in computation 'main'"),
    'slice-out-of-bounds': ('5:26', "'slice' dimension 1: [4:12:1] is invalid for size 8"),
    'slice-stride-zero': ('5:26', "'slice' dimension 1: [0:8:0] is invalid for size 8"),
    'slice-rank': ('5:22', "'slice' needs one [start:limit:stride] per dimension (2), got 1"),
    'reshape-size': ('5:26', "'reshape' cannot change the element count: f32[4,8] has 32, [5, 8] has"),
    'broadcast-dims': ('5:30', "'broadcast' operand dimension 0 (size 4) does not match output dimensi"),
    'broadcast-dim-range': ('5:30', "dimensions of 'broadcast' has dimension 7, out of range for rank 3"),
    'transpose-perm': ('5:26', "dimensions of 'transpose' repeats a dimension: {0,0}"),
    'transpose-no-dims': ('5:26', "'transpose' needs attribute 'dimensions'"),
    'concat-mismatch': ('6:26', "'concatenate' along dimension 0: f32[4,3] does not match f32[4,8]"),
    'concat-no-dim': ('5:26', "'concatenate' needs attribute 'dimensions'"),
    'convert-bad-type': ('5:12', "unknown element type 'q8'"),
    'constant-count': ('4:31', 'constant has 2 elements but f32[3]{0} needs 3'),
    'constant-text': ('4:35', "expected a literal value, found 'banana'"),
    'constant-range': ('4:34', 'literal 300 is out of range for s8'),
    'compare-no-direction': ('5:27', "'compare' needs attribute 'direction'"),
    'compare-bad-direction': ('5:52', "unknown comparison direction 'SIDEWAYS' (expected one of EQ, GE, GT, L"),
    'reduce-no-apply': ('6:22', "'reduce' needs attribute 'to_apply'"),
    'reduce-unknown-apply': ('6:61', "unknown computation 'nosuch' in to_apply"),
    'call-self': ('5:36', "computation 'f' calls itself (recursion is not allowed)"),
    'iota-no-dim': ('4:26', "'iota' needs attribute 'iota_dimension'"),
    'pad-config': ('6:26', "'pad' needs one lo_hi[_interior] per dimension (2), got 1"),
    'select-shape': ('6:26', "the predicate of 'select' must have the branches' shape [4, 8], got [4"),
    'bitcast-size': ('5:26', 'bitcast-convert from f32 to f64 needs a last dimension of size 2, got'),
    'entry-layout-params': ('1:39', 'entry_computation_layout (s8[16,16], s8[16,16]) -> s32[16,16] does not'),
    'entry-layout-result': ('1:39', 'entry_computation_layout (s8[16,16], s8[16,16], s32[16,16]) -> s8[16,1'),
    'unterminated': ('3:12', "unterminated '{': computation 'main' is never closed"),
    'unbalanced-paren': ('8:33', "expected a type, found 'd'"),
    'nul-bytes': ('8:28', "unknown HLO op 'a'"),
    'long-token': ('5:33', "undefined operand 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
    'huge-literal': ('5:26', "'slice' dimension 1: [0:9999999999999999999999999999999999999999:1] is"),
    'deep-tuple': (None, 'input is nested too deeply'),  # where depends on the stack's depth
    'tuple-index-range': ('5:18', "'get-tuple-element' index 5 is out of range for (f32[], f32[])"),
    'missing-equals': ('8:10', "expected '=' after instruction name 'r', found 's32'"),
    'missing-type': ('8:12', "expected a type, found 'add'"),
    'attr-unknown-value': ('5:26', "dimensions of 'reverse' has dimension 9, out of range for rank 2"),
    'attr-400-digits': ('5:50', "integer dimension number does not fit in int64"),
    'clamp-shapes': ('6:26', "'clamp' bounds must be scalars or have the operand's type f32[4,8], go"),
    'two-entries': ('11:1', 'more than one ENTRY computation'),
    'use-before-def': ('5:33', "operand 'w' is used before it is defined"),
    'unterminated-string': ('8:57', 'unterminated string'),
    'unterminated-attr': ('3:12', "unterminated '{': computation 'main' is never closed"),
    'while-op': ('5:26', "HLO op 'while' is not supported by actgen"),
}
EXPECT_ISA = {
    'empty': ('1:1', "missing 'target NAME' declaration"),
    'comment-only': ('1:1', "missing 'target NAME' declaration"),
    'no-target': ('1:1', "missing 'target NAME' declaration"),
    'no-hbm': ('1:1', "missing 'hbm d0 : SIZE' declaration"),
    'two-targets': ('2:1', "target already declared as 't' at "),
    'two-hbm': ('3:1', "hbm already declared as 'd0'"),
    'hbm-zero': ('2:10', 'hbm size must be positive'),
    'hbm-unit': ('2:15', "unexpected 'B'; expected 'bandwidth', 'buffer', 'clock', 'const', 'hbm"),
    'buffer-zero-rows': ('3:24', 'buffer dimension must be positive, got 0'),
    'buffer-bad-dtype': ('3:13', "unexpected 'bf17'; expected an element type"),
    'buffer-dup': ('4:8', "buffer 'd1' is already declared as a buffer"),
    'buffer-named-as-hbm': ('4:8', "buffer 'd0' is already declared as a buffer"),
    'clock-zero': ('4:7', 'the clock must be a positive number, got 0'),
    'clock-unit': ('4:12', "unexpected 'z'; expected 'bandwidth', 'buffer', 'clock', 'const', 'hbm"),
    'clock-twice': ('5:1', 'the clock is declared twice (first at '),
    'clock-huge': ('4:7', 'the clock must be a positive number, got 1e999'),
    'peak-zero': ('5:15', 'a peak must be a positive number, got 0'),
    'peak-unknown-engine': ('5:1', "peak names engine 'mxu', which no instruction uses (engines: dma)"),
    'peak-twice': ('6:1', "a second peak for engine 'dma' and bf16 (first at "),
    'bandwidth-zero': ('6:20', 'a bandwidth must be a positive number, got 0'),
    'bandwidth-unknown': ('6:1', "bandwidth names unknown buffer 'd7'"),
    'bandwidth-twice': ('7:1', 'a second bandwidth from d0 to d1 (first at '),
    'no-instructions': ('1:1', "target 't' declares no instructions"),
    'instr-dup': ('18:13', "instruction 'load' is already declared as an instruction"),
    'attr-dup': ('8:27', "attribute 'src' declared twice in 'load'"),
    'attr-unused': ('8:21', "attribute 'k' of 'load' is declared but never used"),
    'attr-undeclared-slice': ('9:20', "'m' is not an attribute of 'load' nor a constant (attributes: n, src,"),
    'unknown-buffer': ('10:3', "unknown buffer 'd5' (declared: d0, d1)"),
    'slice-rank': ('10:3', "buffer 'd1' has 1 access dimension(s) but the slice gives 2 range(s)"),
    'no-out': ('8:13', "instruction 'load' has no 'out' slice"),
    'two-outs': ('11:3', "instruction 'load' has a second output; an instruction writes exactly"),
    'no-semantics': ('8:13', "instruction 'load' has no semantics block"),
    'no-engine': ('8:13', "instruction 'load' has no 'engine NAME latency EXPR' clause"),
    'where-not-condition': ('11:11', "a 'where' clause of 'load' must be a condition (such as 'n <= 16'), no"),
    'where-unsat': ('11:9', "constraints of 'load' are unsatisfiable ((n > 200), with every slice i"),
    'latency-bool': ('12:22', "the latency of 'load' must be an integer, not '(n > 2)'"),
    'latency-zero': ('12:22', "the latency of 'load' must be at least 1 cycle; it is 0"),
    'latency-negative-somewhere': ('12:26', "the latency of 'load' must be at least 1 cycle; it is 0 at n=100"),
    'latency-addr': ('12:24', "latency may only use computational attributes; 'src' is an addressing"),
    'latency-undeclared': ('12:26', "'q' is not an attribute of 'load' nor a constant (attributes: n, src,"),
    'div-zero-const': ('1:15', "division by zero in '(128 / 0)'"),
    'mod-zero-latency': ('12:28', "division by zero in '(n % 0)'"),
    'bool-arith': ('1:11', "'+' needs an integer, got 'true'"),
    'neg-exponent': ('1:11', "'**' needs a non-negative exponent, got -1 (the result would not be an"),
    'huge-power': ('1:11', '9 ** 99999999 has more than 256 bits'),
    'long-sum': ('1:11', 'expression nested 20001 levels deep (each operator and each term of a'),
    'deep-negation': ('12:22', 'expression nested 5001 levels deep (each operator and each term of a c'),
    'deep-calls': ('11:9', 'expression nested 3004 levels deep (each operator and each term of a c'),
    'unknown-function': ('11:19', "unknown function 'clamp' (available: min, max)"),
    'sem-unknown-op': ('16:26', "unknown HLO op 'frobnicate'"),
    'sem-unsupported-op': ('16:26', "HLO op 'custom-call' is not supported by actgen"),
    'sem-param-count': ('14:14', "semantics of 'load' has 1 parameter(s) but the instruction declares 2"),
    'sem-param-name': ('14:5', "parameter 'p' of the semantics should be named 'x' like the slice it r"),
    'sem-dtype': ('14:5', "'x' is s8 in the semantics but slice d0[src : (n * 128)] holds u8"),
    'sem-addr-attr': ('14:22', "semantics may only use computational attributes (α); 'dst' is an addre"),
    'sem-shape-at-some-n': ('16:10', "'y' is bf16[1,64] in the semantics but slice d1[dst : 64] is bf16[64,6"),
    'sem-braces-unbalanced': ('13:13', "unbalanced '{' in semantics block"),
    'sem-braces-seven-deep': ('13:13', "braces nest 7 levels deep in this semantics block; at most 6"),
    'syntax-bad-char': ('11:16', "unexpected character '$'"),
    'syntax-missing-colon': ('9:18', "unexpected 'n'; expected '(', ')', '*', '/' or '%', '**', '+' or '-',"),
    'include-missing': ('1:1', "cannot include 'nosuch.isa': no such file"),
    'non-utf8': ('18:6', 'file is not valid UTF-8'),
    'nul-byte': ('1:9', "unexpected character '\\x00'"),
    'huge-int': ('3:24', "integer literal of 100 characters: more than 256 bits"),
    'huge-buffer': ('3:1', "buffer 'd1' of about 10^72 bytes; a buffer holds at most 4 GiB (the si"),
    'string-token': ('1:8', 'unexpected \'"t"\'; expected a name'),
}
EXPECT_S = {
    'empty': ('1:1', "the program declares no '.output': it computes nothing to write"),
    'no-output': ('1:1', "the program declares no '.output': it computes nothing to write"),
    'truncated': ('5:1', 'output out0 is never written: no instruction, input or constant sets i'),
    'partly-written': ('5:1', 'output out0 is only partly written: no instruction, input or constant'),
    'wrong-target': ('1:9', "program is for target 'amx', not 'gemmini'"),
    'target-no-name': ('1:1', "'.target' takes one name"),
    'unknown-directive': ('1:1', "unknown directive '.targte' (expected .target, .input, .output or .con"),
    'unknown-instruction': ('8:1', "unknown instruction 'preload_xx' for target gemmini"),
    'missing-attribute': ('8:1', "preload_ws is missing attribute 'b_addr'"),
    'unknown-attribute': ('8:1', "preload_ws has no attribute 'zz' (attributes: k, b_addr)"),
    'attribute-range': ('6:1', 'mvin: rows=99 is outside its range [1, 16]'),
    'attribute-not-int': ('8:14', "attribute 'k' needs an integer value, got 'sixteen'"),
    'attribute-no-value': ('8:14', "attribute 'k' needs an integer value, got ''"),
    'attribute-twice': ('8:17', "attribute 'k' given twice"),
    'attribute-huge': ('6:1', 'mvin: dram=99999999999999999999999999999999999999999999999999999999999'),
    'attribute-negative': ('6:1', 'mvin: dram=-5 is outside its range [0, 16777200]'),
    'slice-outside-hbm': ('11:1', 'mvout_acc32: slice d0[16777000 : 1024] is outside the buffer (size 167'),
    'input-twice': ('3:9', "'arg0' is declared twice (each .input and .output needs a name of its"),
    'input-output-same-name': ('5:9', "'arg0' is declared twice (each .input and .output needs a name of its"),
    'inputs-overlap': ('3:29', "input 'arg1' at bytes [128, 384) overlaps input 'arg0' at [0, 256)"),
    'input-outside-hbm': ('3:1', 'input arg1 (256 bytes at @16777200) does not fit in HBM (16777216 byte'),
    'input-no-offset': ('3:1', "'.input' takes: NAME TYPE @OFFSET"),
    'input-bad-offset': ('3:29', "bad HBM offset '@x'"),
    'input-bad-type': ('3:14', "bad tensor type 's9[16,16]{1,0}': unknown element type 's9'"),
    'input-bad-layout': ('3:14', "bad tensor type 's8[16,16]{1,1}': layout {1,1} is not a permutation of"),
    'input-negative-dim': ('3:14', "bad tensor type 's8[-16,16]{1,0}': dimension size -16 is negative"),
    'input-huge': ('3:14', "'arg1' (s8[100000000000,16]{1,0}) takes 1.6e+12 bytes, more than any target's HBM"),
    'input-tuple': ('3:1', "'.input' takes: NAME TYPE @OFFSET"),
    'directive-in-loop': ('7:1', "'.input' inside a loop (directives come before or after loops)"),
    'loop-no-end': ('6:1', "'.loop' without its '.endloop'"),
    'endloop-no-loop': ('6:1', "'.endloop' without a '.loop'"),
    'loop-bad-bound': ('6:11', "loop bound must be an integer, got 'two'"),
    'loop-args': ('6:1', "'.loop' takes: VAR START STOP"),
    'loop-var-reused': ('7:7', "loop variable 'i' is already the variable of an enclosing loop"),
    'loop-trips-1e9': ('6:1', 'this loop runs 1000000000 steps (instructions and loop trips); the sim'),
    'loop-trips-1e400': ('6:1', 'this loop runs about 10^400 steps (instructions and loop trips); the s'),
    'loop-nested-product': ('6:1', 'this loop runs 10000100000 steps (instructions and loop trips); the si'),
    'affine-unknown-var': ('6:29', "attribute 'dram' needs an integer value, got '16*k'"),
    'const-bad-hex': ('1:14', 'constant data must be hex bytes or a .npy path'),
    'const-odd-hex': ('1:14', 'constant data must be hex bytes or a .npy path'),
    'const-missing-npy': ('1:14', "cannot read constant file "),
    'const-outside-hbm': ('1:1', 'constant (4 bytes at @16777215) does not fit in HBM (16777216 bytes)'),
    'non-utf8': ('12:6', 'file is not valid UTF-8'),
    'nul-byte': ('8:8', "unexpected character '\\x00'"),
    'long-token': ('8:1', "unknown instruction 'ppppppppppppppppppppppppppppppppppppppppppppppppp"),
    'binary-junk': ('1:1', 'file is not valid UTF-8'),
    'only-comments': ('1:1', "the program declares no '.output': it computes nothing to write"),
}

EXPECT_ARGS = {'compile-timeout-nan': 'argument --timeout: must be a finite number, got nan', 'compile-timeout-negative': 'argument --timeout: must be > 0, got -1', 'compile-timeout-text': "argument --timeout: invalid float value: 'soon'", 'compile-patience-nan': 'argument --patience: must be a finite number, got nan', 'compile-jobs-zero': 'argument --jobs: must be >= 1, got 0', 'compile-onto-kernel': 'k.hlo: refusing to overwrite it', 'compile-json-onto-output': 'is the file -o writes: refusing to overwrite it', 'compile-missing-kernel': 'nosuch.hlo: No such file or directory', 'compile-directory': '.: Is a directory', 'compile-no-output': 'the following arguments are required: -o/--output', 'run-random-negative': 'argument --random: must be >= 0, got -3', 'run-random-text': "argument --random: invalid int value: 'x'", 'run-no-inputs': 'one of the arguments --inputs --random is required', 'run-onto-program': 'p.s: refusing to overwrite it', 'run-trace-onto-program': '--trace', 'run-inputs-not-npz': 'k.hlo: not an .npz archive', 'run-inputs-onto-output': 'n.npz: refusing to overwrite it', 'fuzz-n-negative': 'argument --n: must be >= 0, got -1', 'fuzz-unknown-op': 'unknown fuzzing operator(s) frobnicate', 'unknown-command': "invalid choice: 'frobnicate'"}

EXPECT_NPZ = {'empty-file': 'in.npz: not an .npz archive', 'not-a-zip': 'in.npz: not an .npz archive', 'a-npy': 'in.npz: not an .npz archive', 'truncated-zip': 'in.npz: not an .npz archive', 'missing-arg0': "unexpected input 'arg1' (the kernel has 1 parameters)", 'extra-arg': "unexpected input 'arg1' (the kernel has 1 parameters)", 'wrong-shape': "input 'arg0': expected s32[16], got an array of shape (4,4)", 'header-claims-1e11': "input 'arg0': expected s32[16], got an array of shape (100000000000)", 'pickled-objects': 'not a readable .npz file', 'bad-header': 'not a readable .npz file', 'bad-magic': 'not a readable .npz file', 'short-data': 'not a readable .npz file', 'lossy-floats': "input 'arg0': cannot convert float64 values to s32 exactly", 'out-of-range-int': "input 'arg0': cannot convert int64 values to s32 exactly"}

K16 = """HloModule m, entry_computation_layout={(s32[16]{0})->s32[16]{0}}

ENTRY main {
  p = s32[16]{0} parameter(0)
  ROOT r = s32[16]{0} negate(p)
}
"""


def _run(main, argv) -> tuple[int, str]:  # noqa: ANN001
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            rc = run_cli(main, argv)
        except SystemExit as e:  # argparse's usage errors
            rc = e.code
    return rc, err.getvalue()


def _refused(rc: int, stderr: str, path: pathlib.Path | None, loc: str | None, fragment: str) -> None:
    assert rc == 2, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    last = stderr.strip().splitlines()[-1]
    if loc is not None:
        assert last.startswith(f"{path}:{loc}: "), last
    assert fragment in last, last


def _case_file(tmp_path, name: str, text) -> pathlib.Path:  # noqa: ANN001
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape"))
    return p


@pytest.mark.parametrize("cid,text", HLO, ids=[c[0] for c in HLO])
def test_hostile_kernel(tmp_path, cid, text):
    from runtime_skeleton.hlo.__main__ import main

    p = _case_file(tmp_path, f"{cid}.hlo", text)
    _refused(*_run(main, [str(p)]), p, *EXPECT_HLO[cid])


@pytest.mark.parametrize("cid,text", ISA, ids=[c[0] for c in ISA])
def test_hostile_description(tmp_path, cid, text):
    from generator.cli import main

    p = _case_file(tmp_path, f"{cid}.isa", text)
    _refused(*_run(lambda a: main(a), ["check", str(p)]), p, *EXPECT_ISA[cid])


@pytest.mark.parametrize("cid,text", PROG, ids=[c[0] for c in PROG])
def test_hostile_program(tmp_path, cid, text):
    from generated.gemmini import TARGET
    from runtime_skeleton.backend_cli import main

    p = _case_file(tmp_path, f"{cid}.s", text)
    rc, stderr = _run(lambda a: main(TARGET, a), ["run", str(p), "--random", "0", "-o", str(tmp_path / "o.npz")])
    _refused(rc, stderr, p, *EXPECT_S[cid])
    assert not (tmp_path / "o.npz").exists()  # nothing written for a refused program


@pytest.mark.parametrize("cid,argv", ARGS, ids=[c[0] for c in ARGS])
def test_hostile_command_line(tmp_path, cid, argv):
    import numpy as np

    from generated.gemmini import TARGET
    from runtime_skeleton.backend_cli import main

    shutil.copy(ROOT / "examples/kernels/gemmini_mac.hlo", tmp_path / "k.hlo")
    (tmp_path / "p.s").write_text(S)
    np.savez(tmp_path / "n.npz", arg0=np.zeros((16, 16), np.int8), arg1=np.zeros((16, 16), np.int8),
             arg2=np.zeros((16, 16), np.int32))
    before = {f.name: f.read_bytes() for f in tmp_path.iterdir()}
    names = {"K": "k.hlo", "P": "p.s", "N": "n.npz"}
    argv = [str(tmp_path / names[a]) if a in names else str(tmp_path / a) if a.endswith((".s", ".hlo", ".npz")) else a
            for a in argv]
    with contextlib.chdir(tmp_path):
        _refused(*_run(lambda a: main(TARGET, a), argv), None, None, EXPECT_ARGS[cid])
    assert {f.name: f.read_bytes() for f in tmp_path.iterdir() if f.name in before} == before  # inputs untouched


@pytest.mark.parametrize("cid,data", NPZ, ids=[c[0] for c in NPZ])
def test_hostile_inputs(tmp_path, cid, data):
    from runtime_skeleton.reference.__main__ import main

    (tmp_path / "k.hlo").write_text(K16)
    npz = _case_file(tmp_path, "in.npz", data)
    rc, stderr = _run(main, [str(tmp_path / "k.hlo"), "--inputs", str(npz), "-o", str(tmp_path / "o.npz")])
    _refused(rc, stderr, None, None, EXPECT_NPZ[cid])


def test_the_corpus_holds_200_hostile_cases():
    assert len(HLO) + len(ISA) + len(PROG) + len(ARGS) + len(NPZ) >= 200
