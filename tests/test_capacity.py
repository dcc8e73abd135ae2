"""What one instruction computes, per operator (superopt.capacity), and the measure of a
kernel the tiled search uses to skip a straight-line attempt (tiled.blocks)."""
from __future__ import annotations

import pathlib

import generated.amx as amx
import generated.gemmini as gemmini
from runtime_skeleton.compile import load_kernel
from runtime_skeleton.superopt.capacity import combining_buffers, kernel_rows
from runtime_skeleton.superopt.tiled import MAX_DIRECT_BLOCKS, blocks

ROOT = pathlib.Path(__file__).resolve().parent.parent


def binary(op: str, dtype: str, rows: int) -> str:
    return f"""HloModule b
ENTRY main {{
  a = {dtype}[{rows},16]{{1,0}} parameter(0)
  b = {dtype}[{rows},16]{{1,0}} parameter(1)
  ROOT c = {dtype}[{rows},16]{{1,0}} {op}(a, b)
}}
"""


def reduce_sum(dtype: str, shape: str, out: str, dims: str) -> str:
    return f"""HloModule r
red {{
  a = {dtype}[] parameter(0)
  b = {dtype}[] parameter(1)
  ROOT c = {dtype}[] add(a, b)
}}
ENTRY main {{
  x = {dtype}[{shape}] parameter(0)
  z = {dtype}[] constant(0)
  ROOT r = {dtype}[{out}] reduce(x, z), dimensions={{{dims}}}, to_apply=red
}}
"""


def test_vector_work_on_amx_is_a_row_at_a_time_and_tile_dots_sixteen():
    assert kernel_rows(amx.TARGET, load_kernel(binary("add", "f32", 4))) == 1
    assert kernel_rows(amx.TARGET, load_kernel(ROOT / "examples/kernels/amx_k1.hlo")) == 16
    # an int8 GEMM with a vector epilogue: the dot's tiles decide
    assert kernel_rows(amx.TARGET, load_kernel(ROOT / "examples/kernels/gemm_i8_bias_requant.hlo")) == 16
    assert kernel_rows(gemmini.TARGET, load_kernel(ROOT / "examples/kernels/gemmini_add.hlo")) == 16


def test_an_operator_no_instruction_computes_as_it_is_leaves_the_square_block():
    """AMX has no s8 add: rewrites decide how it is computed, so the measure stays R x R."""
    assert kernel_rows(amx.TARGET, load_kernel(binary("add", "s8", 4))) is None


def test_a_reduce_combines_where_an_instruction_adds_element_wise():
    """AMX's tile dot adds s32 values in tmm, but into a dot's result: an s32 row sum
    accumulates in zmm (vpaddd)."""
    module = load_kernel(reduce_sum("s32", "16,64", "16", "1"))
    assert combining_buffers(amx.TARGET, module, module.entry_computation.root_instruction) == {"zmm"}


def test_vector_work_counts_rows_and_tile_work_tiles():
    """f32[8,16] + f32[8,16] is 24 register rows (straight-line: 32 instructions); at 16
    rows, 48 are more than phase 1 maps, so the tiled search goes straight to loops.
    Tile work counts 16-row blocks as before (K1: its four tensors are 8 blocks)."""
    assert blocks(amx.TARGET, load_kernel(binary("add", "f32", 8))) == 24 <= MAX_DIRECT_BLOCKS
    assert blocks(amx.TARGET, load_kernel(binary("add", "f32", 16))) == 48 > MAX_DIRECT_BLOCKS
    assert blocks(amx.TARGET, load_kernel(ROOT / "examples/kernels/amx_k1.hlo")) == 8
