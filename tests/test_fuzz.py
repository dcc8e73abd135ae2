"""Fuzzing of generated backends (Act §9.4, App. D): the kernel generator, the
classification of outcomes, the `fuzz` subcommand, and (slow) a bounded fuzz run."""
from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime_skeleton.alloc.allocate import AllocationFailed
from runtime_skeleton.compile import CompileError
from runtime_skeleton.errors import ActgenError, EvalError, HloError
from runtime_skeleton.fuzz import (FAILED, OPS, UNSUPPORTED, VERIFIED, categorize, classify, fuzz, kernels, profile,
                                   random_fuzz_kernel, random_kernel)
from runtime_skeleton.fuzz.run import HardTimeout
from runtime_skeleton.hlo import parse_module
from runtime_skeleton.isel.phase1 import NoPiiGraph
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.npz_io import random_inputs
from runtime_skeleton.sim.machine import SimError

TARGETS = ("gemmini", "amx", "qkv")
SUMMARY = re.compile(r"^fuzz: (\d+) kernels, (\d+) compiled, (\d+) verified, (\d+) unsupported, (\d+) failed$", re.M)


def _check(text: str, target: str, seed: int = 0):
    """Parses, type-checks and runs on the reference interpreter; returns the module."""
    m = parse_module(text, "<fuzz>")
    prof = profile(target)
    entry = m.entry_computation
    for ins in entry.instructions:
        assert ins.opcode in OPS or ins.opcode in ("parameter", "constant"), ins.opcode
        if ins.type.shape:  # tensors: the target's dtypes and tile-friendly extents
            assert ins.type.dtype.name in prof.dtypes, ins
            assert all(d in prof.dims for d in ins.type.shape), ins
            assert np.prod(ins.type.shape) <= prof.max_elements
        if ins.opcode == "reduce":
            assert ins.attrs["to_apply"]
    assert m.parameter_types  # a kernel has inputs
    for comp in m.computations.values():
        if comp is not entry:  # reduce's to_apply: a scalar sum
            assert sorted(i.opcode for i in comp.instructions) == ["add", "parameter", "parameter"]
    outs = evaluate(m, random_inputs(list(m.parameter_types), seed))
    assert len(outs) == 1 and outs[0].shape == tuple(entry.root_instruction.type.shape)
    return m


# ---------------------------------------------------------------- the generator

@pytest.mark.parametrize("target", TARGETS)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_strategy_kernels_parse_typecheck_and_evaluate(target, data):
    k = data.draw(kernels(target, max_nodes=40, full=True))
    m = _check(k.text, target)
    assert len(m.entry_computation.instructions) == k.nodes
    assert 7 <= k.nodes <= 40


@pytest.mark.parametrize("target", TARGETS)
def test_random_kernels_parse_and_evaluate(target):
    for seed in range(15):
        _check(random_kernel(target, seed), target, seed)


@pytest.mark.parametrize("max_nodes", [1, 3, 7, 12, 50, 90, 150])
def test_node_count_within_bounds(max_nodes):
    lo = min(7, max_nodes)
    seen = set()
    for seed in range(25):
        k = random_fuzz_kernel("gemmini", seed, max_nodes)
        m = parse_module(k.text, "<fuzz>")
        n = len(m.entry_computation.instructions)
        assert n == k.nodes and lo <= n <= max_nodes
        # App. D: nodes = operators + parameters (+ constants) + (outputs - 1)
        assert n == sum(k.ops.values()) and k.ops["parameter"] == k.parameters == len(m.parameter_types)
        seen.add(n)
    if max_nodes >= 50:
        assert len(seen) > 10  # drawn over the range, not a fixed size


def test_min_nodes_option():
    for seed in range(10):
        assert 20 <= random_fuzz_kernel("amx", seed, max_nodes=30, min_nodes=20).nodes <= 30


def test_all_ten_operators_appear():
    used = set()
    for target in TARGETS:
        for seed in range(10):
            used |= set(random_fuzz_kernel(target, seed).ops)
    assert used == set(OPS) | {"parameter", "constant"}


def test_operator_subset():
    for seed in range(10):
        k = random_fuzz_kernel("gemmini", seed, 20, ops="dot,add")
        assert set(k.ops) <= {"dot", "add", "parameter"}
        _check(k.text, "gemmini")
    for seed in range(30):  # without add, only the outputs are joined by add (Act App. D)
        k = random_fuzz_kernel("qkv", seed, 12, ops=["dot"])
        assert set(k.ops) <= {"dot", "add", "parameter"}
        assert k.ops["add"] in (k.outputs - 1, k.outputs)  # + an output added to itself when one node is left
        _check(k.text, "qkv")
    with pytest.raises(ValueError, match="unknown fuzzing operator"):
        random_kernel("gemmini", 0, ops="dot,convolution")


def test_deterministic_for_a_seed():
    for target in TARGETS:
        a = [random_kernel(target, s, 40) for s in range(8)]
        assert a == [random_kernel(target, s, 40) for s in range(8)]
        assert len(set(a)) == len(a)


def test_profiles_follow_the_targets():
    g, a, q = profile("gemmini"), profile("amx"), profile("qkv")
    assert g.dtypes == ("s32", "s8") and g.acc("s8") == "s32" and g.dims == (16, 32)
    assert {"u8", "s8", "bf16", "f32"} <= set(a.dtypes) and a.acc("bf16") == "f32" and a.acc("u8") == "s32"
    assert 16 in a.dims and 64 in a.dims
    assert q.dtypes == ("bf16",) and q.acc("bf16") == "bf16" and q.dims == (64,)


def test_dot_produces_the_accumulator_type():
    found = 0
    for seed in range(30):
        for line in random_kernel("gemmini", seed, 30).splitlines():
            if " dot(" in line:
                found += 1
                assert re.search(r"= s32\[", line)
    assert found


# ---------------------------------------------------------------- classification

def test_classify_outcomes():
    assert classify() == (VERIFIED, "")
    assert classify(problems=[]) == (VERIFIED, "")
    assert classify(problems=["seed 0: out0 differs at [0, 0]"]) == (FAILED, "mismatch")
    msg = ("no pii graph for gemmini: no instruction produces s32[16,16]{1,0} in buffer acc computed by negate "
           "(needed by mvout <- compute_ws)")
    assert classify(CompileError(msg)) == (UNSUPPORTED, "no pii graph: negate in acc")
    assert classify(NoPiiGraph("no pii graph for amx: no instruction produces u8[2048] in HBM computed by "
                               "concatenate, reshape")) == (UNSUPPORTED, "no pii graph: concatenate/reshape in HBM")
    assert classify(AllocationFailed("CSP4: buffer acc overflows: 2048 of 1024 rows live at step 3 (%1, %2)")) == \
        (UNSUPPORTED, "allocation: CSP4 acc")
    assert classify(HardTimeout("still running")) == (UNSUPPORTED, "timeout")
    assert classify(ActgenError("instruction selection does not handle the tuple-valued 'sort'")) == \
        (UNSUPPORTED, "instruction selection does not")
    # bugs: a compiler that owns up to one, a kernel the parser rejects, crashes, simulator errors
    assert classify(ActgenError("UNSOUND pii graph (a bug in actgen): x"))[0] == FAILED
    assert classify(HloError("bad")) == (FAILED, "kernel rejected by the HLO parser")
    assert classify(RuntimeError("boom")) == (FAILED, "compile crash: RuntimeError")
    assert classify(SimError("mvin: violates the instruction's constraint"), stage="verify") == \
        (FAILED, "verify crash: SimError")
    assert classify(EvalError("x"), stage="verify") == (FAILED, "verify: reference interpreter error")
    assert classify(CompileError("no pii graph for qkv: x"), stage="verify")[0] == FAILED


def test_categories_are_short_and_stable():
    alloc = ("no pii graph of the 3 found could be allocated on gemmini; the last failures:\n"
             "  pii graph 2 (9 instructions): no allocation: CSP2 %4 mvin @sp (after 2 topological orders)\n"
             "  pii graph 3 (12 instructions): no allocation: CSP4 sp; CSP1 %7 mvout (after 5 topological orders)")
    assert categorize(alloc) == "allocation: CSP4 sp"
    fit = ("no pii graph of the 1 found could be allocated on qkv; the last failures:\n"
           "  pii graph 1 (4 instructions): %3 load_rm @d1: bf16[256,64] does not fit in buffer d1 (after 1 "
           "topological order)")
    assert categorize(fit) == "allocation: fit d1"
    solver = ("no pii graph of the 1 found could be allocated on amx; the last failures:\n"
              "  pii graph 1 (40 instructions): CP-SAT found no allocation within 2.5s (UNKNOWN) (after 1 "
              "topological order)")
    assert categorize(solver) == "allocation: solver timeout"
    assert categorize("no pii graph for gemmini: no instruction produces u8[2048] in HBM computed by concatenate, "
                      "reshape (phase 1 stopped at its 10 s limit before the e-graph saturated)") == \
        "no pii graph: concatenate/reshape in HBM"
    assert categorize("no pii graph for gemmini: every output can be produced, but each choice is cyclic or "
                      "exceeds the node bound") == "no pii graph: node bound"
    assert categorize("phase 1 hit its time limit after 12.5s") == "timeout"
    assert categorize("kernels with tuple-typed parameters are not supported") == "kernels with tuple-typed parameters"
    # numbers do not split buckets
    assert categorize("layout {1,0:T(16,16)} has 3 tiles") == categorize("layout {1,0:T(8,8)} has 12 tiles")


# ---------------------------------------------------------------- the fuzz loop and the CLI

def _fake_result():
    return SimpleNamespace(program=SimpleNamespace(executed=lambda: 3), cost=10.0)


def test_fuzz_counts_and_saves_failures(monkeypatch, tmp_path):
    import runtime_skeleton.compile as comp

    calls = []

    def fake_compile(target, text, opts=None, **kw):  # seeds 0..3: verified, mismatch, refused, crash
        calls.append(opts)
        k = len(calls) - 1
        if k == 2:
            raise CompileError("no pii graph for gemmini: no instruction produces s8[16,16] in HBM computed by "
                               "reverse")
        if k == 3:
            raise KeyError("oops")
        return _fake_result()

    monkeypatch.setattr(comp, "compile_hlo", fake_compile)
    monkeypatch.setattr(comp, "verify", lambda t, r: ["seed 0: out0 differs"] if len(calls) == 2 else [])
    lines: list[str] = []
    r = fuzz("gemmini", 4, seed=0, max_nodes=10, timeout_per_kernel=5, out_dir=tmp_path, log=lines.append)
    assert (r.n, r.compiled, r.verified, r.unsupported, r.failed) == (4, 2, 1, 1, 2)
    assert all(o.deterministic and o.timeout == 5 for o in calls)
    assert "fuzz: 4 kernels, 2 compiled, 1 verified, 1 unsupported, 2 failed" in lines
    assert "  compiled share: 50.0% (2 of 4), verified 25.0%" in lines
    assert any("unsupported" in ln and "no pii graph: reverse in HBM" in ln for ln in lines)
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert saved == ["fuzz_1.hlo", "fuzz_3.hlo"]
    text = (tmp_path / "fuzz_3.hlo").read_text()
    assert text.startswith("// fuzz failure: target gemmini, seed 3, compile crash: KeyError")
    assert "KeyError: 'oops'" in text
    body = text.split("\n\n", 1)[1]
    assert body == random_kernel("gemmini", 3, 10)
    parse_module(text, "fuzz_3.hlo")  # the header is comments: the file is a valid kernel


def test_refusal_at_the_time_limit_is_a_timeout(monkeypatch):
    import runtime_skeleton.compile as comp
    from runtime_skeleton.fuzz import FuzzReport, check_kernel, report_lines

    def slow(target, text, opts=None, **kw):
        raise CompileError("no pii graph for gemmini: no instruction produces s32[16,16] in buffer acc computed by "
                           "maximum (phase 1 stopped at its 10 s limit before the e-graph saturated)")

    monkeypatch.setattr(comp, "compile_hlo", slow)
    o = check_kernel("gemmini", random_kernel("gemmini", 0, 10), 0, timeout=10)
    assert (o.status, o.category, o.at_limit) == (UNSUPPORTED, "timeout (no pii graph)", True)
    assert o.reason == "no pii graph: maximum in acc"
    lines = report_lines(FuzzReport("gemmini", [o]))
    assert lines[0] == "fuzz: 1 kernels, 0 compiled, 0 verified, 1 unsupported, 0 failed"
    assert any("timeout (no pii graph)" in ln for ln in lines) and any("maximum in acc" in ln for ln in lines)


def test_cli_prints_summary_and_fails_on_failure(monkeypatch, tmp_path, capsys):
    import runtime_skeleton.compile as comp
    from generated.gemmini import TARGET
    from runtime_skeleton.backend_cli import main

    def broken(target, text, opts=None, **kw):
        raise ZeroDivisionError("division by zero in phase 2")

    monkeypatch.setattr(comp, "compile_hlo", broken)
    rc = main(TARGET, ["fuzz", "--n", "3", "--seed", "7", "--max-nodes", "12", "--out", str(tmp_path / "f"),
                       "--unfiltered"])
    out = capsys.readouterr().out
    assert rc != 0
    m = SUMMARY.search(out)
    assert m and m.groups() == ("3", "0", "0", "0", "3")
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == ["fuzz_7.hlo", "fuzz_8.hlo", "fuzz_9.hlo"]

    monkeypatch.setattr(comp, "compile_hlo", lambda target, text, opts=None, **kw: _fake_result())
    monkeypatch.setattr(comp, "verify", lambda t, r: [])
    rc = main(TARGET, ["fuzz", "--n", "2", "--out", str(tmp_path / "g"), "--unfiltered"])
    out = capsys.readouterr().out
    assert rc == 0 and SUMMARY.search(out).groups() == ("2", "2", "2", "0", "0")
    assert not (tmp_path / "g").exists()


def test_cli_rejects_bad_options(capsys):
    from generated.gemmini import TARGET
    from runtime_skeleton.backend_cli import main

    assert main(TARGET, ["fuzz", "--ops", "dot,sort"]) == 2
    assert "unknown fuzzing operator" in capsys.readouterr().err


# ---------------------------------------------------------------- a bounded fuzz run

@pytest.mark.slow
@pytest.mark.parametrize("target", ["gemmini", "amx"])
def test_bounded_fuzz_has_no_failures(target, tmp_path):
    r = fuzz(target, n=5, seed=0, timeout_per_kernel=10, out_dir=tmp_path)
    assert r.n == 5 and r.verified + r.unsupported + r.failed == 5
    assert r.failed == 0, [(o.seed, o.category, o.saved) for o in r.outcomes if o.status == FAILED]


def test_jobs_report_in_seed_order(tmp_path):
    # worker processes: the same kernels, in seed order, each with an outcome (kept short: 2 kernels, 3 s)
    r = fuzz("gemmini", n=2, seed=4, max_nodes=8, timeout_per_kernel=3, out_dir=tmp_path, quiet=True, ops="dot,add",
             jobs=2)
    assert [(o.seed, o.nodes) for o in r.outcomes] == \
        [(s, random_fuzz_kernel("gemmini", s, 8, ops="dot,add").nodes) for s in (4, 5)]
    assert all(o.status in (VERIFIED, UNSUPPORTED) for o in r.outcomes) and r.failed == 0
