"""Kernels cut into stages at their contractions and compiled as programs in sequence
(superopt.stages over superopt.sequence)."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

from runtime_skeleton import budget
from runtime_skeleton.compile import CompileError, CompileOptions, compile_module, load_kernel, verify
from runtime_skeleton.fuzz.gen import random_kernel
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.npz_io import random_inputs
from runtime_skeleton.superopt.sequence import compile_plan
from runtime_skeleton.superopt.driver import compile_stage
from runtime_skeleton.superopt.stages import (isolated_numbers, isolated_plan, moved_apart, piece_numbers, piece_plan,
                                             replicated, stage_numbers, stage_plan)

from generated.amx import TARGET as AMX
from generated.gemmini import TARGET as GEMMINI

ROOT = pathlib.Path(__file__).resolve().parent.parent


def two_layers(m: int, k: int, h: int, n: int) -> str:
    """An int8 MLP of two layers: relu(x.W1 + b1) saturated to int8, then .W2."""
    return f"""HloModule mlp2
ENTRY main {{
  x = s8[{m},{k}]{{1,0}} parameter(0)
  w1 = s8[{k},{h}]{{1,0}} parameter(1)
  b1 = s32[{h}]{{0}} parameter(2)
  w2 = s8[{h},{n}]{{1,0}} parameter(3)
  d = s32[{m},{h}]{{1,0}} dot(x, w1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  bb = s32[{m},{h}]{{1,0}} broadcast(b1), dimensions={{1}}
  s = s32[{m},{h}]{{1,0}} add(d, bb)
  lo = s32[] constant(0)
  hi = s32[] constant(127)
  c = s32[{m},{h}]{{1,0}} clamp(lo, s, hi)
  act = s8[{m},{h}]{{1,0}} convert(c)
  ROOT y = s32[{m},{n}]{{1,0}} dot(act, w2), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


def run_plan(plan, inputs):
    """The plan's parts evaluated one after the other by the reference interpreter."""
    tensors = dict(enumerate(inputs))
    for part in plan.parts:
        got = evaluate(part.module, [tensors[i] for i in part.reads])
        tensors.update(zip(part.writes, got))
    return [tensors[i] for i in plan.outputs]


def test_stages_follow_the_contractions():
    comp = load_kernel(two_layers(16, 16, 16, 16)).entry_computation
    stage = stage_numbers(comp)
    assert stage == {"d": 1, "bb": 1, "s": 1, "c": 1, "act": 1, "y": 2}  # epilogue with its dot, no stage for lo/hi
    plan = stage_plan(load_kernel(two_layers(16, 16, 16, 16)))
    assert [p.reads for p in plan.parts] == [(0, 1, 2), (3, 5)]  # stage 2 reads w2 and act (tensor 5)
    assert [p.writes for p in plan.parts] == [(5,), (4,)] and plan.outputs == (4,)


@pytest.mark.parametrize("source", ["gemm_i8_bias_requant", "gemmini_apb_times_c", "gemmini_ab_plus_ac"])
def test_contractions_side_by_side_are_one_stage(source):
    assert stage_plan(load_kernel(ROOT / f"examples/kernels/{source}.hlo")) is None


@pytest.mark.parametrize("source", ["gemmini_abc", "gemmini_abcd", "gemmini_abc_plus_a", "gemmini_abc_plus_d",
                                    "attention_f32"])
def test_stages_in_sequence_compute_the_kernel(source):
    module = load_kernel(ROOT / f"examples/kernels/{source}.hlo")
    plan = stage_plan(module)
    assert plan is not None and len(plan.parts) >= 2
    x = random_inputs(module.parameter_types, 5)
    for got, want in zip(run_plan(plan, x), evaluate(module, x)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("target", ["gemmini", "amx"])
def test_fuzz_kernels_in_stages_compute_the_kernel(target):
    """Random DAGs: a stage never reads a value a later stage makes, and the stages in
    sequence compute what the kernel does."""
    staged = 0
    for seed in range(100):  # until five staged kernels are checked (about one in five is staged)
        if staged == 5:
            break
        module = load_kernel(random_kernel(target, seed, max_nodes=60))
        plan = stage_plan(module)
        if plan is None:
            assert max(stage_numbers(module.entry_computation).values(), default=1) <= 1
            continue
        staged += 1
        made = set(range(plan.n_inputs))
        for part in plan.parts:
            assert set(part.reads) <= made
            made |= set(part.writes)
        x = random_inputs(module.parameter_types, seed)
        for got, want in zip(run_plan(plan, x), evaluate(module, x)):
            np.testing.assert_array_equal(got, want)
    assert staged >= 5


def test_two_layers_compile_in_two_stages():
    module = load_kernel(two_layers(16, 32, 32, 16))
    res = compile_plan(GEMMINI, module, stage_plan(module), compile_stage, CompileOptions(deterministic=True),
                       budget.after(120))
    assert res.part_kind == "stage" and len(res.parts) == 2
    assert res.describe_loops().startswith("stage 0: ") and "stage 1: " in res.describe_loops()
    assert [d.name for d in res.program.inputs] == ["arg0", "arg1", "arg2", "arg3"]
    assert res.program.executed() == sum(p.program.executed() for p in res.parts)
    assert verify(GEMMINI, res, seeds=(0, 1, 2)) == []


def test_a_stage_that_does_not_compile_is_named():
    # Gemmini narrows to int8 only saturating from below (mvout's clamp from -128 or 0): a
    # minimum at 127 followed by XLA's wrapping convert has no pii graph, yet every operator
    # and bound in it is one Gemmini has, so it is not refused before the search
    # (tests/test_obstacles.py)
    text = two_layers(16, 16, 16, 16).replace(
        "c = s32[16,16]{1,0} clamp(lo, s, hi)",
        "hb = s32[16,16]{1,0} broadcast(hi), dimensions={}\n  c = s32[16,16]{1,0} minimum(s, hb)")
    with pytest.raises(CompileError, match="in stages: stage 0: "):
        compile_module(GEMMINI, load_kernel(text), CompileOptions(timeout=8))


REUSE = """HloModule reuse
ENTRY main {
  a = s8[16,16]{1,0} parameter(0)
  b = s8[16,32]{1,0} parameter(1)
  c = s32[16,32]{1,0} parameter(2)
  d = s32[16,32]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  k = s32[] constant(-1)
  kb = s32[16,32]{1,0} broadcast(k), dimensions={}
  e = s32[16,32]{1,0} add(d, kb)
  f = s32[16,32]{1,0} add(e, c)
  g = s32[16,32]{1,0} add(f, d)
  ROOT h = s32[16,32]{1,0} add(g, g)
}
"""


def test_pieces_are_trees_ending_at_values_used_twice():
    comp = load_kernel(REUSE).entry_computation
    piece = piece_numbers(comp)
    # d has two users; g has one (that reads it twice); constants and parameters belong to none
    assert piece == {"d": 1, "e": 2, "f": 2, "g": 2, "h": 2}
    plan = piece_plan(load_kernel(REUSE))
    assert [p.module.entry_computation.root for p in plan.parts] == ["d", "h"]
    assert plan.parts[1].reads == (2, 4) and plan.parts[1].writes == (3,)  # c and d's tensor; the output


def test_pieces_in_sequence_compute_the_kernel():
    module = load_kernel(REUSE)
    res = compile_plan(GEMMINI, module, piece_plan(module), compile_stage, CompileOptions(deterministic=True),
                       budget.after(120))
    assert res.part_kind == "piece" and len(res.parts) == 2
    assert verify(GEMMINI, res, seeds=(0, 1)) == []


BROADCAST_SUM = """HloModule bsum
ENTRY main {
  a = s32[16]{0} parameter(0)
  b = s32[16]{0} parameter(1)
  c = s32[16]{0} parameter(2)
  s = s32[16]{0} add(a, b)
  t = s32[16]{0} add(s, c)
  wide = s32[32,16]{1,0} broadcast(t), dimensions={1}
  pb = s32[32,16]{1,0} broadcast(a), dimensions={1}
  ROOT r = s32[32,16]{1,0} add(wide, pb)
}
"""


def test_a_broadcast_value_ends_a_piece():
    """Strips of a broadcast would compute its operand again in every iteration: the
    operand is computed once, in a piece of its own (a broadcast parameter is no piece)."""
    comp = load_kernel(BROADCAST_SUM).entry_computation
    assert replicated(comp) == {"t"}
    assert piece_numbers(comp) == {"s": 1, "t": 1, "wide": 2, "pb": 2, "r": 2}



def test_each_part_gets_a_first_program_before_any_is_improved():
    """compile_plan compiles every part to its first program (no patience), then each again
    with the patience in the time left, and keeps the cheaper: a part found early no longer
    spends its whole share improving while a later one runs out of time."""
    import dataclasses

    module = load_kernel(two_layers(16, 32, 32, 16))
    plan = stage_plan(module)
    calls, firsts = [], {}

    def one(target, kernel, opts, deadline):  # noqa: ANN001, ANN202
        part = next(k for k, p in enumerate(plan.parts) if p.module == kernel)
        calls.append((part, opts.patience))
        res = compile_stage(target, kernel, opts, deadline)
        if opts.patience == 0:
            firsts[part] = res.cost
            return res
        return dataclasses.replace(res, cost=firsts[part] + (-1 if part == 0 else 1))  # 0 improves, 1 does not

    res = compile_plan(GEMMINI, module, plan, one, CompileOptions(deterministic=True), budget.after(120))
    assert calls == [(0, 0.0), (1, 0.0), (0, 2.0), (1, 2.0)]
    assert [p.cost for p in res.parts] == [firsts[0] - 1, firsts[1]]
    assert verify(GEMMINI, res) == []


REVERSES = """HloModule reverses
ENTRY main {
  a = s32[16]{0} parameter(0)
  b = s32[16]{0} parameter(1)
  n = s32[16]{0} negate(a)
  m = s32[16]{0} minimum(n, b)
  r1 = s32[16]{0} reverse(m), dimensions={0}
  r2 = s32[16]{0} reverse(b), dimensions={0}
  s = s32[16]{0} add(r1, r2)
  r3 = s32[16]{0} reverse(s), dimensions={0}
  ROOT t = s32[16]{0} subtract(r3, r1)
}
"""


def test_isolated_operators_get_parts_of_their_own():
    """Each reverse alone in a part, after what it reads; the other instructions between them."""
    comp = load_kernel(REVERSES).entry_computation
    part = isolated_numbers(comp, frozenset({"reverse"}))
    assert part == {"n": 1, "m": 1, "r1": 2, "r2": 3, "s": 4, "r3": 5, "t": 6}  # n, m as late as they can be
    assert isolated_plan(load_kernel(REVERSES), frozenset({"dot"})) is None


def test_isolated_reverses_compile_once_and_compute_the_kernel():
    """In isolated stages, the plan computes the kernel. Compiled for AMX (no instruction
    reverses), the reverses first move to the inputs (ir.reverses: r3 cancels r1's and
    r2's), leaving reverse(a) and reverse(b): the same kernel, its names aside, compiled once."""
    module = load_kernel(REVERSES)
    plan = isolated_plan(module, frozenset({"reverse"}))
    x = random_inputs(module.parameter_types, 3)
    for got, want in zip(run_plan(plan, x), evaluate(module, x)):
        np.testing.assert_array_equal(got, want)
    res = compile_module(AMX, module, CompileOptions(timeout=60, deterministic=True))
    assert res.part_kind == "isolated stage" and len(res.parts) == 3
    reverses = [p.program for p in res.parts if p.module.entry_computation.root_instruction.opcode == "reverse"]
    assert len(reverses) == 2 and reverses[0] is reverses[1]
    assert verify(AMX, res, seeds=(0, 1)) == []


REDUCE_DOT = """HloModule reduce_dot
add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  a = f32[16,16,32]{2,1,0} parameter(0)
  w = f32[16,16]{1,0} parameter(1)
  zero = f32[] constant(0)
  r = f32[16,32]{1,0} reduce(a, zero), dimensions={1}, to_apply=add_f32
  d = f32[16,32]{1,0} dot(w, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT n = f32[16,32]{1,0} negate(d)
}
"""


def test_a_reduce_a_contraction_reads_is_a_stage_of_its_own():
    """A dot of a sum over a middle dimension: the reduction loop, then the dot's loop nest,
    each a stage (not one loop nest for both); the stages compute the kernel."""
    from runtime_skeleton.superopt.stages import reduce_stage_plan

    module = load_kernel(REDUCE_DOT)
    plan = reduce_stage_plan(module)
    assert plan is not None and [p.module.entry_computation.root for p in plan.parts] == ["r", "n"]
    x = random_inputs(module.parameter_types, 2)
    np.testing.assert_array_equal(run_plan(plan, x)[0], evaluate(module, x)[0])
    no_dot = load_kernel(REDUCE_DOT.replace("dot(w, r), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
                                            "negate(r)"))
    assert reduce_stage_plan(no_dot) is None


WIDENED_REVERSE = """HloModule k
ENTRY e {
  a = s8[16,16]{1,0} parameter(0)
  c = s32[16,16]{1,0} convert(a)
  ROOT r = s32[16,16]{1,0} reverse(c), dimensions={DIMS}
}
"""


@pytest.mark.parametrize("dims, apart", [("1", False), ("0", True), ("0,1", True)])
def test_a_column_reverse_of_widened_bytes_is_left_to_a_matmul_on_gemmini(dims, apart):
    """Gemmini's array reads int8: reverse-as-dot makes the columns' reverse of s32 values of int8
    ones one matmul by a reversed identity where it stands. Rows are moved apart (each a move of a
    row); so is a reverse along both (J . x . J has no program); on AMX, whose tile dots read bytes
    too, the same."""
    module = load_kernel(WIDENED_REVERSE.replace("DIMS", dims))
    assert bool(moved_apart(GEMMINI, module)) == apart
    assert bool(moved_apart(AMX, module)) == apart
    if dims == "1":
        res = compile_module(GEMMINI, module, CompileOptions(timeout=20))
        assert not verify(GEMMINI, res)
        assert [i.name for i in res.program.instructions].count("compute_ws") == 1
        assert len(res.program.instructions) == 5


def test_a_column_reverse_of_s32_values_goes_through_the_int8_array_as_bytes_on_gemmini():
    """No Gemmini instruction moves one s32 lane, and s32 values are no int8: the columns'
    reverse is the bytes' reverse, an int8 matmul by a 0/1 matrix (reverse-as-byte-dot),
    stored back through the clamp of an mvout that cannot clip a byte (before: no program)."""
    module = load_kernel("HloModule k\nENTRY e {\n  a = s32[16,16]{1,0} parameter(0)\n"
                         "  ROOT r = s32[16,16]{1,0} reverse(a), dimensions={1}\n}\n")
    res = compile_module(GEMMINI, module, CompileOptions(timeout=20))
    assert not verify(GEMMINI, res)
    assert {"compute_ws", "compute_os"} & {i.name for i in res.program.instructions}


def test_a_vector_reverse_of_s32_values_is_one_row_of_bytes_through_the_int8_array_on_gemmini():
    """A reverse of a 1-D s32 vector is the byte reverse of one row (reverse-as-byte-dot reads a
    vector as a row; before: its 16 lanes were cut to moves of single elements, which no Gemmini
    store writes, and the e-graph filled up without a program)."""
    module = load_kernel("HloModule k\nENTRY e {\n  a = s32[32]{0} parameter(0)\n"
                         "  ROOT r = s32[32]{0} reverse(a), dimensions={0}\n}\n")
    res = compile_module(GEMMINI, module, CompileOptions(timeout=20))
    assert not verify(GEMMINI, res)
    assert {"compute_ws", "compute_os"} & {i.name for i in res.program.instructions}
