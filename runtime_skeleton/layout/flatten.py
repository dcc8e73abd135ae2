"""Byte-flattening (Act Def. 7): a tensor as the little-endian bytes of its XLA layout.

An XLA layout is an Axe layout (``axe``) onto the memory axis: ``minor_to_major``
orders the dimensions, and a tile ``T(a, b)`` pads the minor-most dimensions of
that order to multiples of the tile and stores whole tiles contiguously, tiles in
row-major order — the Kronecker product of a row-major tile with the row-major
grid of tiles. Only one level of tiling is supported; deeper tilings raise a
clear error.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ActgenError
from ..ir.types import TensorType
from .axe import Iter, Layout, tile


def physical_order(t: TensorType) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(permutation into major-to-minor order, tile or ())."""
    layout = t.effective_layout
    if sorted(layout.minor_to_major) != list(range(t.rank)):
        raise ActgenError(f"layout {layout} is not a permutation of the dimensions of {t}")
    if len(layout.tiles) > 1:
        raise ActgenError(f"layout {layout}: nested tilings are not supported yet (only one T(...))")
    tile_ = layout.tiles[0] if layout.tiles else ()
    if len(tile_) > t.rank:
        raise ActgenError(f"layout {layout}: tile has more dimensions than {t}")
    return tuple(reversed(layout.minor_to_major)), tile_


def tiled_shape(shape: tuple[int, ...], tile_: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    k = len(tile_)
    padded = shape[: len(shape) - k] + tuple(-(-d // b) * b for d, b in zip(shape[len(shape) - k :], tile_))
    return padded, tile_


@dataclass(frozen=True)
class Storage:
    """A tensor type's XLA layout as an Axe layout over its (tile-padded) logical
    shape, strides in elements, with each dimension's iters (``blocks``)."""

    shape: tuple[int, ...]  # the logical shape padded to whole tiles
    blocks: tuple[tuple[Iter, ...], ...]  # per logical dimension, most significant first
    nbytes: int

    @property
    def layout(self) -> Layout:
        return Layout(tuple(it for b in self.blocks for it in b))

    @property
    def bytes(self) -> Layout:
        """The layout in bytes: where each element starts."""
        return self.layout.scaled(self.nbytes)

    def storage_order(self) -> tuple[int, ...]:
        """The iters (numbered as in ``layout``) from the most significant in memory."""
        its = self.layout.shard
        return tuple(sorted(range(len(its)), key=lambda k: (-its[k].stride, -its[k].extent, k)))


def storage(t: TensorType) -> Storage:
    perm, tile_ = physical_order(t)
    phys = tuple(t.shape[p] for p in perm)
    padded, _ = tiled_shape(phys, tile_)
    r, k = len(phys), len(tile_)
    if any(d < 1 for d in phys):
        raise ActgenError(f"{t} has no elements")
    if not tile_:
        lay = Layout.row_major(phys)
        phys_blocks = [(it,) for it in lay.shard]
    else:
        grid = padded[: r - k] + tuple(d // b for d, b in zip(padded[r - k:], tile_))
        inner = (1,) * (r - k) + tile_
        lay = tile(Layout.row_major(inner), inner, Layout.row_major(grid), grid)
        # each leading dimension is its grid iter; each tiled one, its grid iter then its tile iter
        its = list(lay.shard)
        phys_blocks = [(its[2 * j],) for j in range(r - k)] + \
            [(its[2 * j], its[2 * j + 1]) for j in range(r - k, r)]
    blocks = tuple(phys_blocks[perm.index(i)] for i in range(r))
    return Storage(tuple(padded[perm.index(i)] for i in range(r)), blocks, t.dtype.nbytes)


def byte_size(t: TensorType) -> int:
    physical_order(t)
    if 0 in t.shape:
        return 0
    return math.prod(storage(t).shape) * t.dtype.nbytes


def bflat(arr: np.ndarray, t: TensorType) -> bytes:
    a = np.asarray(arr, dtype=t.dtype.np)
    if a.size == 0:
        return b""
    st = storage(t)
    if st.shape != a.shape:
        a = np.pad(a, [(0, p - d) for p, d in zip(st.shape, a.shape)])
    out = np.zeros(a.size, t.dtype.np)
    out[st.layout.offsets()] = a.reshape(-1)
    return out.astype(out.dtype.newbyteorder("<"), copy=False).tobytes()


def unbflat(data: bytes | np.ndarray, t: TensorType) -> np.ndarray:
    if byte_size(t) == 0:
        return np.zeros(t.shape, t.dtype.np)
    st = storage(t)
    raw = np.frombuffer(bytes(data), dtype=t.dtype.np.newbyteorder("<"))[: byte_size(t) // t.dtype.nbytes]
    a = raw[st.layout.offsets()].reshape(st.shape)
    return np.ascontiguousarray(a[tuple(slice(0, d) for d in t.shape)].astype(t.dtype.np))
