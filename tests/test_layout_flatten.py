"""Byte-flattening under XLA layouts (Act Def. 7, tiled layouts of Act case study 3)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime_skeleton.ir import dtypes
from runtime_skeleton.ir.types import Layout, TensorType
from runtime_skeleton.layout import bflat, byte_size, unbflat


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
