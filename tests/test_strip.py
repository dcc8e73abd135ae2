"""Strip-mining kernels into loops: the loop program format, the tile kernels
(checked numerically against the whole kernel), and compiling through loops."""
from __future__ import annotations

import numpy as np
import pytest

import generated.amx as amx
import generated.gemmini as gemmini
from tests.conftest import ROOT
from runtime_skeleton.compile import CompileOptions, compile_hlo, verify
from runtime_skeleton.emit import program_json
from runtime_skeleton.fuzz.gen import random_kernel
from runtime_skeleton.hlo import parse_module
from runtime_skeleton.layout import bflat, byte_size, unbflat
from runtime_skeleton.reference import evaluate
from runtime_skeleton.reference.npz_io import random_inputs
from runtime_skeleton.sim import parse_program, print_program, time_program
from runtime_skeleton.program import Affine, Program, ProgramError
from runtime_skeleton.superopt import OUTPUT, NotTileable, identity, strip, tile_sizes
from runtime_skeleton.superopt.strip import cut_dimensions
from runtime_skeleton.superopt.windows import windowed

LOOPED = """.target amx
.input  arg0 f32[4,16]{1,0} @0
.output out0 f32[4,16]{1,0} @4096
.loop i 0 2
  .loop j 0 2
    vmovups_load n=16 addr=128*i+64*j z=0
    vaddps dst=1 a=0 b=0
    vmovups_store n=16 z=1 addr=4096+128*i+64*j
  .endloop
.endloop
"""


def test_loops_round_trip_and_unroll():
    prog = parse_program(LOOPED)
    assert parse_program(print_program(prog)) == prog
    assert prog.executed() == 12 and prog.has_loops
    flat = list(prog.flat())
    assert [c.attrs["addr"] for c in flat if c.name == "vmovups_load"] == [0, 64, 128, 192]
    assert flat[2].attrs["addr"] == 4096
    assert program_json(prog)["instructions"][0]["body"][0]["body"][0]["attrs"]["addr"] == "128*i+64*j"


def test_looped_program_runs_like_its_unrolled_form():
    prog = parse_program(LOOPED)
    unrolled = Program(prog.target, prog.inputs, prog.outputs, prog.consts, list(prog.flat()))
    x = [np.arange(64, dtype=np.float32).reshape(4, 16)]
    from runtime_skeleton.sim import run_program

    (got,) = run_program(amx.TARGET, prog, x)
    np.testing.assert_array_equal(got, 2 * x[0])
    assert time_program(amx.TARGET, prog).cycles == time_program(amx.TARGET, unrolled).cycles


@pytest.mark.parametrize("text, message", [
    (".loop i 0\n", "1:1: '.loop' takes: VAR START STOP"),
    (".loop i 0 2\nvaddps dst=j a=0 b=0\n.endloop\n", "2:12: attribute 'dst': 'j' is not the variable of an enclosing loop"),
    (".loop i 0 2\n.loop i 0 2\n.endloop\n.endloop\n", "2:7: loop variable 'i' is already"),
    (".endloop\n", "1:1: '.endloop' without a '.loop'"),
    (".loop i 0 2\nvzero dst=i\n", "1:1: '.loop' without its '.endloop'"),
    (".loop i 0 2\n.input a f32[1] @0\n.endloop\n", "2:1: '.input' inside a loop"),
    ("vzero dst=1+\n", "1:11: attribute 'dst' needs an integer or an affine expression"),
])
def test_loop_syntax_errors_point_at_the_text(text, message):
    with pytest.raises(ProgramError) as err:
        parse_program(text, "p.s")
    assert message in str(err.value)


def test_affine_printing():
    assert str(Affine(16, (("i", 64), ("j", -1)))) == "16+64*i-j"
    assert Affine.of(5, {"i": 0}) == 5


def _run_tiled(tiling, module, inputs: list[np.ndarray]) -> np.ndarray:
    """The whole kernel's output computed tile by tile, the way the loop program
    moves bytes: each tile kernel as compiled (strided tiles as windows) reads its
    parameters' bytes where they are placed and writes its output's bytes back."""
    data = [np.frombuffer(bflat(x, t), np.uint8) for x, t in zip(inputs, module.parameter_types)]
    out = np.zeros(byte_size(module.result_type), np.uint8)
    tile, places = windowed(tiling)
    for flat in range(int(np.prod([n for _, n in tiling.loops]))):
        env, rest = {}, flat
        for var, n in reversed(tiling.loops):
            env[var], rest = rest % n, rest // n
        args = []
        for p, t in zip(places, tile.parameter_types):
            off = p.const + sum(c * env[v] for v, c in p.terms)
            src = out if p.source == OUTPUT else data[p.source]
            args.append(unbflat(src[off: off + byte_size(t)].tobytes(), t))
        (y,) = evaluate(tile, args)
        off = tiling.output.const + sum(c * env[v] for v, c in tiling.output.terms)
        out[off: off + byte_size(tile.result_type)] = np.frombuffer(bflat(y, tile.result_type), np.uint8)
    return unbflat(out.tobytes(), module.result_type)


@pytest.mark.parametrize("target", [gemmini.TARGET, amx.TARGET], ids=["gemmini", "amx"])
@pytest.mark.parametrize("seed", range(12))
def test_tile_kernels_compute_the_kernel(target, seed):
    """Every strip-mining of a random kernel (every tile size along every dimension,
    nested once) computes it exactly, strided tiles and in-place output windows included."""
    module = parse_module(random_kernel(target, seed), "fuzz")
    x = random_inputs(module.parameter_types, seed)
    want = evaluate(module, x)[0]
    checked = 0
    for d in cut_dimensions(module):
        for t in tile_sizes(module, d)[:3]:
            try:
                outer = strip(identity(module), t, "i", d)
            except NotTileable:
                continue
            tilings = [outer]
            for e in cut_dimensions(outer.tile):
                for u in tile_sizes(outer.tile, e)[:1]:
                    try:
                        tilings.append(strip(outer, u, "j", e))
                    except NotTileable:
                        pass
            for tiling in tilings:
                try:
                    got = _run_tiled(tiling, module, x)
                except NotTileable:  # a window of a window, say
                    continue
                np.testing.assert_array_equal(got, want)
                checked += 1
    assert checked or not tile_sizes(module) or seed  # the kernels of seed 0 do strip-mine


def test_a_strided_tile_is_a_window_unpacked_in_the_tile_kernel():
    m = parse_module("""HloModule m
add { x = s32[] parameter(0)  y = s32[] parameter(1)  ROOT s = s32[] add(x, y) }
ENTRY e {
  a = s32[8,16]{1,0} parameter(0)
  z = s32[] constant(0)
  ROOT r = s32[16]{0} reduce(a, z), dimensions={0}, to_apply=add
}""", "m")
    tiling = strip(identity(m), 4, "i", 0)  # columns of a: 8 rows of 16 bytes, 64 bytes apart
    tile, places = windowed(tiling)
    assert str(tile.parameter_types[0]) == "u8[464]" and places[0].terms == (("i", 16),)
    x = random_inputs(m.parameter_types, 0)
    np.testing.assert_array_equal(_run_tiled(tiling, m, x), evaluate(m, x)[0])


def test_not_tileable_names_the_operator():
    t = parse_module("""HloModule m
ENTRY e {
  a = f32[8,4]{1,0} parameter(0)
  n = f32[8,4]{1,0} negate(a)
  ROOT r = f32[4,4]{1,0} slice(n), slice={[2:6], [0:4]}
}""", "m")
    with pytest.raises(NotTileable, match="a slice of part of the strip dimension of a computed value"):
        strip(identity(t), 2, "i")
    r = parse_module("""HloModule m
ENTRY e {
  a = f32[8,4]{1,0} parameter(0)
  ROOT r = f32[4,8]{1,0} reshape(a)
}""", "m")
    with pytest.raises(NotTileable, match="a reshape that regroups the strip dimension"):
        strip(identity(r), 2, "i")


STRIDED_SLICE = """HloModule m
ENTRY e {
  a = f32[16,24]{1,0} parameter(0)
  ROOT r = f32[6,7]{1,0} slice(a), slice={[1:13:2], [2:23:3]}
}"""


def test_a_strided_slice_of_an_input_is_cut_into_strided_tiles():
    """Tile k of a slice with an offset and a stride along the strip reads the input's
    rows start + stride * (k * t + j): a parameter of (t - 1) * stride + 1 rows, placed
    stride * t rows further each iteration, sliced with the stride in the tile kernel."""
    module = parse_module(STRIDED_SLICE, "m")
    x = random_inputs(module.parameter_types, 0)
    want = evaluate(module, x)[0]
    outer = strip(identity(module), 2, "i", 0)
    assert str(outer.tile.parameter_types[0]) == "f32[3,24]{1,0}"
    assert outer.inputs[0].const == 96 and outer.inputs[0].terms == (("i", 384),)  # row 1, then 4 rows on
    checked = 0
    for d in cut_dimensions(module):
        for t in tile_sizes(module, d):
            tiling = strip(identity(module), t, "i", d)
            np.testing.assert_array_equal(_run_tiled(tiling, module, x), want)
            for u in tile_sizes(tiling.tile, 1 - d):
                np.testing.assert_array_equal(_run_tiled(strip(tiling, u, "j", 1 - d), module, x), want)
                checked += 1
    assert checked >= 4


def test_a_strided_slice_compiles_into_strided_tile_moves():
    """Every third float of a row: a tile load of 4-byte rows 12 bytes apart, stored packed."""
    res = compile_hlo(amx.TARGET, """HloModule m
ENTRY e {
  a = f32[1,64]{1,0} parameter(0)
  ROOT r = f32[1,16]{1,0} slice(a), slice={[0:1], [1:48:3]}
}""", CompileOptions(deterministic=True, timeout=30))
    load, store = res.program.instructions
    assert (load.name, load.attrs["rows"], load.attrs["colsb"], load.attrs["stride"]) == ("tileloadd", 16, 4, 12)
    assert (store.name, store.attrs["colsb"], store.attrs["stride"]) == ("tilestored", 4, 4)
    assert verify(amx.TARGET, res) == []


# Act's oneDNN K3 in small: a slice whole along the strip, reshapes that keep the
# strip dimension, and an output tiled T(4,8) whose tiles of fewer rows are windows
SLICE_RESHAPE_TILED = """HloModule m
ENTRY e {
  a = f32[16]{0} parameter(0)
  b = f32[4,3]{1,0} parameter(1)
  r = f32[16,1]{1,0} reshape(a)
  s = f32[4,1]{1,0} slice(b), slice={[0:4], [0:1]}
  t = f32[1,4]{1,0} transpose(s), dimensions={1,0}
  d = f32[16,4]{1,0} dot(r, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT o = f32[4,16]{1,0:T(4,8)} transpose(d), dimensions={1,0}
}"""


def test_slices_and_reshapes_along_the_strip_are_cut_with_it():
    module = parse_module(SLICE_RESHAPE_TILED, "m")
    x = random_inputs(module.parameter_types, 0)
    want = evaluate(module, x)[0]
    cuts = [(d, t) for d in cut_dimensions(module) for t in tile_sizes(module, d)]
    assert (0, 1) in cuts and (1, 8) in cuts
    for d, t in cuts:
        try:
            tiling = strip(identity(module), t, "i", d)
            got = _run_tiled(tiling, module, x)
        except NotTileable as err:  # tiles that cut the layout's T(4,8) tiles unevenly
            assert "layout" in err.message and (d, t) not in ((0, 1), (1, 8))
            continue
        np.testing.assert_array_equal(got, want)
        if (d, t) == (0, 1):  # one row of T(4,8) tiles: untiled in the tile kernel, a window of the whole
            assert tiling.tile.result_type.layout.tiles == ()


ADD16 = """HloModule add16
ENTRY main {
  a = f32[16,16]{1,0} parameter(0)
  b = f32[16,16]{1,0} parameter(1)
  ROOT c = f32[16,16]{1,0} add(a, b)
}"""


def test_a_kernel_too_large_for_straight_line_code_compiles_into_a_loop():
    opts = CompileOptions(timeout=30, direct_share=0.02)
    res = compile_hlo(amx.TARGET, ADD16, opts)
    assert res.tiling is not None and res.program.has_loops
    assert verify(amx.TARGET, res) == []
    assert parse_program(res.text) == res.program
    assert res.program.executed() == 64  # 16 rows: load, load, add, store each


def test_tiling_can_be_switched_off():
    from runtime_skeleton.compile import CompileError

    # f32[16,16] + f32[16,16] is straight-line code now (instruction-tiling cuts it into rows)
    res = compile_hlo(amx.TARGET, ADD16, CompileOptions(timeout=10, tiling=False))
    assert res.tiling is None and res.program.executed() == 64
    with pytest.raises(CompileError) as err:  # over 4096 straight-line instructions
        compile_hlo(amx.TARGET, (ROOT / "examples/kernels/gemm_f32.hlo").read_text(),
                    CompileOptions(timeout=2, tiling=False))
    assert "strip-mining" not in str(err.value)


def test_tile_sizes_of_a_huge_extent_come_at_once():
    """The divisors of an extent of 10^11 (a hostile kernel's operand): the loop over
    range(1, n) ignored the compile's time limit."""
    from runtime_skeleton.superopt.strip import proper_divisors

    assert all(proper_divisors(n) == [t for t in range(1, n) if n % t == 0] for n in range(1, 300))
    assert len(proper_divisors(10**11)) == 143
