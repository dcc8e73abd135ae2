"""The timing model and the roofline: overlap, dependences, issue order, bytes, the trace,
the CLI summary, and that no program beats its roofline."""
import dataclasses
import json
import pathlib
import random
import re
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generated.amx import TARGET as AMX
from generated.gemmini import TARGET as GEMMINI
from generated.qkv import TARGET as QKV
from runtime_skeleton.backend_cli import main
from runtime_skeleton.hlo import parse_file
from runtime_skeleton.sim import SimError, parse_program, roofline, time_program
from runtime_skeleton.sim.cost import cycles, latency_sum
from runtime_skeleton.sim.machine import _attributes
from runtime_skeleton.program import ConcreteInstr, Program
from runtime_skeleton.sim.roofline import kernel_flops, place

ROOT = pathlib.Path(__file__).resolve().parent.parent
KERNELS = ROOT / "examples" / "kernels"


def _prog(text):
    return parse_program(text, "t.s")


def _times(target, text):
    return [(t.start, t.end) for t in time_program(target, _prog(text)).instrs]


# ---------------------------------------------------------------- the timing rules

LOAD_T4 = "tileloadd rows=16 colsb=64 stride=64 addr=0 t=4\n"  # load engine, 8 + 16 cycles
LOAD_T5 = "tileloadd rows=16 colsb=64 stride=64 addr=1024 t=5\n"
TDP = "tdpbusd m=16 k=16 n=16 dst=0 src0=4 src1=5\n"  # tmul, 16 cycles
STORE_T0 = "tilestored rows=16 colsb=64 stride=64 t=0 addr=4096\n"  # store engine, 24 cycles


def test_independent_instructions_on_different_engines_overlap():
    text = LOAD_T4 + "tilezero t=1\nvzero dst=3\n"
    t = time_program(AMX, _prog(text))
    assert [(i.start, i.end, i.engine) for i in t.instrs] == [(0, 24, "load"), (0, 1, "tmul"), (0, 1, "vec")]
    assert t.cycles == 24 < latency_sum(AMX, _prog(text)) == 26


def test_dependent_instructions_serialize():
    text = LOAD_T4 + TDP + STORE_T0  # load -> tmul -> store, each waiting for the one before
    assert _times(AMX, text) == [(0, 24), (24, 40), (40, 64)]
    assert cycles(AMX, _prog(text)) == latency_sum(AMX, _prog(text)) == 64


def test_hbm_raw_dependence_through_a_store():
    """A load of bytes a store writes waits for the store; one of other bytes does not."""
    text = STORE_T0 + "tileloadd rows=1 colsb=4 stride=4 addr=4100 t=6\ntileloadd rows=1 colsb=4 stride=4 addr=0 t=7\n"
    assert _times(AMX, text) == [(0, 24), (24, 33), (33, 42)]
    text = STORE_T0 + "tileloadd rows=1 colsb=4 stride=4 addr=8192 t=6\n"
    assert _times(AMX, text) == [(0, 24), (0, 9)]


def test_war_an_overwrite_waits_for_the_earlier_reader():
    # tdpbusd reads tile 4 during [24, 40); reloading tile 4 must wait for it, though the
    # load engine is free at 24. Loading tile 6 instead need not wait.
    assert _times(AMX, LOAD_T5 + TDP + LOAD_T4) == [(0, 24), (24, 40), (40, 64)]
    assert _times(AMX, LOAD_T5 + TDP + LOAD_T4.replace("t=4", "t=6")) == [(0, 24), (24, 40), (24, 48)]


def test_waw_a_write_waits_for_the_earlier_write():
    # two writers of tile 2 on different engines: the second (1 cycle) waits for the first (24)
    assert _times(AMX, LOAD_T4.replace("t=4", "t=2") + "tilezero t=2\n") == [(0, 24), (24, 25)]
    assert _times(AMX, LOAD_T4.replace("t=4", "t=2") + "tilezero t=3\n") == [(0, 24), (0, 1)]


def test_war_in_gemmini_reuse_of_the_scratchpad():
    """gemmini_add's pattern: preload_ws reads sp[0:16], then mvin overwrites sp[0:16]."""
    text = ("mvin rows=16 stride=16 dram=0 sp_addr=0\npreload_ws k=16 b_addr=0\n"
            "mvin rows=16 stride=16 dram=256 sp_addr=0\nmvin rows=16 stride=16 dram=512 sp_addr=16\n")
    assert _times(GEMMINI, text) == [(0, 20), (20, 36), (36, 56), (56, 76)]


def test_slices_conflict_exactly_when_their_rectangles_meet():
    """tmm is [tile, row]: a tdpbusd writing rows 0..7 of tile 0 conflicts with a store of
    rows 0..3 of tile 0, not with one of tile 1 (same rows); sp rows [0,8) and [8,16) are apart."""
    tdp8 = "tdpbusd m=8 k=16 n=16 dst=0 src0=4 src1=5\n"
    store = "tilestored rows=4 colsb=64 stride=64 t={t} addr=8192\n"
    assert _times(AMX, tdp8 + store.format(t=0)) == [(0, 16), (16, 28)]
    assert _times(AMX, tdp8 + store.format(t=1)) == [(0, 16), (0, 12)]
    text = "mvin rows=8 stride=16 dram=0 sp_addr=0\nmvout_spad rows=8 stride=16 sp_addr={a} dram=4096\n"
    assert _times(GEMMINI, text.format(a=8)) == [(0, 12), (0, 12)]
    assert _times(GEMMINI, text.format(a=7)) == [(0, 12), (12, 24)]


def test_each_engine_issues_in_program_order():
    # tilezero t=1 is independent, but the tmul engine takes it after the tdpbusd,
    # which waits for its tiles until 48
    text = LOAD_T4 + LOAD_T5 + TDP + "tilezero t=1\n"
    assert _times(AMX, text) == [(0, 24), (24, 48), (48, 64), (64, 65)]


def test_busy_time_and_bytes_moved():
    t = time_program(AMX, _prog(LOAD_T4 + LOAD_T5 + TDP + STORE_T0))
    assert t.busy == {"tmul": 16, "load": 48, "store": 24, "vec": 0}
    # tdpbusd moves tmm -> tmm (not counted); the store's read of the old HBM bytes is d0 -> d0
    assert t.bytes_moved == {("d0", "tmm"): 2048, ("tmm", "d0"): 1024}
    g = time_program(GEMMINI, _prog("mvin rows=16 stride=16 dram=0 sp_addr=0\npreload_ws k=16 b_addr=0\n"
                                    "compute_ws rows=8 a_addr=0 c_addr=0\n"
                                    "mvout_acc32 rows=8 stride=64 acc_addr=0 dram=1024\n"))
    assert g.bytes_moved == {("d0", "sp"): 256, ("sp", "ws"): 256, ("sp", "acc"): 128, ("ws", "acc"): 256,
                             ("acc", "d0"): 512}


def test_trace_json_has_one_event_per_instruction_on_engine_tracks():
    prog = parse_program((ROOT / "examples/amx/amx_k1.s").read_text(), "amx_k1.s")
    t = time_program(AMX, prog)
    trace = json.loads(t.trace_json())
    events = trace["traceEvents"]
    xs = [e for e in events if e["ph"] == "X"]
    assert len(xs) == len(prog.instructions) == 16
    tracks = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert sorted(tracks.values()) == sorted(AMX_ENGINES)
    us = 1e6 / AMX.clock_hz  # Trace Event Format: ts and dur in microseconds
    for e, ci, it in zip(xs, prog.instructions, t.instrs):
        assert tracks[e["tid"]] == it.engine
        assert (e["args"]["start_cycle"], e["args"]["cycles"]) == (it.start, it.end - it.start)
        assert e["ts"] == pytest.approx(it.start * us) and e["dur"] == pytest.approx((it.end - it.start) * us)
        assert e["args"]["text"].split()[0] == ci.name
    assert trace["otherData"]["time_unit"] == "microseconds"
    assert max(e["ts"] + e["dur"] for e in xs) == pytest.approx(t.cycles * us)


AMX_ENGINES = ["tmul", "load", "store", "vec"]


def test_bad_programs_are_reported_not_timed():
    with pytest.raises(SimError, match="unknown instruction"):
        time_program(AMX, _prog("tilefoo t=1\n"))
    with pytest.raises(SimError, match="outside the buffer"):
        time_program(GEMMINI, _prog("mvin rows=16 stride=16 dram=0 sp_addr=16380\n"))


def test_thousands_of_instructions_time_in_well_under_a_second():
    prog = Program(instructions=_random_instrs(GEMMINI, random.Random(1), 4000, span=4096))
    t0 = time.perf_counter()
    t = time_program(GEMMINI, prog)
    assert time.perf_counter() - t0 < 1.0
    assert len(t.instrs) == 4000 and t.cycles <= latency_sum(GEMMINI, prog)


# ---------------------------------------------------------------- the roofline


def test_flops_are_counted_by_class_from_the_kernel():
    assert kernel_flops(parse_file(KERNELS / "gemmini_mac.hlo")) == {("dot", "s8"): 8192, ("elementwise", "s32"): 256}
    assert kernel_flops(parse_file(KERNELS / "amx_k1.hlo")) == {("dot", "u8"): 2 * 32 * 32 * 64}


def test_flops_go_to_the_peak_of_their_dtype():
    assert place(AMX, ("dot", "bf16")).dtype == "bf16"
    assert place(AMX, ("dot", "u8")).dtype == "s8"  # same width and kind
    assert place(AMX, ("dot", "f32")).engine == "vec"  # AMX has no f32 TMUL: AVX-512 FMAs
    assert place(AMX, ("elementwise", "s32")).engine == "vec"
    assert place(QKV, ("elementwise", "bf16")).engine == "softmax"
    assert place(GEMMINI, ("elementwise", "s32")) is None  # no vector-like peak


def test_roofline_terms():
    prog = parse_program((ROOT / "examples/amx/amx_k1.s").read_text(), "amx_k1.s")
    r = roofline(AMX, prog, parse_file(KERNELS / "amx_k1.hlo"))
    assert (r.bytes_read, r.bytes_written, r.read_bw, r.write_bw) == (4096, 4096, 64, 64)
    assert r.t_memory == 64 and r.t_engines == {"tmul": 64.0} and r.t_peak == 64
    assert r.percent(128) == 50.0


def test_roofline_is_undefined_without_peaks_or_bandwidths():
    prog = parse_program((ROOT / "examples/amx/amx_k1.s").read_text(), "amx_k1.s")
    for bare in (dataclasses.replace(AMX, peaks=()), dataclasses.replace(AMX, bandwidths=())):
        r = roofline(bare, prog)
        assert r.t_peak is None and r.percent(100) is None and r.reason


@pytest.fixture(scope="module")
def compiled():
    from generated.gemmini import compile_hlo

    return {k: compile_hlo(KERNELS / f"{k}.hlo", deterministic=True, patience=0.5)
            for k in ("gemmini_gemm", "gemmini_mac", "gemmini_add")}


def test_compiled_programs_never_beat_their_roofline(compiled):
    for k, res in compiled.items():
        t = time_program(GEMMINI, res.program)
        assert res.cost == t.cycles  # the compiler's default cost is the timing model
        for kernel in (res.module, None):
            r = roofline(GEMMINI, res.program, kernel)
            assert 0 < r.t_peak <= t.cycles, k


@pytest.mark.parametrize("target,prog,kernel", [
    (AMX, "examples/amx/amx_k1.s", "examples/kernels/amx_k1.hlo"),
    (AMX, "examples/amx/amx_k2.s", "examples/kernels/amx_k2.hlo"),
    (GEMMINI, "examples/gemmini/matmul_bias.s", "examples/gemmini/matmul_bias.hlo"),
    (QKV, "examples/qkv/attention.s", "examples/qkv/attention.hlo"),
])
def test_example_programs_never_beat_their_roofline(target, prog, kernel):
    p = parse_program((ROOT / prog).read_text(), prog)
    t = time_program(target, p)
    for module in (parse_file(ROOT / kernel), None):
        assert 0 < roofline(target, p, module).t_peak <= t.cycles


# ---------------------------------------------------------------- random programs


def _random_instrs(target, rng, n, span=48):
    """n valid instructions (constraint and bounds) with attributes near their lower
    bounds, so that slices often overlap."""
    names = sorted(target.instructions)
    out = []
    while len(out) < n:
        ins = target.instructions[rng.choice(names)]
        ci = ConcreteInstr(ins.name, {d.name: rng.randint(d.lo, min(d.hi, d.lo + span)) for d in ins.attrs()})
        if ins.e(ci.attrs) and _in_bounds(target, ci):
            out.append(ci)
    return out


def _in_bounds(target, ci):
    try:
        time_program(target, Program(instructions=[ci]))
    except SimError:
        return False
    return True


def _reference_timing(target, prog):
    """The rules stated directly, against every earlier instruction: quadratic but plain."""
    def meets(p, q):
        return all(max(a, c) < min(b, d) for (a, b), (c, d) in zip(p, q))

    done, engine_free = [], {}
    for ci in prog.instructions:
        ins = target.instructions[ci.name]
        a = _attributes(ins, ci)
        rects = [(s.buffer, tuple((st, st + n) for st, n in zip(*b)))
                 for s, b in zip((ins.output,) + ins.inputs, ins.h(a))]
        out, reads = rects[0], rects[1:]
        start = engine_free.get(ins.engine, 0)
        for w, rs, end in done:
            raw = any(buf == w[0] and meets(r, w[1]) for buf, r in reads)
            waw = out[0] == w[0] and meets(out[1], w[1])
            war = any(buf == out[0] and meets(r, out[1]) for buf, r in rs)
            if raw or waw or war:
                start = max(start, end)
        end = start + int(ins.latency(a))
        engine_free[ins.engine] = end
        done.append((out, reads, end))
    return [end for *_, end in done]


@pytest.mark.parametrize("target", [GEMMINI, AMX, QKV], ids=["gemmini", "amx", "qkv"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 60))
def test_random_programs_follow_the_rules_and_respect_the_roofline(target, seed, n):
    prog = Program(instructions=_random_instrs(target, random.Random(seed), n))
    t = time_program(target, prog)
    assert [i.end for i in t.instrs] == _reference_timing(target, prog)
    assert t.cycles <= latency_sum(target, prog)
    assert sum(t.busy.values()) == latency_sum(target, prog)
    # no declared inputs or outputs: the bound is the flops of the instructions themselves
    assert roofline(target, prog).t_peak <= t.cycles


# ---------------------------------------------------------------- the command line


def test_cli_run_prints_cycles_roofline_engines_and_bytes(tmp_path, capsys):
    trace = tmp_path / "t.json"
    rc = main(AMX, ["run", str(ROOT / "examples/amx/amx_k1.s"), "--random", "0", "-o", str(tmp_path / "o.npz"),
                    "--expect", str(KERNELS / "amx_k1.hlo"), "--trace", str(trace)])
    out = capsys.readouterr().out
    assert rc == 0
    assert re.search(r"^cycles: 184  roofline: 34\.8%$", out, re.M)
    for word in ("tmul", "load", "store", "vec", "tmm", "4096", "matches the reference"):
        assert word in out
    assert len([e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]) == 16


def test_cli_run_without_target_facts_says_roofline_na(tmp_path, capsys):
    bare = dataclasses.replace(AMX, peaks=())
    rc = main(bare, ["run", str(ROOT / "examples/amx/amx_k1.s"), "--random", "0", "-o", str(tmp_path / "o.npz")])
    assert rc == 0
    assert re.search(r"^cycles: 184  roofline: n/a \(target amx declares no peak\)$", capsys.readouterr().out, re.M)


def test_cli_tables_fall_back_to_plain_text_without_rich(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "rich.table", None)  # import fails as if rich were not installed
    prog = ROOT / "examples/gemmini/matmul_bias.s"
    assert main(GEMMINI, ["run", str(prog), "--random", "1", "-o", str(tmp_path / "o.npz"),
                          "--expect", str(ROOT / "examples/gemmini/matmul_bias.hlo")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^cycles: 160  roofline: 60\.0%$", out, re.M)
    assert re.search(r"^  load +108 +67\.5%$", out, re.M)
    assert re.search(r"^  d0 +acc +1024$", out, re.M) and re.search(r"^  from +to +bytes$", out, re.M)
    assert "not in the bound" in out  # Gemmini has no peak for the bias add


def test_loop_nests_in_sequence_are_timed_from_one_run_per_loop(monkeypatch):
    """A program of several loop nests (a plan's parts) is timed with every loop of more than
    three iterations cut to two, and once more per such loop at three: n + 1 runs of the
    timing model, not one per combination; the estimate stays near the exact makespan."""
    from runtime_skeleton.sim import cost

    nest = (".loop i{k} 0 8\n  .loop j{k} 0 6\n"
            "    vmovups_load n=16 addr={base}+512*i{k}+64*j{k} z=1\n"
            "    vaddps dst=2 a=1 b=1\n"
            "    vmovups_store n=16 z=2 addr={out}+512*i{k}+64*j{k}\n"
            "  .endloop\n  vzero dst=3\n.endloop\n")
    text = "".join(nest.format(k=k, base=4096 * k, out=65536 + 4096 * k) for k in range(4))
    prog = _prog(text)
    exact = time_program(AMX, prog).cycles
    runs = []
    real = cost.time_program
    monkeypatch.setattr(cost, "time_program", lambda t, p: runs.append(p.executed()) or real(t, p))
    monkeypatch.setattr(cost, "EXTRAPOLATE_ABOVE", 10)
    estimate = cycles(AMX, prog)
    assert len(runs) == 1 + 8  # four outer and four inner loops
    assert max(runs) < prog.executed() / 4
    assert abs(estimate - exact) <= 0.05 * exact
