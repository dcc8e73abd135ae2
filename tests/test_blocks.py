"""A kernel whose result is a concatenation, compiled block by block (superopt.blocks)."""
from __future__ import annotations

import pytest

from runtime_skeleton.compile import CompileOptions, compile_module, load_kernel, verify
from runtime_skeleton.superopt.blocks import block_plan

from generated.amx import TARGET as AMX


def _halves_swapped(rows: int, cols: int, layout: str = "{1,0}", dim: int = 0) -> str:
    half = rows // 2 if dim == 0 else cols // 2
    shape = (half, cols) if dim == 0 else (rows, half)
    lo = f"[0:{half}], [0:{cols}]" if dim == 0 else f"[0:{rows}], [0:{half}]"
    hi = f"[{half}:{rows}], [0:{cols}]" if dim == 0 else f"[0:{rows}], [{half}:{cols}]"
    return f"""HloModule swap
ENTRY main {{
  x = f32[{rows},{cols}]{layout} parameter(0)
  a = f32[{shape[0]},{shape[1]}]{layout} slice(x), slice={{{hi}}}
  b = f32[{shape[0]},{shape[1]}]{layout} slice(x), slice={{{lo}}}
  ROOT c = f32[{rows},{cols}]{layout} concatenate(a, b), dimensions={{{dim}}}
}}
"""


def test_blocks_of_the_outermost_dimension_are_byte_ranges():
    plan = block_plan(load_kernel(_halves_swapped(16, 16)))
    assert plan is not None and plan.kind == "block"
    assert [p.at for p in plan.parts] == [(0,), (8 * 16 * 4,)]
    assert [p.reads for p in plan.parts] == [(0,), (0,)] and plan.outputs == (1,)
    assert all(p.module.output_written for p in plan.parts)


@pytest.mark.parametrize("layout,dim,blocks", [("{1,0}", 1, False), ("{0,1}", 1, True), ("{0,1}", 0, False)])
def test_blocks_must_be_contiguous_in_the_output_layout(layout, dim, blocks):
    """Along a dimension that is not the outermost in memory, a block is strided."""
    assert (block_plan(load_kernel(_halves_swapped(16, 16, layout, dim))) is not None) == blocks


def test_a_root_that_is_no_concatenation_has_no_blocks():
    kernel = """HloModule add
ENTRY main {
  x = f32[2,16]{1,0} parameter(0)
  ROOT y = f32[2,16]{1,0} add(x, x)
}
"""
    assert block_plan(load_kernel(kernel)) is None


def test_row_halves_swapped_compile_whole_in_tiles_of_eight_rows():
    """Sixteen f32 rows with their halves swapped. Until 2026-11-27 phase 1 reached its node
    limit on the whole kernel (every 16-row tile of the result straddles the halves), and it
    compiled block by block (two row copies, 34 s). Now a tile of 8 rows is the leading
    rows of a 16-row tile load (``leading-rows:tileloadd``): one tileloadd and one
    tilestored per half, straight-line. The blocks remain its fallback; the padded kernels
    below still need them."""
    module = load_kernel(_halves_swapped(16, 16))
    res = compile_module(AMX, module, CompileOptions(deterministic=True, timeout=40))
    assert res.part_kind == "" and sorted(i.name for i in res.program.flat()) == ["tileloadd"] * 2 + ["tilestored"] * 2
    assert {i.attrs["rows"] for i in res.program.flat()} == {8}
    assert verify(AMX, res, seeds=(0, 1)) == []
    assert block_plan(module) is not None


def _padded(rows: int, cols: int, padding: str) -> str:
    return f"""HloModule padded
ENTRY main {{
  x = f32[{rows},{cols}]{{1,0}} parameter(0)
  v = f32[] constant(-1)
  ROOT p = f32[{{shape}}]{{1,0}} pad(x, v), padding={padding}
}}
"""


@pytest.mark.parametrize("padding,shape,blocks", [("1_2x3_0", "7,11", True), ("2_-3_1x0_0", "6,8", True),
                                                  ("-1_0x1_1", "3,10", False), ("0_0x2_1", "4,11", False)])
def test_a_root_pad_is_a_concatenation_of_its_runs(padding, shape, blocks):
    """Along the first padded dimension a pad is runs of padding and of the operand (one
    row each when the padding is interior; negative padding drops rows), the operand
    padded along the others: the cut kernel computes the same. It is blocks when that
    dimension is the outermost and has two runs or more (x[1:4] alone is no concatenation)."""
    import numpy as np

    from runtime_skeleton.reference import evaluate
    from runtime_skeleton.reference.npz_io import random_inputs
    from runtime_skeleton.superopt.blocks import _pad_as_concat

    module = load_kernel(_padded(4, 8, padding).replace("{shape}", shape))
    cut = _pad_as_concat(module)
    x = random_inputs(module.parameter_types, 0)
    np.testing.assert_array_equal(evaluate(cut, x)[0], evaluate(module, x)[0])
    assert (block_plan(module) is not None) == blocks


def test_rows_padded_with_leading_zeros_compile_block_by_block():
    """Rows of 35 floats whose first three are padding: the padding rows above and below
    are blocks of their own, and the rows between are strips (no strip of the whole pad
    is, its rows are partly padding), each a masked store of three padding floats and
    stores of x's row 12 bytes into it."""
    res = compile_module(AMX, load_kernel(_padded(4, 32, "1_1x3_0").replace("{shape}", "6,35")),
                         CompileOptions(deterministic=True, timeout=30))
    assert res.part_kind == "block" and len(res.parts) == 3
    assert verify(AMX, res, seeds=(0, 1)) == []


def test_equal_blocks_compile_once():
    """Rows of x with a padding row between each two: the three padding rows are the same
    kernel, compiled once, its program run at each row's place."""
    res = compile_module(AMX, load_kernel(_padded(4, 16, "0_0_1x0_0").replace("{shape}", "7,16")),
                         CompileOptions(deterministic=True, timeout=30))
    assert res.part_kind == "block" and len(res.parts) == 7
    assert res.parts[1] is res.parts[3] is res.parts[5] and res.parts[0] is not res.parts[2]
    assert verify(AMX, res, seeds=(0, 1)) == []
