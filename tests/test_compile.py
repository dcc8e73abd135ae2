"""The whole compiler: compile_hlo, verification on the simulator, determinism, the CLI."""
import collections
import importlib
import json
import math
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from runtime_skeleton import budget
from runtime_skeleton.compile import CompileError, CompileOptions, compile_direct, compile_hlo, load_kernel, verify
from runtime_skeleton.program import parse_program

ROOT = pathlib.Path(__file__).resolve().parent.parent


def target(name):
    return importlib.import_module(f"generated.{name}").TARGET


FAST = [("qkv", "examples/qkv/attention.hlo", 9), ("gemmini", "examples/kernels/gemmini_gemm.hlo", 5),
        ("gemmini", "examples/kernels/gemmini_mac.hlo", 6), ("gemmini", "examples/gemmini/matmul_bias.hlo", 6)]


@pytest.mark.parametrize("tname,kernel,count", FAST, ids=lambda x: pathlib.Path(str(x)).stem)
def test_compiles_and_verifies(tname, kernel, count):
    res = compile_hlo(target(tname), ROOT / kernel)
    assert verify(target(tname), res, seeds=(0, 1, 2)) == []
    assert len(res.program.instructions) == count
    assert parse_program(res.text).instructions == res.program.instructions  # the text round-trips
    st = res.stats  # the per-step times (Act Fig. 21's breakdown) add up to their phases
    assert 0 < st.saturation_seconds and st.saturation_seconds + st.extraction_seconds <= st.phase1_seconds + 0.05
    assert 0 < st.allocation_seconds and st.ordering_seconds + st.allocation_seconds <= st.phase2_seconds + 0.01


@pytest.mark.slow
def test_gemmini_add_uses_the_constant_section():
    res = compile_hlo(target("gemmini"), ROOT / "examples/kernels/gemmini_add.hlo")
    assert verify(target("gemmini"), res) == []
    assert len(res.program.consts) == 1 and len(res.program.consts[0].data) == 256  # eye(16) as int8


@pytest.mark.slow
@pytest.mark.parametrize("name", ["negate", "reverse_columns", "column_sums"])
def test_gemmini_constant_kernels_are_one_matmul(name):
    """Negation, reversal and column sums on Gemmini: one matmul with an int8 constant
    (-I, J, a row of ones) from the constant section, instead of a loop over rows or none."""
    from test_isel import CONSTANT_KERNELS

    res = compile_hlo(target("gemmini"), CONSTANT_KERNELS[name], deterministic=True, timeout=20.0)
    assert verify(target("gemmini"), res, seeds=(0, 1, 2)) == []
    assert len(res.program.consts) == 1 and res.program.executed() == 5


def test_generated_package_api_from_text():
    from generated.gemmini import compile_hlo as gemmini_compile, verify as gemmini_verify

    text = (ROOT / "examples/kernels/gemmini_gemm.hlo").read_text()
    res = gemmini_compile(text, deterministic=True)
    assert gemmini_verify(res) == []
    assert res.cost > 0 and res.pii_graph.num_instructions == 5
    js = res.json()
    assert [i["op"] for i in js["instructions"]] == [i.name for i in res.program.instructions]


def test_deterministic_output_is_byte_identical():
    a = compile_hlo(target("gemmini"), ROOT / "examples/kernels/gemmini_mac.hlo", deterministic=True)
    b = compile_hlo(target("gemmini"), ROOT / "examples/kernels/gemmini_mac.hlo", deterministic=True)
    assert a.text == b.text


def test_a_value_held_twice_in_an_output_is_stored_twice():
    """Both 16-row halves of the broadcast are one e-class, so the output is a
    concatenation holding one value twice: extraction makes a copy (a second mvout of
    the same accumulator tile) instead of sharing one store, which no allocation could
    place at two addresses. (Through the cheap-first schedule: the lowering-first one finds
    a program of 32 one-row stores first, of the same cycles.)"""
    from runtime_skeleton.isel.phase1 import Limits

    kernel = """HloModule bcast
ENTRY main {
  a = s32[16]{0} parameter(0)
  ROOT r = s32[32,16]{1,0} broadcast(a), dimensions={1}
}
"""
    res = compile_hlo(target("gemmini"), kernel, CompileOptions(timeout=20, tiling=False, patience=0.5,
                                                                 phase1=Limits(tiles_first=False)))
    assert verify(target("gemmini"), res, seeds=(0, 1)) == []
    ops = [i.name for i in res.program.instructions]
    # one 16-row tile (16 one-row loads, or a zeroed tile plus the stride-0 bias load), stored twice
    assert ops.count("mvout_acc32") == 2 and len(ops) <= 18, ops


def test_a_row_broadcast_to_sixteen_rows_is_sixteen_loads():
    """s8[16] repeated as 16 rows (Gemmini's mvin stride is at least DIM, so no load
    repeats a row): broadcast-as-concat gives the rows in one rewrite, and
    the copies are named by their offset, so extraction stays small (named by the path of
    concatenations above them, the requirements grew exponentially: 24 GB and no answer)."""
    kernel = """HloModule rows
ENTRY main {
  a = s8[16]{0} parameter(0)
  ROOT r = s8[16,16]{1,0} broadcast(a), dimensions={1}
}
"""
    res = compile_hlo(target("gemmini"), kernel, CompileOptions(timeout=20, tiling=False, deterministic=True))
    assert verify(target("gemmini"), res, seeds=(0, 1)) == []
    ops = [i.name for i in res.program.instructions]
    # 16 rows loaded, or 8 rows loaded and stored twice (fewer cycles)
    assert set(ops) == {"mvin", "mvout_spad"} and len(ops) <= 17, ops
    # deterministic patience runs out once the e-graph stops growing (it took the whole 20 s)
    assert res.stats.seconds < 10


def test_outputs_that_are_one_value_are_stored_twice():
    """(d, d): each output gets its own mvout of the one accumulator tile, in one program
    (before, no pii graph allocated and each output was compiled on its own)."""
    kernel = """HloModule two
ENTRY main {
  a = s8[16,16]{1,0} parameter(0)
  b = s8[16,16]{1,0} parameter(1)
  d = s32[16,16]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (s32[16,16]{1,0}, s32[16,16]{1,0}) tuple(d, d)
}
"""
    res = compile_hlo(target("gemmini"), kernel, CompileOptions(timeout=20))
    assert not res.parts and verify(target("gemmini"), res, seeds=(0, 1)) == []
    ops = [i.name for i in res.program.instructions]
    assert ops.count("mvout_acc32") == 2 and ops.count("compute_ws") == 1, ops


def test_a_piece_writes_its_output_into_a_region_of_its_own():
    """The first half of one f32 row is a view of the input's bytes. As a whole kernel
    the empty program says so (its output lies in its input); as a piece of a larger
    kernel (Module.output_written) that pii graph has no allocation, since the whole
    kernel's program moves the piece's output to its own place."""
    import dataclasses

    from runtime_skeleton.alloc.allocate import AllocationFailed, allocate
    from runtime_skeleton.alloc.order import topological_orders
    from runtime_skeleton.compile import load_kernel
    from runtime_skeleton.isel.phase1 import InstructionSelector

    kernel = load_kernel("""HloModule row
ENTRY main {
  x = f32[1,64]{1,0} parameter(0)
  ROOT r = f32[1,32]{1,0} slice(x), slice={[0:1], [0:32]}
}
""")
    t = target("gemmini")
    g = InstructionSelector(t, kernel).first()
    assert g.num_instructions == 0 and not g.output_written
    order = next(topological_orders(g, t, []))
    assert _overlaps_alloc(allocate(t, g, order))
    with pytest.raises(AllocationFailed, match="output 0 is a view of input 0"):
        allocate(t, dataclasses.replace(g, output_written=True), order)
    piece = InstructionSelector(target("amx"), dataclasses.replace(kernel, output_written=True)).first()
    assert piece.output_written  # extraction skips the view graphs: two loads and stores
    assert sorted(n.op for n in piece.nodes if n.is_instruction) == ["vmovups_load"] * 2 + ["vmovups_store"] * 2


def test_rows_swapped_are_written_not_viewed():
    """concat(x[1:2], x[0:1]) has the input's bytes in another order: no empty program
    places it, so extraction looks only for graphs that write the output (before, every
    graph found first was a view, refused by CSP2, and none compiled in 60 s)."""
    kernel = """HloModule swap
ENTRY main {
  x = f32[2,16]{1,0} parameter(0)
  a = f32[1,16]{1,0} slice(x), slice={[1:2], [0:16]}
  b = f32[1,16]{1,0} slice(x), slice={[0:1], [0:16]}
  ROOT c = f32[2,16]{1,0} concatenate(a, b), dimensions={0}
}
"""
    t = target("amx")
    res = compile_hlo(t, kernel, CompileOptions(deterministic=True, timeout=20, tiling=False))
    assert [i.name for i in res.program.instructions] == ["vmovups_load", "vmovups_store"] * 2
    assert verify(t, res, seeds=(0, 1)) == []


def test_masked_vector_moves_copy_part_of_a_register():
    """Five floats: a masked load (the other lanes zero) and a masked store (of the first
    five lanes). The store's operand is bound to the value padded with zeros, which is
    what the masked load writes."""
    import dataclasses

    from runtime_skeleton.compile import compile_direct, load_kernel

    kernel = dataclasses.replace(load_kernel("""HloModule five
ENTRY main {
  x = f32[1,5]{1,0} parameter(0)
  ROOT r = f32[1,5]{1,0} copy(x)
}
"""), output_written=True)
    t = target("amx")
    res = compile_direct(t, kernel, CompileOptions(deterministic=True, timeout=20), budget.after(20))
    assert [(i.name, i.attrs["n"]) for i in res.program.instructions] == [("vmovups_load", 5), ("vmovups_store", 5)]
    assert verify(t, res) == []


@pytest.mark.parametrize("op,instr", [("add", "vaddps"), ("maximum", "vmaxps")])
def test_arithmetic_on_part_of_a_register_keeps_the_other_lanes_zero(op, instr):
    """Five floats each: masked loads (the other lanes zero), the full-width vector op
    (op(0, 0) = 0 keeps them zero: rule concat-zero-elementwise) and a masked store."""
    hlo = f"""HloModule five
ENTRY main {{
  x = f32[1,5]{{1,0}} parameter(0)
  y = f32[1,5]{{1,0}} parameter(1)
  ROOT r = f32[1,5]{{1,0}} {op}(x, y)
}}
"""
    t = target("amx")
    res = compile_hlo(t, hlo, CompileOptions(deterministic=True, timeout=30))
    names = [(i.name, i.attrs.get("n")) for i in res.program.instructions]
    assert sorted(names, key=str) == sorted([("vmovups_load", 5)] * 2 + [(instr, None), ("vmovups_store", 5)], key=str)
    assert verify(t, res) == []


def test_a_sum_over_rows_is_a_vector_add():
    """reduce over a dimension of 2 is an add of the two rows (reduce-split-reduced-float,
    then reduce-unit-float): two loads, one vaddps, one store. Compiled straight-line
    (``compile_direct``, first program): the tiled search tries the reduction loop first
    (``tiled._loop_first``) and gives this attempt ``patience`` times the loop's wall-clock
    time, about 1.6 s against the ~1.6 s this one needs, so there either may win."""
    hlo = """HloModule rows
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  x = f32[2,16]{1,0} parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[16]{0} reduce(x, z), dimensions={0}, to_apply=sum
}
"""
    t = target("amx")
    res = compile_direct(t, load_kernel(hlo), CompileOptions(deterministic=True, timeout=30, patience=0),
                         budget.after(30))
    assert sorted(i.name for i in res.program.instructions) == ["vaddps", "vmovups_load", "vmovups_load",
                                                                 "vmovups_store"]
    assert verify(t, res) == []


def _overlaps_alloc(a) -> bool:  # the output starts inside the input's 256 bytes
    return a.inputs[0] <= a.outputs[0] < a.inputs[0] + 256


@pytest.mark.slow
def test_a_tile_that_views_its_input_is_copied_in_the_loop():
    """x[:, 0:32] cut into rows: each output row is the first half of an input row, a
    view of the tile's input. Before, the tile program was empty (its output pointed into
    its input), so the loop wrote nothing and the output stayed zero."""
    kernel = """HloModule cols
ENTRY main {
  x = f32[16,64]{1,0} parameter(0)
  ROOT r = f32[16,32]{1,0} slice(x), slice={[0:16], [0:32]}
}
"""
    t = target("gemmini")
    res = compile_hlo(t, kernel, CompileOptions(timeout=30, deterministic=True))
    assert res.tiling is not None and verify(t, res) == []


def test_a_kernel_the_target_cannot_run_is_explained():
    with pytest.raises(CompileError, match="tuple-valued 'reduce'"):
        compile_hlo(target("gemmini"), ROOT / "examples/kernels/argmax_f32.hlo")
    with pytest.raises(CompileError, match="gemmini cannot run this kernel: its result depends on exponential"):
        compile_hlo(target("gemmini"), ROOT / "examples/kernels/unary_math_f32.hlo", CompileOptions(timeout=3))
    with pytest.raises(CompileError, match="dot 'dot_general.1' .* computes new f32 values"):
        compile_hlo(target("gemmini"), ROOT / "examples/kernels/gemm_f32.hlo", CompileOptions(timeout=3, tiling=False))


def test_a_gemm_of_sixteen_tiles_compiles_straight_line():
    """gemm_i8 (32x64 . 64x32: 16 tiles) shares preloaded weights between matmuls, which the
    16-row weight buffer holds one at a time: the heuristic order overflows it, and the
    order repaired (alloc.order.serialized) runs the matmuls of one preload together."""
    t = target("gemmini")
    res = compile_hlo(t, ROOT / "examples/kernels/gemm_i8.hlo", CompileOptions(timeout=30, tiling=False))
    assert res.tiling is None and verify(t, res) == []


def _mlp_i8_layer_16() -> str:
    """JAX's int8 layer (x . W + b, ReLU, * 0.0125, round, clip, int8) on one 16x16 tile."""
    text = (ROOT / "examples/kernels/mlp_i8_layer.hlo").read_text()
    assert "64" not in text.replace("64]", "").replace("64,", "")  # 64 is only ever a dimension
    return text.replace("64", "16")


def test_a_float_requantization_is_gemminis_scaled_mvout():
    """The layer's f32 epilogue ends in int8, so Gemmini is not refused for its floats: the
    accumulator scale (config_acc_scale, its f32 from the constant section) and
    mvout_scale_relu compute it, the clip's integer bounds folded to f32 constants."""
    res = compile_hlo(target("gemmini"), _mlp_i8_layer_16(), timeout=60, deterministic=True)
    assert verify(target("gemmini"), res, seeds=(0, 1, 2)) == []
    names = [i.name for i in res.program.instructions]
    assert names.count("config_acc_scale") == 1 and names[-1] == "mvout_scale_relu" and len(names) == 7
    assert np.frombuffer(res.program.consts[0].data, np.float32)[0] == np.float32(0.0125)


@pytest.mark.slow
def test_an_s32_matmul_compiles_on_amx():
    """No AMX dot reads s32: the product is vpbroadcastd, vpmulld and vpaddd rows, one per
    contracted element (before vpbroadcastd was described, none within 60 s)."""
    kernel = """HloModule dot_s32
ENTRY main {
  a = s32[1,16]{1,0} parameter(0)
  b = s32[16,16]{1,0} parameter(1)
  ROOT r = s32[1,16]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    res = compile_hlo(target("amx"), kernel, CompileOptions(timeout=60, deterministic=True))
    assert verify(target("amx"), res, seeds=(0, 1)) == []
    assert "vpbroadcastd" in res.text and "vpmulld" in res.text


@pytest.mark.slow
def test_mlp_i8_layer_compiles_on_gemmini():
    res = compile_hlo(target("gemmini"), ROOT / "examples/kernels/mlp_i8_layer.hlo", deterministic=True)
    assert verify(target("gemmini"), res, seeds=(0, 1)) == []
    assert "mvout_scale_relu" in res.text


def test_cli_compile_verify_and_json(tmp_path):
    out, js = tmp_path / "p.s", tmp_path / "p.json"
    r = subprocess.run([sys.executable, "-m", "generated.gemmini", "compile", "examples/kernels/gemmini_gemm.hlo",
                        "-o", str(out), "--json", str(js), "--verify", "--deterministic"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "verified" in r.stdout and "5 instructions" in r.stdout
    assert json.loads(js.read_text())["target"] == "gemmini"
    run = subprocess.run([sys.executable, "-m", "generated.gemmini", "run", str(out), "--random", "4",
                          "-o", str(tmp_path / "o.npz"), "--expect", "examples/kernels/gemmini_gemm.hlo"],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0 and "matches the reference" in run.stdout, run.stderr


def test_cli_compile_error_is_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "generated.gemmini", "compile", "examples/kernels/argmax_f32.hlo",
                        "-o", str(tmp_path / "p.s")], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "argmax_f32.hlo:26:3:" in r.stderr
    assert not (tmp_path / "p.s").exists()


@pytest.mark.parametrize("argv,message", [
    (["compile", "k.hlo", "-o", "p.s", "--timeout", "-3"], "argument --timeout: must be > 0, got -3"),
    (["compile", "k.hlo", "-o", "p.s", "--jobs", "0"], "argument --jobs: must be >= 1, got 0"),
    (["fuzz", "--n", "-1"], "argument --n: must be >= 0, got -1"),
    (["fuzz", "--timeout-per-kernel", "0"], "argument --timeout-per-kernel: must be > 0, got 0"),
    (["isel", "k.hlo", "--timeout", "x"], "argument --timeout: invalid float value: 'x'"),
], ids=["timeout", "jobs", "n", "fuzz-timeout", "not-a-number"])
def test_cli_refuses_out_of_range_options(argv, message, capsys):
    from runtime_skeleton.backend_cli import main
    with pytest.raises(SystemExit) as exit_:
        main(target("gemmini"), argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_jax_function_to_verified_program_in_one_command(tmp_path):
    r = subprocess.run([sys.executable, "examples/jax_to_gemmini.py", "-o", str(tmp_path), "--deterministic"],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "verified" in r.stdout
    prog = parse_program((tmp_path / "kernel.s").read_text())
    assert prog.target == "gemmini" and prog.instructions


# Act §9.3: the Gemmini SW library's MAC, GEMM and ADD and the nine compositions of GEMM and ADD
GEMMINI_EVAL = ["gemmini_mac", "gemmini_gemm", "gemmini_add", "gemmini_abc", "gemmini_add3", "gemmini_ab_plus_ac",
                "gemmini_ab_plus_c_plus_d", "gemmini_abc_plus_d", "gemmini_abc_plus_a", "gemmini_abcd",
                "gemmini_abca", "gemmini_add4"]


@pytest.mark.slow
@pytest.mark.parametrize("name", GEMMINI_EVAL)
def test_gemmini_evaluation_kernels_compile_and_verify(name):
    res = compile_hlo(target("gemmini"), ROOT / f"examples/kernels/{name}.hlo")
    assert verify(target("gemmini"), res) == []


def _amx_counts(kernel, timeout=60.0):
    res = compile_hlo(target("amx"), ROOT / kernel, timeout=timeout)
    assert verify(target("amx"), res, seeds=(0, 1, 2)) == []
    return collections.Counter(i.name for i in res.program.instructions)


def test_amx_k2_is_act_table_4():
    """oneDNN K2 (Act Table 4: 9 AMX instructions): A's tile loaded once, B's two VNNI tiles
    (T(16,4), contiguous 1 KiB each), two zeroed accumulators, two tdpbusd, two stores of
    the T(16,16) output tiles."""
    assert _amx_counts("examples/kernels/amx_k2.hlo") == {"tileloadd": 3, "tilezero": 2, "tdpbusd": 2,
                                                          "tilestored": 2}


@pytest.mark.parametrize("name, rows, tiles, loads", [("amx_k3", 14, 2, 2),
                                                     pytest.param("amx_k4", 8, 3, 3, marks=pytest.mark.slow)])
def test_amx_outer_products_compile_straight_line_as_fig_49(name, rows, tiles, loads):
    """oneDNN K3 and K4 (Act App. E: f32 outer products stored in T(14,16) and T(8,16)
    tiles): straight-line code as Act's Fig. 49, one vbroadcastss per row of B, one
    vmulps and one vmovups_store per row of each 16-float tile, A loaded once. A row may
    also be moved into place through a tile (tileloadd, tilestored: the tile engine, idle
    otherwise) where the list-scheduled program is faster so."""
    res = compile_hlo(target("amx"), ROOT / f"examples/kernels/{name}.hlo")
    assert res.tiling is None and not res.program.has_loops
    assert verify(target("amx"), res) == []
    counts = collections.Counter(i.name for i in res.program.instructions)
    moved = counts.pop("tileloadd", 0)
    assert counts.pop("tilestored", 0) == moved
    assert counts == {"vbroadcastss": rows, "vmulps": rows * tiles, "vmovups_store": rows * tiles,
                      "vmovups_load": loads}


@pytest.mark.slow
def test_amx_k1_is_act_table_4():
    """oneDNN K1 (Act Table 4 and Fig. 16(c): 16 AMX instructions) at the default 60 s.
    Phase 1 needed about 16 s of saturation for it on a 2-core machine (a quarter of the
    time did not cover that, and K1 came out as a verified loop nest); since the converts
    a dot takes are left to the dot's cuts, 0.2 s."""
    assert _amx_counts("examples/kernels/amx_k1.hlo") == {"tileloadd": 4, "tilezero": 4, "tdpbusd": 4,
                                                          "tilestored": 4}


def test_a_parameter_the_kernel_does_not_read_keeps_its_input():
    """Parameters 1 and 3 are never read: the program still declares arg0..arg3 in order,
    in disjoint HBM regions, and runs on the kernel's own four inputs."""
    text = """HloModule unread
ENTRY e {
  a = s8[16,16]{1,0} parameter(0)
  u = f32[4]{0} parameter(1)
  b = s8[16,16]{1,0} parameter(2)
  v = s32[2]{0} parameter(3)
  ROOT d = s32[16,16]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    res = compile_hlo(target("gemmini"), text, deterministic=True)
    decls = res.program.inputs + res.program.outputs
    assert [d.name for d in res.program.inputs] == ["arg0", "arg1", "arg2", "arg3"]
    assert res.program.inputs[1].type.shape == (4,) and res.program.inputs[1].offset >= 0
    spans = sorted((d.offset, d.offset + d.type.dtype.nbytes * math.prod(d.type.shape)) for d in decls)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))
    assert verify(target("gemmini"), res) == []


def test_extraction_stops_exploring_at_its_limit(monkeypatch):
    """The bounds stop at MAX_REACH requirements (or the deadline): what is left
    unexplored is not taken, and the refusal says so."""
    from runtime_skeleton.isel import extract

    monkeypatch.setattr(extract, "MAX_REACH", 50)
    with pytest.raises(CompileError, match="explored only part of the e-graph"):
        compile_hlo(target("gemmini"), ROOT / "examples/kernels/gemmini_add.hlo",
                    CompileOptions(timeout=3, tiling=False, deterministic=True, tiles_first=False))


def test_a_constant_output_is_extracted_within_the_deadline():
    """Every class of a broadcast constant's e-graph is constant: each pii graph's const
    nodes came from a fixpoint over all of them, once per node (5 s past a 1.3 s
    deadline: a padding row of pad_reverse on AMX). Now once per extraction."""
    import dataclasses

    from runtime_skeleton.compile import compile_direct, load_kernel

    kernel = dataclasses.replace(load_kernel("""HloModule fill
ENTRY main {
  z = s32[] constant(0)
  f = f32[] convert(z)
  ROOT r = f32[1,35]{1,0} broadcast(f), dimensions={}
}
"""), output_written=True)
    w0 = budget.now()
    res = compile_direct(target("amx"), kernel, CompileOptions(timeout=1.5), budget.after(1.5))
    assert budget.now() - w0 < 2.0  # work-seconds: the deadline passed by less than one round
    assert verify(target("amx"), res) == []


def test_bounds_cut_short_at_different_points_are_a_refusal(monkeypatch):
    """The two bound computations (as trees, and shared) can stop at the deadline at
    different points; extraction takes only what both counted (a KeyError before: six fuzz
    kernels of sixty 'failed' at the first attempt's deadline)."""
    from runtime_skeleton.isel import extract

    full = extract.Extractor._lower_bounds

    def shared_cut_short(self, roots, shared):
        got = full(self, roots, shared)
        return dict(list(got.items())[: len(got) // 2]) if shared else got

    monkeypatch.setattr(extract.Extractor, "_lower_bounds", shared_cut_short)
    try:
        compile_hlo(target("gemmini"), ROOT / "examples/kernels/gemmini_mac.hlo",
                    CompileOptions(timeout=3, tiling=False, deterministic=True))
    except CompileError:
        pass
