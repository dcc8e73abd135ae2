"""Byte-flattening (Act Def. 7): a tensor as the little-endian bytes of its XLA layout.

``minor_to_major`` orders the dimensions in memory; a tile ``T(a, b)`` (XLA's
tiled layouts) pads the minor-most dimensions of that order to multiples of the
tile and stores whole tiles contiguously, tiles in row-major order. Only one
level of tiling is supported; deeper tilings raise a clear error.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ActgenError
from ..ir.types import TensorType


def physical_order(t: TensorType) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(permutation into major-to-minor order, tile or ())."""
    layout = t.effective_layout
    if sorted(layout.minor_to_major) != list(range(t.rank)):
        raise ActgenError(f"layout {layout} is not a permutation of the dimensions of {t}")
    if len(layout.tiles) > 1:
        raise ActgenError(f"layout {layout}: nested tilings are not supported yet (only one T(...))")
    tile = layout.tiles[0] if layout.tiles else ()
    if len(tile) > t.rank:
        raise ActgenError(f"layout {layout}: tile has more dimensions than {t}")
    return tuple(reversed(layout.minor_to_major)), tile


def tiled_shape(shape: tuple[int, ...], tile: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    k = len(tile)
    padded = shape[: len(shape) - k] + tuple(-(-d // b) * b for d, b in zip(shape[len(shape) - k :], tile))
    return padded, tile


def byte_size(t: TensorType) -> int:
    perm, tile = physical_order(t)
    shape = tuple(t.shape[p] for p in perm)
    if tile:
        shape, _ = tiled_shape(shape, tile)
    return math.prod(shape) * t.dtype.nbytes


def bflat(arr: np.ndarray, t: TensorType) -> bytes:
    perm, tile = physical_order(t)
    a = np.ascontiguousarray(np.asarray(arr, dtype=t.dtype.np).transpose(perm))
    if tile:
        a = _tile(a, tile)
    return a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()


def unbflat(data: bytes | np.ndarray, t: TensorType) -> np.ndarray:
    perm, tile = physical_order(t)
    phys = tuple(t.shape[p] for p in perm)
    raw = np.frombuffer(bytes(data), dtype=t.dtype.np.newbyteorder("<"))[: byte_size(t) // t.dtype.nbytes]
    if tile:
        a = _untile(raw, phys, tile)
    else:
        a = raw.reshape(phys)
    return np.ascontiguousarray(a.astype(t.dtype.np).transpose(np.argsort(perm)))


def _tile(a: np.ndarray, tile: tuple[int, ...]) -> np.ndarray:
    k, r = len(tile), a.ndim
    padded, _ = tiled_shape(a.shape, tile)
    p = np.zeros(padded, a.dtype)
    p[tuple(slice(0, d) for d in a.shape)] = a
    # [.., D1, D2] -> [.., D1/b1, b1, D2/b2, b2] -> [.., D1/b1, D2/b2, b1, b2]
    split = p.shape[: r - k] + tuple(x for d, b in zip(p.shape[r - k :], tile) for x in (d // b, b))
    p = p.reshape(split)
    outer = list(range(r - k)) + [r - k + 2 * i for i in range(k)]
    inner = [r - k + 2 * i + 1 for i in range(k)]
    return p.transpose(outer + inner)


def _untile(raw: np.ndarray, phys: tuple[int, ...], tile: tuple[int, ...]) -> np.ndarray:
    k, r = len(tile), len(phys)
    padded, _ = tiled_shape(phys, tile)
    blocked = padded[: r - k] + tuple(d // b for d, b in zip(padded[r - k :], tile)) + tile
    p = raw.reshape(blocked)
    # inverse of _tile's transpose
    order = list(range(r - k))
    for i in range(k):
        order += [r - k + i, r + i]
    p = p.transpose(order).reshape(padded)
    return p[tuple(slice(0, d) for d in phys)]


