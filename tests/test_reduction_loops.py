"""Strided windows, in-place outputs, on-chip (resident) values and reduction
loops: the pieces that let a GEMM of any size compile into loop nests."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import generated.gemmini as gemmini
from runtime_skeleton import budget
from runtime_skeleton.compile import CompileOptions, compile_direct, compile_hlo, load_kernel, verify
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.npz_io import random_inputs
from runtime_skeleton.sim import cost
from runtime_skeleton.superopt import identity, strip
from runtime_skeleton.superopt.reduction import split
from runtime_skeleton.superopt.strip import NotTileable
from runtime_skeleton.superopt.windows import window, windowed


def gemm(m: int, k: int, n: int) -> str:
    return f"""HloModule gemm
ENTRY main {{
  a = s8[{m},{k}]{{1,0}} parameter(0)
  b = s8[{k},{n}]{{1,0}} parameter(1)
  ROOT d = s32[{m},{n}]{{1,0}} dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


def _compile(module, timeout: float = 20.0):  # noqa: ANN001

    return compile_direct(gemmini.TARGET, module, CompileOptions(timeout=timeout), budget.after(timeout))


def test_window_geometry():
    from runtime_skeleton.ir.types import TensorType
    from runtime_skeleton.ir.dtypes import DTYPES

    s32 = DTYPES["s32"]
    whole = TensorType(s32, (64, 32))
    assert window(whole, TensorType(s32, (16, 32))) is None  # whole rows: contiguous
    assert window(whole, TensorType(s32, (16, 16))) == (16, 64, 128)  # 16 rows of 64 bytes, 128 apart
    assert window(whole, TensorType(s32, (1, 16))) is None


def test_a_strided_output_is_written_in_place_and_verifies():
    """Columns 16..31 of an s32[16,32] product: a strided load of B and a strided
    store that keeps the other columns (the output takes the old window's place)."""
    tiling = strip(identity(load_kernel(gemm(16, 16, 32))), 16, "j", 1)
    module, places = windowed(tiling)
    assert module.output_alias == 2 and places[2].terms == (("j", 64),)
    res = _compile(module)
    assert verify(gemmini.TARGET, res) == []
    names = [c.name for c in res.program.flat()]
    assert "mvout_acc32" in names and res.program.outputs[0].offset == res.program.inputs[2].offset


def test_resident_values_stay_on_chip():
    """The three pieces of a reduction loop compile with the accumulator pinned at
    the start of the accumulator buffer and never stored in between."""
    tiling = strip(strip(identity(load_kernel(gemm(32, 64, 32))), 16, "i", 0), 16, "j", 1)
    s = split(tiling, 16, "k").on("acc")
    first = _compile(windowed(s.prologue)[0]).program
    body = _compile(windowed(s.body)[0]).program
    last = _compile(windowed(s.epilogue)[0]).program
    assert [c.name for c in body.flat()][-1] == "compute_ws_acc"
    assert body.instructions[-1].attrs["c_addr"] == 0 == first.instructions[-1].attrs["c_addr"]
    assert [c.name for c in last.flat()] == ["mvout_acc32"]
    assert not any(c.name.startswith("mvout") for c in list(first.flat()) + list(body.flat()))


def test_split_pieces_compute_the_kernel():
    """prologue, body for k = 1.., epilogue, evaluated by the reference: the kernel."""
    module = load_kernel(gemm(16, 64, 16))
    s = split(identity(module), 16, "k")
    x = random_inputs(module.parameter_types, 0)
    a, b = x

    acc = evaluate(s.prologue.tile, [a[:, :16], b[:16]])[0]
    for k in range(1, s.trips):
        acc = evaluate(s.body.tile, [acc, a[:, 16 * k:16 * k + 16], b[16 * k:16 * k + 16]])[0]
    (got,) = evaluate(s.epilogue.tile, [acc])
    np.testing.assert_array_equal(got, evaluate(module, x)[0])
    assert [p.terms for p in s.body.inputs[1:]] == [(("k", 16),), (("k", 256),)]  # A: 16 bytes, B: 16 rows


@pytest.mark.parametrize("kernel", ["dot", "max"])
def test_the_start_value_and_the_body_from_step_0_compute_the_kernel(kernel):
    """``Split.start`` puts out the accumulator before any step (a dot's 0, a reduce's
    constant init); the body then runs for every step, the prologue's included."""
    if kernel == "dot":
        module = load_kernel(gemm(16, 64, 16))
    else:
        module = load_kernel(reduce_kernel("maximum", "-inf", "4,6,3", "3", "0,1"))
    s = split(identity(module), 16 if kernel == "dot" else 2, "k")
    x = random_inputs(module.parameter_types, 0)
    (acc,) = evaluate(s.start.tile, [])
    for k in range(s.trips):
        if kernel == "dot":
            a, b = x
            acc = evaluate(s.body.tile, [acc, a[:, 16 * k:16 * k + 16], b[16 * k:16 * k + 16]])[0]
        else:
            acc = evaluate(s.body.tile, [acc, x[0][:, 2 * k:2 * k + 2]])[0]
    (got,) = evaluate(s.epilogue.tile, [acc])
    np.testing.assert_array_equal(got, evaluate(module, x)[0])


def test_a_reduce_with_a_computed_init_has_no_start_value():
    module = load_kernel("""HloModule r
red {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
ENTRY main {
  x = f32[4,6] parameter(0)
  z = f32[] parameter(1)
  ROOT r = f32[4] reduce(x, z), dimensions={1}, to_apply=red
}
""")
    assert split(identity(module), 2, "k").start is None


def test_a_prologue_not_found_gives_way_to_the_start_value(monkeypatch):
    """When the prologue does not map, the accumulator starts at 0 and the body runs from
    step 0: the program still verifies (an f32 GEMM row on AMX)."""
    import generated.amx as amx
    from runtime_skeleton.direct import CompileError
    from runtime_skeleton.superopt import tiled

    hlo = gemm(1, 64, 16).replace("s8[", "f32[").replace("s32[", "f32[")
    module = load_kernel(hlo)
    s = split(identity(module), 1, "k").on("zmm")
    piece = tiled._piece

    def no_prologue(target, tiling, *rest):  # noqa: ANN001, ANN202
        if tiling is s.prologue:
            raise CompileError("no prologue (the test)")
        return piece(target, tiling, *rest)

    monkeypatch.setattr(tiled, "_piece", no_prologue)
    found = tiled._split(amx.TARGET, s, CompileOptions(deterministic=True), budget.after(20))
    res = dataclasses.replace(found.tile, program=found.program, module=module)
    assert verify(amx.TARGET, res, seeds=(0, 1)) == []


def reduce_kernel(op: str, init: str, x: str, out: str, dims: str, dtype: str = "f32") -> str:
    return f"""HloModule r
red {{
  a = {dtype}[] parameter(0)
  b = {dtype}[] parameter(1)
  ROOT c = {dtype}[] {op}(a, b)
}}
ENTRY main {{
  x = {dtype}[{x}] parameter(0)
  z = {dtype}[] constant({init})
  ROOT r = {dtype}[{out}] reduce(x, z), dimensions={{{dims}}}, to_apply=red
}}
"""


@pytest.mark.parametrize("row", [1, 4])
@pytest.mark.parametrize("op,init,dtype", [("maximum", "-inf", "f32"), ("add", "0", "s32"), ("minimum", "7", "s32")])
def test_split_reduce_pieces_compute_the_kernel(op, init, dtype, row):
    """A reduce cut along its longest reduced dimension: the partial results combine with
    its reducer's op, in a flat accumulator (padded to whole rows of ``row`` elements);
    any init for max/min (idempotent)."""
    module = load_kernel(reduce_kernel(op, init, "4,6,3", "3", "0,1", dtype))
    s = split(identity(module), 2, "k", row)
    assert s.trips == 3 and s.body.tile.result_type.shape == ((3,) if row == 1 else (4,))
    (x,) = random_inputs(module.parameter_types, 0)
    acc = evaluate(s.prologue.tile, [x[:, :2]])[0]
    for k in range(1, s.trips):
        acc = evaluate(s.body.tile, [acc, x[:, 2 * k:2 * k + 2]])[0]
    (got,) = evaluate(s.epilogue.tile, [acc])
    np.testing.assert_array_equal(got, evaluate(module, [x])[0])


def test_a_reduce_over_two_axes_is_two_stages():
    """max over axes {1,2}: first over axis 1 (element-wise across registers), then over
    axis 2, the innermost in memory (gathered from HBM); the stages compute the kernel."""
    from runtime_skeleton.superopt.reduction import chained
    from runtime_skeleton.superopt.stages import reduce_stage_plan

    module = load_kernel(reduce_kernel("maximum", "-inf", "4,6,8", "4", "1,2"))
    cut = chained(module)
    reduces = [i for i in cut.entry_computation.instructions if i.opcode == "reduce"]
    assert [(i.attrs["dimensions"], i.tensor_type.shape) for i in reduces] == [((1,), (4, 8)), ((1,), (4,))]
    x = random_inputs(module.parameter_types, 0)
    np.testing.assert_array_equal(evaluate(cut, x)[0], evaluate(module, x)[0])
    plan = reduce_stage_plan(module)
    assert plan is not None and len(plan.parts) == 2
    (mid,) = evaluate(plan.parts[0].module, x)
    np.testing.assert_array_equal(evaluate(plan.parts[1].module, [mid])[0], evaluate(module, x)[0])
    assert reduce_stage_plan(load_kernel(reduce_kernel("maximum", "-inf", "4,6,8", "4,8", "1"))) is None


def test_a_reduce_whose_parts_do_not_combine_is_not_split():
    """An add whose init is not zero would be counted once per step; a reducer that is
    not one binary op has no combine."""
    from runtime_skeleton.superopt.reduction import contraction

    assert contraction(load_kernel(reduce_kernel("add", "1", "4,6", "4", "1", "s32"))) is None
    assert contraction(load_kernel(reduce_kernel("add", "0", "4,6", "4", "1", "s32"))) is not None
    with pytest.raises(NotTileable):
        split(identity(load_kernel(reduce_kernel("add", "1", "4,6", "4", "1", "s32"))), 2, "k")


def test_a_long_f32_sum_on_amx_is_a_loop_of_vector_adds():
    """16 rows of 16 floats summed: a reduction loop whose accumulator stays in a zmm
    register (one load and one vaddps a step)."""
    import generated.amx as amx

    res = compile_hlo(amx.TARGET, reduce_kernel("add", "0", "16,16", "16", "0"),
                      CompileOptions(timeout=20, direct_share=0.05, deterministic=True))
    assert res.split is not None and res.split.buffer == "zmm"
    assert verify(amx.TARGET, res) == []
    assert res.program.executed() == 32 and "vaddps" in {c.name for c in res.program.flat()}


@pytest.mark.slow  # the whole kernel's and its natural blocks' straight-line attempts come first
def test_an_accumulator_narrower_than_a_register_is_padded():
    """A min over the middle axis of f32[2,16,8]: each strip's accumulator is 8 floats,
    half a zmm register. Padded with zeros to 16, it is one masked load, then a loop of
    masked loads and full-register vminps, then one masked store (before: "f32[8] is
    not whole rows of zmm", and no program in 60 s)."""
    import generated.amx as amx

    res = compile_hlo(amx.TARGET, reduce_kernel("minimum", "inf", "2,16,8", "2,8", "1"),
                      CompileOptions(timeout=30, direct_share=0.05, deterministic=True))
    assert verify(amx.TARGET, res, seeds=(0, 1)) == []
    assert res.split is not None and res.split.buffer == "zmm"
    assert res.split.body.tile.result_type.shape == (16,)
    assert "vminps" in {c.name for c in res.program.flat()}


def test_a_reduction_loop_on_vectors_tries_steps_of_one_row_first():
    """No AMX instruction reduces (its semantics have no reduce): a step of a reduction
    loop is one vector op, so among the splits the one of single steps comes first."""
    import generated.amx as amx
    from runtime_skeleton.superopt.reduction import Split
    from runtime_skeleton.superopt.tiled import _options, _preferred

    ctx = identity(load_kernel(reduce_kernel("add", "0", "16,64", "16", "1", "s32")))
    options, _ = _options(amx.TARGET, ctx, 0)
    splits = [o for o in _preferred(amx.TARGET, ctx.tile, options) if isinstance(o, Split)]
    assert splits and splits[0].trips == 64


@pytest.mark.parametrize("shape", [(32, 32, 32), pytest.param((48, 64, 32), marks=pytest.mark.slow)])
def test_gemm_compiles_into_loops_with_an_on_chip_reduction_and_verifies(shape, loops_only):
    res = compile_hlo(gemmini.TARGET, gemm(*shape), CompileOptions(timeout=30, direct_share=0.05))
    assert res.split is not None  # (48x64x32 keeps its double-buffered program, which has no loop left)
    assert verify(gemmini.TARGET, res) == []
    text = res.describe_loops()
    assert "reduction loop" in text and "accumulating in" in text
    # double-buffered: alternate iterations load into other scratchpad rows
    assert len({c.attrs["sp_addr"] for c in res.program.flat() if c.name == "mvin"}) > 2


MLP_LAYER = """HloModule mlp
ENTRY main {
  a = s8[32,64]{1,0} parameter(0)
  b = s8[64,32]{1,0} parameter(1)
  bias = s32[32]{0} parameter(2)
  d = s32[32,32]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = s32[32,32]{1,0} broadcast(bias), dimensions={1}
  s = s32[32,32]{1,0} add(d, bb)
  lo = s32[] constant(0)
  hi = s32[] constant(127)
  c = s32[32,32]{1,0} clamp(lo, s, hi)
  ROOT r = s8[32,32]{1,0} convert(c)
}"""


def test_an_int8_mlp_layer_fuses_bias_relu_and_requantize_into_the_epilogue(loops_only):
    """bias, ReLU and the int8 saturation after the product happen on the way out of
    the accumulator (Gemmini: the bias row added to every accumulator row by a
    stride-0 mvin, then mvout_relu), not in HBM."""
    res = compile_hlo(gemmini.TARGET, MLP_LAYER, CompileOptions(timeout=40, direct_share=0.05))
    assert res.split is not None
    assert verify(gemmini.TARGET, res) == []
    assert {"mvin_acc_add_bcast", "mvout_relu"} <= {c.name for c in res.program.flat()}


def test_large_loop_programs_are_timed_by_extrapolation():
    res = compile_hlo(gemmini.TARGET, gemm(64, 32, 64), CompileOptions(timeout=30, direct_share=0.05))
    prog = res.program
    exact = cost.time_program(gemmini.TARGET, prog).cycles
    limit = cost.EXTRAPOLATE_ABOVE
    try:
        cost.EXTRAPOLATE_ABOVE = 10
        estimate = cost.cycles(gemmini.TARGET, prog)
    finally:
        cost.EXTRAPOLATE_ABOVE = limit
    assert abs(estimate - exact) <= 0.1 * exact


def test_an_f32_gemm_on_amx_accumulates_in_a_vector_register():
    """AMX has no f32 matrix instruction: rows of 16 floats accumulate in a zmm register,
    one broadcast-multiply-add per step of the contraction. Its first program comes after
    6-9 s alone on a 2-core machine (also before 2026-11-27's phase-1 changes); at 15 s the
    CI run of f5f93fa, in the full suite, found none: 20 s leaves a margin."""
    import generated.amx as amx

    hlo = gemm(32, 32, 32).replace("s8[", "f32[").replace("s32[", "f32[")
    res = compile_hlo(amx.TARGET, hlo, CompileOptions(timeout=20, direct_share=0.05))
    # loops over row tiles of one register each; the contraction is a reduction loop in zmm
    # or, where its steps are cheaper unrolled, straight-line code in the loop body
    assert res.tiling is not None and res.tiling.tile.result_type.shape == (1, 16)
    assert res.split is None or res.split.buffer == "zmm"
    assert verify(amx.TARGET, res) == []
    assert "vfmadd231ps" in {c.name for c in res.program.flat()}


def test_an_int8_gemm_on_amx_accumulates_in_a_tile_with_vnni_weights():
    """u8 x s8 on AMX with B in oneDNN's blocked VNNI layout {1,0:T(16,4)}: the layout is
    cut into whole 16 x 64-byte tiles (Axe: a box of the tiled layout is a window of its
    own layout), and the s32 accumulator lives in a byte tile as its bytes."""
    import generated.amx as amx

    hlo = """HloModule u8s8
ENTRY main {
  a = u8[32,128]{1,0} parameter(0)
  b = s8[32,128]{1,0:T(16,4)} parameter(1)
  a32 = s32[32,128]{1,0} convert(a)
  bt = s8[128,32]{1,0} transpose(b), dimensions={1,0}
  b32 = s32[128,32]{1,0} convert(bt)
  ROOT d = s32[32,32]{1,0} dot(a32, b32), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""

    from runtime_skeleton.compile import CompileResult
    from runtime_skeleton.superopt.tiled import _split

    # the loop nest built by hand: the search may prefer another (since phase 1 got faster,
    # loops over s32[16,32] tiles of straight-line code, 355 cycles against this one's 424)
    module = load_kernel(hlo)
    tiles = strip(strip(identity(module), 16, "i", 0), 16, "j", 1)
    s = split(tiles, 64, "k", 16).on("tmm")
    assert s.trips == 2 and s.epilogue.tile.result_type.shape == (16, 16)
    found = _split(amx.TARGET, s, CompileOptions(timeout=40), budget.after(40))
    res = CompileResult(found.program, found.cost, found.tile.pii_graph, found.tile.allocation, found.tile.stats,
                        module, found.tiling, found.split)
    assert verify(amx.TARGET, res) == []
    assert "tdpbusd" in {c.name for c in res.program.flat()}
    # and the compiler's own choice verifies too
    best = compile_hlo(amx.TARGET, hlo, CompileOptions(timeout=40, direct_share=0.05))
    assert verify(amx.TARGET, best) == []


BATCH_OF_ONE = """HloModule bm
ENTRY main {{
  a = {t}[1,16,32]{{2,1,0}} parameter(0)
  b = {t}[1,32,16]{{2,1,0}} parameter(1)
  ROOT d = {r}[1,16,16]{{2,1,0}} dot(a, b), lhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, rhs_batch_dims={{0}}, rhs_contracting_dims={{1}}
}}"""


def test_a_batch_of_one_is_a_plain_matmul():
    """The tile of a batched matmul cut along its batch (dot-unit-batch): Gemmini's array
    computes it straight away."""
    res = _compile(load_kernel(BATCH_OF_ONE.format(t="s8", r="s32")))
    assert verify(gemmini.TARGET, res) == []
    assert "compute_ws" in {c.name for c in res.program.flat()}


def test_a_batched_tile_is_kept_in_its_buffer_as_rows():
    """A tile f32[1, 1, 16] of a batched kernel accumulating in a zmm register is the
    register's row f32[1, 16] (bflat.resident_type), so the reduction loop's body is one
    vector FMA, as for a 2-D GEMM."""

    import generated.amx as amx
    from runtime_skeleton.ir.dtypes import DTYPES
    from runtime_skeleton.ir.types import TensorType
    from runtime_skeleton.isel.bflat import resident_type

    f32, s32 = DTYPES["f32"], DTYPES["s32"]
    zmm, acc = amx.TARGET.buffers["zmm"], gemmini.TARGET.buffers["acc"]
    assert resident_type(zmm, TensorType(f32, (1, 1, 16))) == TensorType(f32, (1, 16))
    assert resident_type(zmm, TensorType(f32, (1, 16))) == TensorType(f32, (1, 16))
    assert resident_type(acc, TensorType(s32, (1, 16, 16))) == TensorType(s32, (16, 16))

    module = load_kernel(BATCH_OF_ONE.format(t="f32", r="f32"))
    body = split(strip(identity(module), 1, "i", 1), 1, "k").on("zmm").body
    res = compile_direct(amx.TARGET, windowed(body)[0], CompileOptions(timeout=20), budget.after(20))
    assert [c.name for c in res.program.flat()] == ["vbroadcastss", "vmovups_load", "vfmadd231ps"]


@pytest.mark.slow
def test_a_batched_int8_matmul_compiles_batch_by_batch(loops_only):
    """examples/kernels/batched_matmul_i8: a loop over the batch, each tile a plain matmul
    (straight-line code is cheaper and found first since 2026-11-28: ``loops_only``)."""
    from pathlib import Path

    kernel = Path(__file__).resolve().parent.parent / "examples/kernels/batched_matmul_i8.hlo"
    res = compile_hlo(gemmini.TARGET, kernel, CompileOptions(deterministic=True))
    assert res.tiling is not None and verify(gemmini.TARGET, res) == []


def test_a_reduce_on_vectors_tries_its_reduction_loop_before_straight_line_code(monkeypatch):
    """An f32 row max on AMX: the loop accumulating in zmm comes first; the straight-line
    attempt follows with ``patience`` times what it took, and the cheaper is kept: now the
    straight-line maxima of the columns, gathered by tile moves (264 cycles; the loop 448)."""

    import generated.amx as amx
    from runtime_skeleton.superopt import tiled

    tried = []
    evaluate = tiled._evaluate

    def spy(target, ctx, option, *rest):  # noqa: ANN001, ANN202
        tried.append(option)
        return evaluate(target, ctx, option, *rest)

    monkeypatch.setattr(tiled, "_evaluate", spy)
    module = load_kernel(reduce_kernel("maximum", "-inf", "16,8", "16", "1"))
    res = tiled.compile_tiled(amx.TARGET, module, CompileOptions(deterministic=True), budget.after(30))
    assert tried[0] is not tiled.DIRECT and tried[0].buffer == "zmm" and tiled.DIRECT in tried
    assert verify(amx.TARGET, res, seeds=(0, 1)) == []


def test_a_reduction_loop_gives_its_body_half_of_the_time(monkeypatch):
    """The body is compiled first, with half of the time to the deadline; the prologue gets
    half of what is left and the epilogue the rest."""
    from runtime_skeleton.superopt import tiled

    s = split(identity(load_kernel(reduce_kernel("add", "0", "4,6,3", "3", "0,1"))), 2, "k", 1)
    asked = []

    def piece(target, tiling, opts, deadline, loop=None):  # noqa: ANN001, ANN202
        asked.append((tiling, deadline - budget.now()))
        budget.spend_seconds(1.0)  # each piece takes a work-second
        return None, None

    monkeypatch.setattr(tiled, "_piece", piece)
    monkeypatch.setattr(tiled, "_whole", lambda *a: (None, 0.0, ()))
    tiled._split(gemmini.TARGET, s, CompileOptions(), budget.after(9.0))
    assert [t for t, _ in asked] == [s.body, s.prologue, s.epilogue]
    assert [round(left, 6) for _, left in asked] == [4.5, 4.0, 7.0]
