"""Byte-flattening under XLA layouts (Act Def. 7, tiled layouts of Act case study 3)."""
import importlib
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime_skeleton.hlo import parse_file
from runtime_skeleton.ir import dtypes
from runtime_skeleton.ir.types import Layout, TensorType, leaves
from runtime_skeleton.layout import bflat, byte_size, unbflat
from runtime_skeleton.sim import parse_program, run_program

ROOT = pathlib.Path(__file__).resolve().parent.parent
AMX_KERNELS = sorted((ROOT / "examples" / "kernels").glob("amx_k*.hlo"))


def test_row_major_is_numpy_bytes():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = TensorType(dtypes.s32, (2, 3))
    assert bflat(a, t) == a.astype("<i4").tobytes()


def test_column_major():
    a = np.arange(6, dtype=np.uint8).reshape(2, 3)
    t = TensorType(dtypes.u8, (2, 3), Layout((0, 1)))
    assert list(bflat(a, t)) == [0, 3, 1, 4, 2, 5]


def test_vnni_tile_groups_four_rows_per_column():
    # s8[8,2]{1,0:T(4,1)}: groups of 4 consecutive rows of one column are contiguous.
    a = np.arange(16, dtype=np.int8).reshape(8, 2)
    t = TensorType(dtypes.s8, (8, 2), Layout((1, 0), ((4, 1),)))
    assert list(bflat(a, t)) == [0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15]


def test_tiles_pad_partial_blocks_with_zeros():
    a = np.ones((3, 3), np.uint8)
    t = TensorType(dtypes.u8, (3, 3), Layout((1, 0), ((2, 2),)))
    assert byte_size(t) == 16
    data = bflat(a, t)
    assert len(data) == 16 and sum(data) == 9
    np.testing.assert_array_equal(unbflat(data, t), a)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_round_trip(data):
    rank = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    perm = tuple(data.draw(st.permutations(range(rank))))
    k = data.draw(st.integers(0, rank))
    tiles = (tuple(data.draw(st.lists(st.integers(1, 4), min_size=k, max_size=k))),) if k else ()
    dt = data.draw(st.sampled_from([dtypes.s8, dtypes.bf16, dtypes.f32, dtypes.u16]))
    t = TensorType(dt, shape, Layout(perm, tiles))
    a = (np.arange(np.prod(shape)) % 100).reshape(shape).astype(dt.np)
    flat = bflat(a, t)
    assert len(flat) == byte_size(t)
    np.testing.assert_array_equal(unbflat(flat, t), a)


# ---- the tiled layouts of the Act paper's AMX kernels (examples/kernels/amx_k*.hlo) ----------


def _typed_arrays(path):
    """(type, array) for every parameter and result leaf, arrays from the kernel's .npz."""
    m = parse_file(path)
    with np.load(path.with_suffix(".npz")) as z:
        args = [(t, z[f"arg{i}"]) for i, t in enumerate(m.parameter_types)]
        outs = [(t, z[f"out{i}"]) for i, t in enumerate(leaves(m.result_type))]
    return args + outs


@pytest.mark.parametrize("path", AMX_KERNELS, ids=[p.stem for p in AMX_KERNELS])
def test_amx_kernel_tiled_layouts_round_trip(path):
    tiled = [(t, a) for t, a in _typed_arrays(path) if t.effective_layout.tiles]
    assert tiled, f"{path.name} has no tiled layout"
    for t, a in tiled:
        flat = bflat(a, t)
        assert len(flat) == byte_size(t) == t.nbytes  # these tiles divide the shapes: no padding
        np.testing.assert_array_equal(unbflat(flat, t), a)


@pytest.mark.parametrize("name", ["amx_k1", "amx_k2", "amx_k5"])
def test_amx_b_operand_is_two_vnni_tiles(name):
    """B[n, k] in {1,0:T(16,4)}: 1 KiB tile j, row r, bytes 4n..4n+3 = B[16j+n, 4r..4r+3]."""
    t, b = _typed_arrays(ROOT / "examples" / "kernels" / f"{name}.hlo")[1]
    tiles = np.frombuffer(bflat(b, t), np.int8).reshape(2, 16, 16, 4)  # [j, r, n, i]
    np.testing.assert_array_equal(tiles, b.reshape(2, 16, 16, 4).transpose(0, 2, 1, 3))


@pytest.mark.parametrize("name", ["amx_k1", "amx_k2"])
def test_paper_amx_code_computes_the_kernel(name):
    """The compiled code of Act Fig. 43 (K1) / Fig. 46 (K2), with the paper's addresses and
    contiguous 1 KiB tiles, computes the kernel's stored outputs exactly under its layouts."""
    prog_path = ROOT / "examples" / "amx" / f"{name}.s"
    prog = parse_program(prog_path.read_text(), str(prog_path))
    with np.load(ROOT / "examples" / "kernels" / f"{name}.npz") as z:
        args, want = [z["arg0"], z["arg1"]], z["out0"]
    (got,) = run_program(importlib.import_module("generated.amx").TARGET, prog, args)
    np.testing.assert_array_equal(got, want)
