"""Kernels with several outputs: each output's cone compiled on its own and the
programs run in sequence over the whole kernel's tensors (superopt.outputs)."""
from __future__ import annotations

import collections
import pathlib

import numpy as np
import pytest

from runtime_skeleton import budget
from runtime_skeleton.compile import CompileError, CompileOptions, compile_hlo, compile_module, load_kernel, verify
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.npz_io import random_inputs
from runtime_skeleton.superopt.driver import compile_parts
from runtime_skeleton.superopt.outputs import parts, several_outputs

from generated.amx import TARGET as AMX
from generated.gemmini import TARGET as GEMMINI

ROOT = pathlib.Path(__file__).resolve().parent.parent

# a GEMM and an ADD sharing input b; parameter 2 is read by the ADD only, parameter 3 by nobody
GEMM_AND_ADD = """HloModule gemm_and_add

ENTRY e {
  a = s8[16,16]{1,0} parameter(0)
  b = s8[16,16]{1,0} parameter(1)
  c = s8[16,16]{1,0} parameter(2)
  unused = s8[16,16]{1,0} parameter(3)
  d = s32[16,16]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bw = s32[16,16]{1,0} convert(b)
  cw = s32[16,16]{1,0} convert(c)
  s = s32[16,16]{1,0} add(bw, cw)
  ROOT t = (s32[16,16]{1,0}, s32[16,16]{1,0}) tuple(d, s)
}
"""


def test_parts_are_the_cones_of_the_outputs():
    module = load_kernel(ROOT / "examples/kernels/amx_k5.hlo")
    assert several_outputs(module)
    found = parts(module)
    assert [p for _, p in found] == [(0, 1), (2, 3, 4, 5)]
    x = random_inputs([t for t in module.parameter_types], 3)
    whole = evaluate(module, x)
    for k, (part, params) in enumerate(found):
        assert not several_outputs(part)
        np.testing.assert_array_equal(evaluate(part, [x[i] for i in params])[0], whole[k])


def test_outputs_compile_one_at_a_time():
    """Each output compiled alone (what compile does when the whole kernel has no
    straight-line program in time): the GEMM and the ADD both read the one copy of b."""
    res = compile_parts(GEMMINI, load_kernel(GEMM_AND_ADD), CompileOptions(deterministic=True),
                        budget.after(60))
    assert len(res.parts) == 2 and res.describe_loops().startswith("output 0: ")
    prog = res.program
    assert [d.name for d in prog.inputs] == ["arg0", "arg1", "arg2", "arg3"]
    assert [d.name for d in prog.outputs] == ["out0", "out1"]
    ends = [(d.offset, d.offset + 256 * d.type.dtype.nbytes) for d in prog.inputs + prog.outputs]
    assert all(b <= c or d <= a for i, (a, b) in enumerate(ends) for c, d in ends[i + 1:])  # disjoint tensors
    assert prog.executed() == sum(p.program.executed() for p in res.parts)
    assert verify(GEMMINI, res, seeds=(0, 1, 2)) == []


def test_an_output_that_fails_in_its_share_is_tried_again_with_the_time_left(monkeypatch):
    """Output 0 fails in its half of the time (as an output needing more than its share
    does); output 1 compiles quickly, and output 0 gets the rest and compiles (then each
    again, with the patience, in the time left)."""
    from runtime_skeleton.superopt import driver

    calls: list[tuple[int, float]] = []
    real = driver.compile_staged

    def flaky(target, module, opts, deadline):
        k = 0 if any(i.opcode == "dot" for i in module.entry_computation.instructions) else 1
        calls.append((k, deadline - budget.now()))
        if k == 0 and len(calls) == 1:
            raise CompileError("out of time")
        return real(target, module, opts, deadline)

    monkeypatch.setattr(driver, "compile_staged", flaky)
    res = driver.compile_parts(GEMMINI, load_kernel(GEMM_AND_ADD), CompileOptions(deterministic=True),
                                budget.after(60))
    assert [k for k, _ in calls] == [0, 1, 0, 0, 1] and calls[2][1] > calls[0][1]
    assert verify(GEMMINI, res) == []
    with pytest.raises(CompileError, match="output 0: out of time"):  # no more time than it had: not again
        calls.clear()
        monkeypatch.setattr(driver, "compile_staged", lambda *a: (_ for _ in ()).throw(CompileError("out of time")))
        driver.compile_parts(GEMMINI, load_kernel(GEMM_AND_ADD), CompileOptions(), budget.after(60))


def test_parts_with_their_tensors_at_the_top_of_hbm_are_sequenced(monkeypatch):
    """CP-SAT may put a part's inputs and outputs anywhere in HBM. They move to the whole
    kernel's tensors, so only a part's constants and scratch take room in the sequence
    (before, the parts were laid end to end up to their highest address: pad_reverse's
    output 1 on AMX, 29 blocks, needed 16.9 MB of HBM's 16 MB)."""
    import dataclasses

    from runtime_skeleton.layout import byte_size
    from runtime_skeleton.superopt import driver, sequence
    from runtime_skeleton.superopt.addressing import page

    real = driver.compile_staged

    def at_the_top(target, module, opts, deadline):
        res = real(target, module, opts, deadline)
        prog, top, regions = res.program, target.hbm.nbytes, []
        for d in prog.inputs + prog.outputs:  # each at the top of what the ones before left
            top -= page(byte_size(d.type))
            regions.append((d.offset, byte_size(d.type), (top, True)))
        decls = prog.inputs + prog.outputs
        moved = [dataclasses.replace(d, offset=base) for d, (_, _, (base, _)) in zip(decls, regions)]
        prog = dataclasses.replace(prog, inputs=moved[:len(prog.inputs)], outputs=moved[len(prog.inputs):],
                                   instructions=sequence._moved_items(target, prog.instructions, regions, 0, {}))
        return dataclasses.replace(res, program=prog)

    monkeypatch.setattr(driver, "compile_staged", at_the_top)
    res = driver.compile_parts(GEMMINI, load_kernel(GEMM_AND_ADD), CompileOptions(deterministic=True),
                                budget.after(60))
    assert max(d.offset for d in res.program.inputs + res.program.outputs) < 2**20
    assert verify(GEMMINI, res) == []


def test_the_whole_kernel_takes_the_direct_path_when_it_compiles():
    res = compile_module(GEMMINI, load_kernel(GEMM_AND_ADD), CompileOptions(deterministic=True))
    assert res.parts == () and verify(GEMMINI, res) == []


def test_an_output_no_instruction_computes_is_named():
    text = GEMM_AND_ADD.replace("s = s32[16,16]{1,0} add(bw, cw)", "s = s32[16,16]{1,0} remainder(bw, cw)")
    with pytest.raises(CompileError, match="output 1: .*remainder"):
        compile_parts(GEMMINI, load_kernel(text), CompileOptions(timeout=5), budget.after(5))


@pytest.mark.slow
def test_onednn_k5_compiles_whole():
    """oneDNN K5 (Act App. E): K1's int8 GEMM (Table 4's 16 AMX instructions) and an
    independent f32 chain requantized to u8 (vcvttps2dq, then vpmovusdb's unsigned
    saturation), as one straight-line program (before phase 1 left a dot's converted
    operands to the dot's cuts, it compiled one output at a time)."""
    res = compile_hlo(AMX, ROOT / "examples/kernels/amx_k5.hlo")
    assert verify(AMX, res, seeds=(0, 1, 2)) == []
    used = collections.Counter(i.name for i in res.program.flat())
    assert not res.parts and used["vpmovusdb"] == 3 and used["vcvttps2dq"] == 3
    assert {k: used[k] for k in ("tileloadd", "tilezero", "tdpbusd", "tilestored")} == dict.fromkeys(
        ("tileloadd", "tilezero", "tdpbusd", "tilestored"), 4)


def test_outputs_too_large_for_straight_line_code_get_a_small_e_graph_whole_then_their_parts(monkeypatch):
    """Two f32 sums over 16 rows of 16 on AMX: 17 register rows each, 34 together, more
    than phase 1 maps as straight-line code in time, so the whole tuple is tried with an
    eighth of phase 1's e-nodes only, then output by output."""
    from runtime_skeleton.superopt import driver

    text = """HloModule two_sums
red {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[16,16]{1,0} parameter(0)
  y = f32[16,16]{1,0} parameter(1)
  z = f32[] constant(0)
  rx = f32[16]{0} reduce(x, z), dimensions={0}, to_apply=red
  ry = f32[16]{0} reduce(y, z), dimensions={0}, to_apply=red
  ROOT t = (f32[16]{0}, f32[16]{0}) tuple(rx, ry)
}
"""

    tried = []

    def small_direct(target, module, opts, deadline):  # noqa: ANN001, ANN202
        tried.append(opts.phase1.max_nodes)
        raise CompileError("no pii graph within the small e-graph")

    monkeypatch.setattr(driver, "compile_direct", small_direct)
    monkeypatch.setattr(driver, "compile_parts", lambda *args: "parts")
    opts = CompileOptions()
    assert driver.compile_outputs(AMX, load_kernel(text), opts, budget.after(5)) == "parts"
    assert tried == [opts.phase1.max_nodes // driver.LARGE_TUPLE_NODES_DIVISOR]
