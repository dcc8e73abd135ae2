"""Loads hoisted out of the loops they do not depend on: the same results on the
simulator, fewer loads executed, fewer cycles; nothing hoisted whose loaded rows are
seen outside their iteration, whose source the program writes, or that has no room."""
import dataclasses

import numpy as np
import pytest

from generated.amx import TARGET as AMX
from generated.gemmini import TARGET as GEMMINI
from program_rewrites import assert_same_results, rewritten
from runtime_skeleton.compile import compile_hlo, verify
from runtime_skeleton.reference.npz_io import random_inputs
from runtime_skeleton.sim import parse_program, run_program, time_program
from runtime_skeleton.superopt.reuse import reused


def _hoisted(target, text):
    return rewritten(reused, target, text)


def _count(prog, name, **attrs):
    return sum(1 for ci in prog.flat() if ci.name == name and all(ci.attrs[k] == v for k, v in attrs.items()))


def _gemm(tiles_k: int, tiles_n: int, after: str = "") -> str:
    """A[16, 16k] . B[16k, 16n] -> s32, one 16x16 output tile per iteration of j;
    A's tiles are the same for every j."""
    k, n = 16 * tiles_k, 16 * tiles_n
    return f"""
.target gemmini
.input  arg0 s8[16,{k}]{{1,0}} @0
.input  arg1 s8[{k},{n}]{{1,0}} @8192
.output out0 s32[16,{n}]{{1,0}} @32768
.loop j 0 {tiles_n}
  preload_os_zero
  .loop k 0 {tiles_k}
    mvin rows=16 stride={k} dram=16*k sp_addr=0
    mvin rows=16 stride={n} dram=8192+{16 * n}*k+16*j sp_addr=16
    compute_os a_addr=0 b_addr=16
  .endloop
  flush_os c_addr=0
  mvout_acc32 rows=16 stride={4 * n} acc_addr=0 dram=32768+64*j
.endloop
{after}"""


@pytest.mark.parametrize("tiles_k,tiles_n", [(2, 2), (3, 4), (4, 3)])
def test_a_load_the_outer_loop_does_not_use_runs_once_per_slot(tiles_k, tiles_n):
    prog, new = _hoisted(GEMMINI, _gemm(tiles_k, tiles_n))
    assert_same_results(GEMMINI, prog, new)
    x = random_inputs([d.type for d in prog.inputs], 0)
    want = x[0].astype(np.int32) @ x[1].astype(np.int32)
    np.testing.assert_array_equal(run_program(GEMMINI, new, x)[0], want)
    a_loads = [ci for ci in new.flat() if ci.name == "mvin" and ci.attrs["dram"] < 8192]
    assert len(a_loads) == tiles_k  # was tiles_k * tiles_n
    assert len({ci.attrs["sp_addr"] for ci in a_loads}) == tiles_k  # one slot each
    assert _count(new, "mvin") == tiles_k + tiles_k * tiles_n
    assert time_program(GEMMINI, new).cycles < time_program(GEMMINI, prog).cycles


def test_loaded_rows_read_after_their_loop_stay_where_they_are():
    """mvout_spad after the loops reads what the last A load left in rows 0-15."""
    text = _gemm(2, 2, "mvout_spad rows=16 stride=16 sp_addr=0 dram=40960\n")
    prog = parse_program(text, "t.s")
    assert reused(GEMMINI, prog.instructions) == prog.instructions


def test_a_load_whose_source_the_program_writes_stays():
    """The output tile is stored over A's source in HBM: a later iteration's A differs."""
    text = _gemm(2, 2).replace("dram=32768+64*j", "dram=0")
    prog = parse_program(text, "t.s")
    new = reused(GEMMINI, prog.instructions)
    assert _count(dataclasses.replace(prog, instructions=new), "mvin") == _count(prog, "mvin")


def test_a_load_without_room_for_its_slots_stays():
    """AMX has eight tiles: a load needing four slots beside five used tiles stays."""
    text = """
.target amx
.input  arg0 u8[16,256]{1,0} @0
.input  arg1 s8[64,256]{1,0} @8192
.output out0 s32[16,16]{1,0} @65536
.loop j 0 2
  tilezero t=0
  .loop k 0 4
    tileloadd rows=16 colsb=64 stride=256 addr=64*k t=1
    tileloadd rows=16 colsb=64 stride=256 addr=8192+64*k t=2
    tileloadd rows=16 colsb=64 stride=256 addr=8192+64*k t=3
    tileloadd rows=16 colsb=64 stride=256 addr=8192+64*k t=4
    tdpbusd m=16 k=16 n=16 dst=0 src0=1 src1=2
  .endloop
.endloop
tilestored rows=16 colsb=64 stride=64 t=0 addr=65536
"""
    prog = parse_program(text, "t.s")
    new = dataclasses.replace(prog, instructions=reused(AMX, prog.instructions))
    assert_same_results(AMX, prog, new)
    assert _count(new, "tileloadd") == _count(prog, "tileloadd")


def test_a_tiled_gemm_reuses_its_loads_and_verifies(loops_only):
    text = """HloModule g
ENTRY main {
  a = s8[64,128]{1,0} parameter(0)
  b = s8[128,64]{1,0} parameter(1)
  ROOT d = s32[64,64]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    res = compile_hlo(GEMMINI, text, timeout=20)
    assert res.tiling is not None
    assert verify(GEMMINI, res) == []
    # every A and B tile is loaded at most as often as without reuse: 64 x 128 and 128 x 64
    # int8 are 32 + 32 tiles of 16 x 16, each loaded for every output tile of its row or column
    loads = _count(res.program, "mvin")
    assert loads < 2 * 8 * 16
