"""Large GEMMs through the tiling core: Act's six Gemmini GEMM shapes, an int8 MLP
layer (bias + ReLU + int8 saturation), AMX f32 GEMMs and AMX int8 GEMMs (B in
the blocked VNNI layout {1,0:T(16,4)}), compiled with default
settings into loop nests (strips, strided windows, on-chip reduction loops).

Per kernel: compile time (wall), the loop structure chosen, instructions executed,
cycles under the timing model (extrapolated from 2 and 3 outer iterations for large
programs, runtime_skeleton.sim.cost.cycles), the roofline bound T_peak and % of
roofline = 100 * T_peak / cycles; with --verify also whether the program matches the
reference interpreter on random inputs (the simulator executes every instruction:
minutes for the largest shapes).

    python bench/gemm_shapes.py [--only NAME ...] [--verify] [--timeout 60] [--jobs N]
"""
from __future__ import annotations

import argparse
import time

from _common import backend, one_line, print_table, progress

GEMMINI_SHAPES = [(12544, 64, 256), (12544, 256, 64), (784, 1024, 256), (3136, 512, 128), (3136, 128, 512),
                  (512, 512, 512)]


def gemm(dtype: str, out: str, m: int, k: int, n: int) -> str:
    return f"""HloModule gemm_{m}x{k}x{n}
ENTRY main {{
  a = {dtype}[{m},{k}]{{1,0}} parameter(0)
  b = {dtype}[{k},{n}]{{1,0}} parameter(1)
  ROOT d = {out}[{m},{n}]{{1,0}} dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


def mlp_layer(m: int, k: int, n: int) -> str:
    """int8 layer: relu(x.W + b) saturated to int8 (Gemmini's requantize at scale 1)."""
    return f"""HloModule mlp_i8_{m}x{k}x{n}
ENTRY main {{
  x = s8[{m},{k}]{{1,0}} parameter(0)
  w = s8[{k},{n}]{{1,0}} parameter(1)
  b = s32[{n}]{{0}} parameter(2)
  d = s32[{m},{n}]{{1,0}} dot(x, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  bb = s32[{m},{n}]{{1,0}} broadcast(b), dimensions={{1}}
  s = s32[{m},{n}]{{1,0}} add(d, bb)
  lo = s32[] constant(0)
  hi = s32[] constant(127)
  c = s32[{m},{n}]{{1,0}} clamp(lo, s, hi)
  ROOT r = s8[{m},{n}]{{1,0}} convert(c)
}}
"""


def gemm_vnni(m: int, k: int, n: int) -> str:
    """AMX int8: u8 A[m,k] times s8 B given as [n,k] in {1,0:T(16,4)} (oneDNN's blocked
    VNNI weights, as in Act's K1/K2: 16 columns x 4 K values a 64-byte tile row)."""
    return f"""HloModule gemm_u8s8_{m}x{k}x{n}
ENTRY main {{
  a = u8[{m},{k}]{{1,0}} parameter(0)
  b = s8[{n},{k}]{{1,0:T(16,4)}} parameter(1)
  a32 = s32[{m},{k}]{{1,0}} convert(a)
  bt = s8[{k},{n}]{{1,0}} transpose(b), dimensions={{1,0}}
  b32 = s32[{k},{n}]{{1,0}} convert(bt)
  ROOT d = s32[{m},{n}]{{1,0}} dot(a32, b32), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


def kernels() -> list[tuple[str, str, str]]:
    out = [(f"gemm_i8_{m}x{k}x{n}", "gemmini", gemm("s8", "s32", m, k, n)) for m, k, n in GEMMINI_SHAPES]
    out += [("mlp_i8_512x256x128", "gemmini", mlp_layer(512, 256, 128))]
    out += [(f"gemm_f32_{s}x{s}x{s}", "amx", gemm("f32", "f32", s, s, s)) for s in (256,)]
    out += [(f"gemm_u8s8_{m}x{k}x{n}", "amx", gemm_vnni(m, k, n)) for m, k, n in ((256, 256, 256), (512, 512, 512))]
    return out


def measure(target: str, text: str, timeout: float, do_verify: bool, jobs: int = 1) -> dict:
    from runtime_skeleton.compile import CompileError
    from runtime_skeleton.hlo import parse_module
    from runtime_skeleton.program.verify import verify_program
    from runtime_skeleton.sim.cost import cycles
    from runtime_skeleton.sim.roofline import roofline

    be = backend(target)
    t0 = time.perf_counter()
    try:
        res = be.compile_hlo(text, timeout=timeout, jobs=jobs)
    except CompileError as err:
        return {"ok": False, "error": err.message, "wall": time.perf_counter() - t0}
    rec = {"ok": True, "wall": time.perf_counter() - t0, "loops": res.describe_loops() or "straight-line",
           "instructions": res.program.executed()}
    rec["cycles"] = cycles(be.TARGET, res.program)
    t1 = time.perf_counter()
    verify_program(be.TARGET, res.program)  # every instruction over its loops' ranges, not unrolled
    rec["check_seconds"] = time.perf_counter() - t1
    r = roofline(be.TARGET, res.program, kernel=parse_module(text))
    rec["t_peak"] = r.t_peak
    if do_verify:
        t1 = time.perf_counter()
        rec["verify"] = be.verify(res, seeds=(0,))
        rec["verify_seconds"] = time.perf_counter() - t1
    return rec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--only", nargs="+", metavar="NAME", help="kernel names to run (default all)")
    ap.add_argument("--verify", action="store_true", help="also run each program on the simulator")
    ap.add_argument("--timeout", type=float, default=60.0, help="compile timeout, s (default 60, the default)")
    ap.add_argument("--jobs", type=int, default=1, metavar="N", help="compile in N processes (default 1)")
    args = ap.parse_args(argv)
    rows, failed = [], 0
    for name, target, text in kernels():
        if args.only and name not in args.only:
            continue
        progress(f"{name} on {target} ...")
        rec = measure(target, text, args.timeout, args.verify, args.jobs)
        if not rec["ok"]:
            failed += 1
            rows.append([name, target, f"{rec['wall']:.1f}", "", "", "", "", "", "", one_line(rec["error"], 100)])
            continue
        pct = 100 * rec["t_peak"] / rec["cycles"] if rec["t_peak"] and rec["cycles"] else None
        ver = "" if "verify" not in rec else ("ok" if not rec["verify"] else one_line("; ".join(rec["verify"]), 40))
        failed += bool(rec.get("verify"))
        rows.append([name, target, f"{rec['wall']:.1f}", rec["instructions"], rec["cycles"],
                     f"{rec['t_peak']:.0f}" if rec["t_peak"] else "", f"{pct:.1f}" if pct else "",
                     f"{rec['check_seconds']:.2f}", ver, rec["loops"]])
    print_table("Large GEMMs through loop nests (default settings)",
                ["kernel", "target", "compile s", "executed", "cycles", "T_peak", "% roofline", "check s", "verified",
                 "loops"], rows, right={2, 3, 4, 5, 6, 7})
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
