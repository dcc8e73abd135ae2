"""The symbolic program verifier: the simulator's per-instruction checks over a loop's
whole range, without unrolling it, and the same verdict as unrolling."""
import random
import time

import pytest

from runtime_skeleton.program import parse_program
from runtime_skeleton.program import verify as V
from runtime_skeleton.sim.machine import SimError, checked


@pytest.fixture(scope="module")
def gemmini():
    from generated import gemmini
    return gemmini.TARGET


def _prog(body: str) -> str:
    return ".target gemmini\n.input arg0 s8[16,16]{1,0} @0\n.output out0 s8[16,16]{1,0} @0\n" + body


def test_a_planted_out_of_bounds_stride_is_caught_at_its_iteration(gemmini):
    # sp has 16384 rows: the 1024th iteration writes rows 16384..16399
    prog = parse_program(_prog(".loop i 0 2000\n  mvin rows=16 stride=16 dram=0 sp_addr=16*i\n.endloop\n"), "p.s")
    with pytest.raises(SimError, match=r"outside its range.*\(in the iteration i=\d+\)") as e:
        V.verify_program(gemmini, prog)
    i = int(e.value.message.rsplit("i=", 1)[1].rstrip(")"))
    assert i >= 1024 and e.value.loc.line == 5


def test_a_million_iterations_verify_in_well_under_a_second(gemmini):
    text = _prog(".loop i 0 1000\n  .loop j 0 1000\n    mvin rows=16 stride=16 dram=16*j sp_addr=16*(i % 1)\n"
                 "    mvin rows=16 stride=64 dram=64*i sp_addr=16\n  .endloop\n.endloop\n").replace("16*(i % 1)", "0")
    prog = parse_program(text, "p.s")
    assert prog.executed() == 2_000_000
    t0 = time.perf_counter()
    V.verify_program(gemmini, prog)
    assert time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize("seed", range(40))
def test_the_verdict_is_the_unrolled_one(gemmini, seed, monkeypatch):
    monkeypatch.setattr(V, "UNROLLED", 0)  # every loop instruction by z3
    rng = random.Random(seed)
    lines, depth = [], rng.choice([1, 2])
    for d in range(depth):
        lines.append("  " * d + f".loop v{d} {rng.randint(0, 3)} {rng.randint(4, 40)}")
    ind = "  " * depth
    rows = rng.randint(1, 16)
    sp = f"{rng.randint(0, 16383)}" + "".join(f"+{rng.choice([1, 16, 200, 400])}*v{d}" for d in range(depth))
    dram = f"{rng.randint(0, 1000)}" + "".join(f"+{rng.choice([1, 64])}*v{d}" for d in range(depth))
    stride = rng.choice(["16", "8", "16+v0", "65536"])
    lines.append(f"{ind}mvin rows={rows} stride={stride} dram={dram} sp_addr={sp}")
    lines += ["  " * d + ".endloop" for d in reversed(range(depth))]
    prog = parse_program(_prog("\n".join(lines) + "\n"), "p.s")
    try:
        for ci in prog.flat():
            checked(gemmini, ci)
        unrolled = None
    except SimError as err:
        unrolled = err
    try:
        V.verify_program(gemmini, prog)
        symbolic = None
    except SimError as err:
        symbolic = err
    assert (unrolled is None) == (symbolic is None), (unrolled, symbolic, lines)


def test_an_out_of_bounds_slice_is_caught_where_attributes_are_in_range(gemmini):
    # every sp_addr is in range, but 16 rows from 16380 pass the buffer's end
    prog = parse_program(_prog(".loop i 0 1000\n  mvin rows=16 stride=16 dram=0 sp_addr=15380+i\n.endloop\n"), "p.s")
    with pytest.raises(SimError, match=r"outside the buffer.*\(in the iteration i=\d+\)"):
        V.verify_program(gemmini, prog)
