"""A whole kernel whose natural program is a loop over its contraction tries that loop
before straight-line code (superopt.tiled._loop_first): a reduce a vector unit combines a
row at a time, and a dot that no instruction's dot reads in its operand types (an f32
GEMM on AMX, which the rules make outer products)."""
import pathlib

import pytest

from generated.amx import TARGET as AMX
from generated.gemmini import TARGET as GEMMINI
from runtime_skeleton.compile import CompileOptions, compile_hlo, load_kernel, verify
from runtime_skeleton.superopt.strip import identity
from runtime_skeleton.superopt.tiled import _loop_first, _options, _preferred

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _gemm(a: str, b: str, out: str, m: int, k: int, n: int) -> str:
    return f"""HloModule g
ENTRY main {{
  a = {a}[{m},{k}]{{1,0}} parameter(0)
  b = {b}[{k},{n}]{{1,0}} parameter(1)
  ROOT d = {out}[{m},{n}]{{1,0}} dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


def _first_cut(target, module):  # noqa: ANN001, ANN202
    options, _ = _options(target, identity(module), 0)
    return _preferred(target, module, options)[0]


def test_a_dot_no_instruction_reads_in_its_types_loops_first():
    f32 = load_kernel(_gemm("f32", "f32", "f32", 16, 64, 16))
    assert _loop_first(AMX, f32, _first_cut(AMX, f32))  # AMX's f32 tile dot reads bf16
    s8 = load_kernel(_gemm("s8", "s8", "s32", 16, 64, 16))
    assert not _loop_first(GEMMINI, s8, _first_cut(GEMMINI, s8))  # Gemmini's dot reads s8
    k3 = load_kernel(ROOT / "examples/kernels/amx_k3.hlo")  # outer products: nothing to loop over
    assert not _loop_first(AMX, k3, _first_cut(AMX, k3))
    k1 = load_kernel(ROOT / "examples/kernels/amx_k1.hlo")  # an s32 dot of convert(s8) operands: tdpbusd
    assert not _loop_first(AMX, k1, _first_cut(AMX, k1))


def test_an_f32_gemm_on_amx_is_a_loop_of_outer_product_steps():
    """16x64x16 in f32: a loop over rows of k-steps, each a broadcast element of A times a
    row of B added into a vector register; straight-line code gets the patience after it."""
    res = compile_hlo(AMX, _gemm("f32", "f32", "f32", 16, 64, 16), CompileOptions(timeout=10, deterministic=True))
    assert res.split is not None and res.split.buffer == "zmm"
    assert {"vbroadcastss", "vfmadd231ps"} <= {c.name for c in res.program.flat()}
    assert verify(AMX, res) == []


def test_an_s32_gemm_on_amx_is_cut_to_the_register_rows_its_outer_products_write():
    """No AMX dot reads s32 operands (its tile dots read bytes, though they write s32 into
    tmm): the natural block is one zmm row, the row vpmulld and vpaddd write, and the
    contraction's steps accumulate in zmm only (the block used to be 16 tmm rows, and no
    s32[16,16] GEMM compiled within 10 s)."""
    s32 = load_kernel(_gemm("s32", "s32", "s32", 16, 16, 16))
    first = _first_cut(AMX, s32)
    assert first.tile.result_type.shape == (1, 16)
    options, _ = _options(AMX, identity(s32), 0)
    assert {o.buffer for o in options if hasattr(o, "buffer")} == {"zmm"}


@pytest.mark.slow
def test_an_s32_gemm_on_amx_is_a_loop_of_vpmulld_steps():
    res = compile_hlo(AMX, _gemm("s32", "s32", "s32", 32, 64, 16), CompileOptions(timeout=10, deterministic=True))
    assert res.split is not None and res.split.buffer == "zmm"
    assert {"vpbroadcastd", "vpmulld", "vpaddd"} <= {c.name for c in res.program.flat()}
    assert verify(AMX, res) == []


def _chain(dtype: str, out: str) -> str:
    return f"""HloModule chain
ENTRY main {{
  a = {dtype}[16,16]{{1,0}} parameter(0)
  b = {dtype}[16,64]{{1,0}} parameter(1)
  c = {dtype}[64,16]{{1,0}} parameter(2)
  ab = {out}[16,64]{{1,0}} dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  n = {dtype}[16,64]{{1,0}} convert(ab)
  ROOT abc = {out}[16,16]{{1,0}} dot(n, c), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


def test_a_chain_of_outer_product_contractions_goes_to_its_stages_first():
    from runtime_skeleton.superopt.driver import _outer_product_chain

    assert _outer_product_chain(AMX, load_kernel(_chain("f32", "f32")))
    assert not _outer_product_chain(GEMMINI, load_kernel(_chain("s8", "s32")))


@pytest.mark.slow
def test_a_fuzz_kernel_of_two_chained_f32_dots_compiles_in_stages():
    """dot(dot(a, -b), c) + x on AMX in f32: each stage is a loop nest of outer-product
    steps; the whole kernel in one nest would compute the first dot again in every step."""
    res = compile_hlo(AMX, ROOT / "tests/data/kernels/fuzz_amx_97011.hlo", CompileOptions(timeout=10, deterministic=True))
    assert "stage" in res.describe_loops()
    assert verify(AMX, res) == []


def test_straight_line_code_after_the_loop_still_gets_its_share():
    """A dot of a broadcast row (all its rows alike) on AMX in f32: its loop comes first,
    but the straight-line program computes one row and is far cheaper; it gets the share
    of the time it would have had first, and wins. (The driver keeps 40% of the budget for
    the kernel one operator at a time, ``driver.OPERATORS_RESERVE``; the straight-line
    attempt needs about 5 of the 12 work-seconds 20 leave.)"""
    kernel = ROOT / "tests/data/kernels/fuzz_amx_98003.hlo"
    res = compile_hlo(AMX, kernel, CompileOptions(timeout=20, deterministic=True))
    assert res.split is None and res.tiling is None
    assert verify(AMX, res) == []
