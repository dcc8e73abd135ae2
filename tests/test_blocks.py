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


def test_row_halves_swapped_compile_block_by_block():
    """Sixteen f32 rows with their halves swapped: as one kernel, phase 1 reaches its node
    limit in 60 s (every 16-row tile of the result straddles the halves); block by block
    each half is a copy of eight rows of the input into its place in the output."""
    res = compile_module(AMX, load_kernel(_halves_swapped(16, 16)), CompileOptions(deterministic=True, timeout=40))
    assert res.part_kind == "block" and len(res.parts) == 2
    assert verify(AMX, res, seeds=(0, 1)) == []
