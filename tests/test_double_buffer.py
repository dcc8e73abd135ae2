"""Double buffering of loops: the same results on the simulator, fewer cycles under the
timing model, carried data (accumulators) left in place, the last iteration unmoved."""
import numpy as np
import pytest

from generated.amx import TARGET as AMX
from generated.gemmini import TARGET as GEMMINI
from program_rewrites import assert_same_results, rewritten
from runtime_skeleton.reference.npz_io import random_inputs
from runtime_skeleton.sim import run_program, time_program
from runtime_skeleton.program import Loop
from runtime_skeleton.superopt.double_buffer import double_buffered


def _doubled(target, text):
    return rewritten(double_buffered, target, text)


def _gemm_os(trips: int) -> str:
    """An output-stationary GEMM: A[16, 16k] . B[16k, 16], the partial sums held in the array."""
    k = 16 * trips
    return f"""
.target gemmini
.input  arg0 s8[16,{k}]{{1,0}} @0
.input  arg1 s8[{k},16]{{1,0}} @4096
.output out0 s32[16,16]{{1,0}} @8192
preload_os_zero
.loop k 0 {trips}
  mvin rows=16 stride={k} dram=16*k sp_addr=0
  mvin rows=16 stride=16 dram=4096+256*k sp_addr=16
  compute_os a_addr=0 b_addr=16
.endloop
flush_os c_addr=0
mvout_acc32 rows=16 stride=64 acc_addr=0 dram=8192
"""


@pytest.mark.parametrize("trips", [2, 3, 4, 7])
def test_loads_move_to_other_rows_and_overlap_the_previous_compute(trips):
    prog, new = _doubled(GEMMINI, _gemm_os(trips))
    assert_same_results(GEMMINI, prog, new)
    x = random_inputs([d.type for d in prog.inputs], 0)
    want = x[0].astype(np.int32) @ x[1].astype(np.int32)
    np.testing.assert_array_equal(run_program(GEMMINI, new, x)[0], want)
    assert new.executed() == prog.executed()
    assert time_program(GEMMINI, new).cycles < time_program(GEMMINI, prog).cycles
    sp_rows = {ci.attrs["sp_addr"] for ci in new.flat() if ci.name == "mvin"}
    assert sp_rows == {0, 16, 32, 48}  # the moved copy sits above every row the program uses
    loops = [i for i in new.instructions if isinstance(i, Loop)]
    assert [loop.trips for loop in loops] == ([trips // 2] if trips // 2 > 1 else [])  # one pair: no loop
    last = [ci for ci in new.flat() if ci.name == "mvin"][-2:]
    assert [ci.attrs["sp_addr"] for ci in last] == [0, 16]  # the last iteration is the unmoved copy


def test_an_accumulator_read_before_it_is_written_stays_in_place():
    text = """
.target gemmini
.input  arg0 s8[16,64]{1,0} @0
.input  arg1 s8[64,16]{1,0} @4096
.output out0 s32[16,16]{1,0} @8192
mvin rows=16 stride=64 dram=0 sp_addr=0
mvin rows=16 stride=16 dram=4096 sp_addr=16
preload_ws k=16 b_addr=16
compute_ws rows=16 a_addr=0 c_addr=0
.loop k 1 4
  mvin rows=16 stride=64 dram=16*k sp_addr=0
  mvin rows=16 stride=16 dram=4096+256*k sp_addr=16
  preload_ws k=16 b_addr=16
  compute_ws_acc rows=16 a_addr=0 c_addr=0
.endloop
mvout_acc32 rows=16 stride=64 acc_addr=0 dram=8192
"""
    prog, new = _doubled(GEMMINI, text)
    assert_same_results(GEMMINI, prog, new)
    assert {ci.attrs["c_addr"] for ci in new.flat() if ci.name == "compute_ws_acc"} == {0}
    assert {ci.attrs["a_addr"] for ci in new.flat() if ci.name == "compute_ws_acc"} == {0, 32}
    assert time_program(GEMMINI, new).cycles < time_program(GEMMINI, prog).cycles


@pytest.mark.parametrize("trips", [2, 3])
def test_data_a_loop_leaves_behind_is_where_later_code_reads_it(trips):
    text = f"""
.target gemmini
.input  arg0 s8[{16 * trips},16]{{1,0}} @0
.output out0 s8[16,16]{{1,0}} @8192
.loop k 0 {trips}
  mvin rows=16 stride=16 dram=256*k sp_addr=0
.endloop
mvout_spad rows=16 stride=16 sp_addr=0 dram=8192
"""
    prog, new = _doubled(GEMMINI, text)
    assert new.instructions != prog.instructions
    assert_same_results(GEMMINI, prog, new)
    x = random_inputs([d.type for d in prog.inputs], 0)
    np.testing.assert_array_equal(run_program(GEMMINI, new, x)[0], x[0][-16:])


def test_a_buffer_without_room_for_a_second_copy_is_left_alone():
    """AMX has eight tiles: five written each iteration leave no room for five more."""
    text = """
.target amx
.input  arg0 s8[64,64]{1,0} @0
.output out0 s8[16,64]{1,0} @8192
.loop k 0 4
  tileloadd rows=16 colsb=64 stride=64 addr=1024*k t=0
  tileloadd rows=16 colsb=64 stride=64 addr=1024*k t=1
  tileloadd rows=16 colsb=64 stride=64 addr=1024*k t=2
  tileloadd rows=16 colsb=64 stride=64 addr=1024*k t=3
  tileloadd rows=16 colsb=64 stride=64 addr=1024*k t=4
.endloop
tilestored rows=16 colsb=64 stride=64 t=4 addr=8192
"""
    prog, new = _doubled(AMX, text)
    assert new.instructions == prog.instructions


def test_an_on_chip_address_that_moves_with_the_loop_is_left_alone():
    text = """
.target gemmini
.input  arg0 s8[64,16]{1,0} @0
.output out0 s8[16,16]{1,0} @8192
.loop k 0 4
  mvin rows=16 stride=16 dram=256*k sp_addr=16*k
.endloop
mvout_spad rows=16 stride=16 sp_addr=48 dram=8192
"""
    prog, new = _doubled(GEMMINI, text)
    assert new.instructions == prog.instructions
