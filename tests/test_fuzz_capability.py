"""Probing which fuzzing operators a backend compiles per dtype, and drawing kernels
from those pairs only (runtime_skeleton.fuzz.capability)."""
from __future__ import annotations

import dataclasses
import re

import pytest

from runtime_skeleton.fuzz import OPS, profile, random_fuzz_kernel, random_kernel
from runtime_skeleton.fuzz import capability
from runtime_skeleton.fuzz.capability import capable, describe, probe_kernel, probes
from runtime_skeleton.hlo import parse_module
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.npz_io import random_inputs


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ACTGEN_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("target", ["gemmini", "amx", "qkv"])
def test_every_probe_is_a_valid_one_operator_kernel(target):
    prof = profile(target)
    seen = set()
    for op, dtype, text in probes(prof):
        m = parse_module(text, "<probe>")
        ops = [i.opcode for i in m.entry_computation.instructions if i.opcode not in ("parameter", "constant")]
        assert ops == [op]
        first = m.entry_computation[m.entry_computation.instructions[0].name]
        assert first.type.dtype.name == dtype
        out, = evaluate(m, random_inputs(list(m.parameter_types), 0))
        assert out.shape == tuple(m.entry_computation.root_instruction.type.shape)
        seen.add((op, dtype))
    assert seen == {(op, dt) for op in OPS for dt in prof.dtypes}


def test_gemmini_computes_dot_in_s8_and_add_in_s32(tmp_path):
    """Gemmini's array multiplies s8 into s32 and its accumulator adds s32; nothing
    adds s8 with wrap-around (its stores saturate) or contracts s32 operands."""
    prof = capable("gemmini", ("dot", "add"))
    assert prof.ops == {("dot", "s8"), ("add", "s32")}
    assert describe(prof) == "add s32, dot s8"
    cached = list((tmp_path / "cache").iterdir())
    assert len(cached) == 1 and cached[0].name.startswith("capability-gemmini-")


def test_results_are_cached(monkeypatch):
    calls = []

    def fake(job):
        calls.append(job[1])
        return "dot(" in job[1]

    monkeypatch.setattr(capability, "_compiles", fake)
    first = capable("gemmini", ("dot", "negate"))
    assert first.ops == {("dot", "s8"), ("dot", "s32")} and len(calls) == 4
    again = capable("gemmini", ("dot", "negate", "add"))  # only the new operator is probed
    assert again.ops == first.ops and len(calls) == 6


def test_a_crashing_probe_counts_as_capable(monkeypatch):
    """A crash is a bug: the operator stays in the draw, so the fuzz run reports it."""
    import runtime_skeleton.compile as comp

    def crash(target, text, opts=None, **kw):
        raise ZeroDivisionError("phase 2")

    monkeypatch.setattr(comp, "compile_hlo", crash)
    assert capable("gemmini", ("negate",)).ops == {("negate", "s8"), ("negate", "s32")}


def _drawn(text: str) -> set[tuple[str, str]]:
    """(operator, dtype) of every operator in the kernel (dot: its operands' dtype),
    leaving out the scalar constants and their broadcasts (constants, not work)."""
    m = parse_module(text, "<fuzz>")
    comp = m.entry_computation
    pairs = set()
    for ins in comp.instructions:
        if ins.opcode in ("parameter", "constant"):
            continue
        if ins.opcode == "broadcast" and comp[ins.operands[0]].opcode == "constant":
            continue
        dtype = comp[ins.operands[0]].type.dtype.name if ins.opcode == "dot" else ins.type.dtype.name
        pairs.add((ins.opcode, dtype))
    return pairs


def test_a_probed_profile_draws_only_its_pairs():
    allowed = {("dot", "s8"), ("add", "s32"), ("broadcast", "s32")}
    prof = dataclasses.replace(profile("gemmini"), ops=frozenset(allowed))
    seen = set()
    for seed in range(40):
        k = random_fuzz_kernel(prof, seed, 40)
        pairs = _drawn(k.text)
        assert pairs <= allowed, (seed, pairs - allowed)
        seen |= pairs
        for line in k.text.splitlines():  # broadcasts repeat rows, as the probe did
            if m := re.search(r"= s32\[\d+,\d+\]\{1,0\} broadcast\((Arg[.\d]+)\), dimensions=\{(\d)\}", line):
                assert m.group(2) == "1"
    assert seen == allowed


def test_an_unprobed_profile_draws_as_before():
    prof = profile("amx")
    for seed in range(10):
        assert random_fuzz_kernel(prof, seed, 30).text == random_kernel("amx", seed, 30)
        assert dataclasses.replace(prof, ops=None) == prof


def test_probe_kernel_rejects_an_unknown_operator():
    with pytest.raises(ValueError, match="no probe for operator sort"):
        probe_kernel(profile("gemmini"), "sort", "s8")


def test_a_probed_profile_draws_dots_as_probed():
    prof = dataclasses.replace(profile("gemmini"), ops=frozenset({("dot", "s8"), ("add", "s32")}))
    dots = [line for seed in range(30) for line in random_fuzz_kernel(prof, seed, 30).text.splitlines()
            if " dot(" in line]
    assert dots and all("lhs_contracting_dims={1}, rhs_contracting_dims={0}" in line for line in dots)


def test_cli_fuzz_probes_then_draws_from_what_compiles(monkeypatch, tmp_path, capsys):
    import runtime_skeleton.compile as comp
    from generated.gemmini import TARGET
    from runtime_skeleton.backend_cli import main
    from runtime_skeleton.compile import CompileError

    texts = []

    def only_adds(target, text, opts=None, **kw):
        texts.append(text)
        if "negate(" in text:
            raise CompileError("no pii graph for gemmini: no instruction produces s8[1,16] in HBM computed by negate")
        return type("R", (), {"program": type("P", (), {"executed": lambda self: 3})(), "cost": 10.0})()

    monkeypatch.setattr(comp, "compile_hlo", only_adds)
    monkeypatch.setattr(comp, "verify", lambda t, r: [])
    rc = main(TARGET, ["fuzz", "--n", "3", "--ops", "add,negate", "--max-nodes", "9", "--out", str(tmp_path / "f")])
    out = capsys.readouterr().out
    assert rc == 0
    assert "probing which of the operators compile, per dtype: 4 one-operator kernels" in out
    assert "drawing from the operators that compile alone: add s32, add s8" in out
    assert "fuzz: 3 kernels, 3 compiled, 3 verified, 0 unsupported, 0 failed" in out
    kernels = texts[4:]
    assert len(kernels) == 3 and not any("negate(" in k for k in kernels)


@pytest.mark.slow
# not broadcast on gemmini: s8 broadcasts probe as capable, but as dot operands their kernels
# mostly reach the 10 s limit (phase 1 finds them only as loops of small tiles)
@pytest.mark.parametrize("target,ops", [("gemmini", "dot,add"), ("amx", "add,maximum")])
def test_bounded_probed_fuzz_compiles_and_verifies(target, ops, tmp_path):
    """A bounded sample of what `fuzz` does by default: probe, then draw only what compiles
    (a few operators, to keep the probing short). Nothing fails, and compiled programs are
    really exercised: at least one kernel verifies on the simulator."""
    from runtime_skeleton.fuzz import FAILED, fuzz

    r = fuzz(target, n=4, seed=0, max_nodes=12, timeout_per_kernel=10, out_dir=tmp_path, quiet=True,
             ops=ops, probe=True)
    assert r.drawn and r.failed == 0, [(o.seed, o.category, o.saved) for o in r.outcomes if o.status == FAILED]
    assert r.verified >= 1, [(o.seed, o.category) for o in r.outcomes]
