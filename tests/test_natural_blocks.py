"""A whole kernel whose straight-line attempt fails next tries its natural blocks: the
output cut at once into blocks of Q x R (Q rows one instruction writes, R elements an
on-chip row), each block straight-line, in a loop nest (superopt.tiled._natural_blocks)."""
import pathlib

import pytest

from generated.amx import TARGET as AMX
from generated.gemmini import TARGET as GEMMINI
from runtime_skeleton.compile import CompileOptions, compile_hlo, load_kernel, verify
from runtime_skeleton.superopt.strip import identity
from runtime_skeleton.superopt.tiled import _natural_blocks

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _kernel(dtype: str, rows: int, cols: int):
    return load_kernel(f"""HloModule k
ENTRY main {{
  a = {dtype}[{rows},{cols}]{{1,0}} parameter(0)
  b = {dtype}[{rows},{cols}]{{1,0}} parameter(1)
  ROOT c = {dtype}[{rows},{cols}]{{1,0}} add(a, b)
}}
""")


@pytest.mark.parametrize("target, dtype, shape, loops, tile", [
    (GEMMINI, "s32", (32, 32), (("b0", 2), ("b1", 2)), (16, 16)),  # 16 accumulator rows of 16 s32
    (GEMMINI, "s32", (16, 64), (("b0", 4),), (16, 16)),
    (AMX, "f32", (4, 32), (("b0", 4), ("b1", 2)), (1, 16)),  # a vector register row at a time
])
def test_the_natural_blocks_are_what_one_instruction_writes(target, dtype, shape, loops, tile):
    blocks = _natural_blocks(target, identity(_kernel(dtype, *shape)))
    assert blocks is not None
    assert blocks.tiling.loops == loops and blocks.tiling.tile.result_type.shape == tile


def test_a_kernel_of_one_block_has_no_natural_blocks():
    assert _natural_blocks(GEMMINI, identity(_kernel("s32", 16, 16))) is None


@pytest.mark.slow
def test_a_fuzz_kernel_whose_whole_e_graph_is_too_large_compiles_block_by_block():
    """fuzz seed 95013 on Gemmini: s32[32,32], five s8 dots and sums; phase 1 found no pii graph
    for the whole kernel in its share, and the strips' nested shares left its 16x16 tile 0.2
    work-seconds. Its blocks compile (b0<2 x b1<2 over 16x16 tiles, 4196 cycles); since each
    part of a plan gets a first program before any is improved, its pieces, each straight-line,
    come first and are cheaper (3144)."""
    res = compile_hlo(GEMMINI, ROOT / "tests/data/kernels/fuzz_gemmini_95013.hlo",
                      CompileOptions(timeout=10, deterministic=True))
    assert verify(GEMMINI, res) == []
    assert res.describe_loops() and res.cost <= 4196  # in parts or loops, no dearer than the blocks


def test_an_element_wise_kernel_is_cut_into_rows_before_columns():
    """A column of an f32[32, 64] kernel is 32 rows' worth of single elements, though it
    measures two vector registers in bytes: the first cut of the loop nest keeps whole
    rows (AMX fuzz 99007, a vector chain broadcast along 32 rows, had gone to [1, 1] tiles
    and compiled none of them in its share)."""
    from runtime_skeleton.superopt.tiled import _options, _preferred

    module = load_kernel("""HloModule k
ENTRY main {
  v = f32[64]{0} parameter(0)
  w = f32[64]{0} parameter(1)
  x = f32[32,64]{1,0} parameter(2)
  s = f32[64]{0} subtract(v, w)
  b = f32[32,64]{1,0} broadcast(s), dimensions={1}
  ROOT y = f32[32,64]{1,0} add(x, b)
}
""")
    options, _ = _options(AMX, identity(module), 0)
    first = _preferred(AMX, module, options)[0]
    assert first.tile.result_type.shape == (1, 64)
