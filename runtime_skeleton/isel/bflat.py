"""Byte-flattening as terms (Act Def. 7, C.1, case study 3): a kernel input is a
u8 vector on d0 and ``unflatten`` rebuilds the logical tensor from it with
reshape / bitcast-convert / transpose / slice (XLA layouts and one level of
tiling); ``flatten`` is the inverse, applied to each kernel output."""
from __future__ import annotations

from ..errors import ActgenError
from ..ir import dtypes
from ..ir.attrs import PadDim, SliceDim
from ..ir.types import TensorType
from ..layout.flatten import physical_order, tiled_shape, byte_size
from .terms import Class, Term

u8 = dtypes.u8


def _t(dt: dtypes.DType, shape) -> TensorType:  # noqa: ANN001
    return TensorType(dt, tuple(shape))


def _bytes_to(x: Term | Class, dt: dtypes.DType, shape: tuple[int, ...]) -> Term | Class:
    """u8 vector -> dt[shape] (row-major bytes, little-endian elements)."""
    w = dt.nbytes
    if dt == u8:
        return Term("reshape", _t(u8, shape), (x,))
    if dt.is_pred:
        return Term("convert", _t(dt, shape), (Term("reshape", _t(u8, shape), (x,)),))
    inner = shape + (w,) if w > 1 else shape
    return Term("bitcast-convert", _t(dt, shape), (Term("reshape", _t(u8, inner), (x,)),))


def _to_bytes(x: Term | Class, dt: dtypes.DType, shape: tuple[int, ...]) -> Term:
    w, n = dt.nbytes, 1
    for d in shape:
        n *= d
    if dt == u8:
        return Term("reshape", _t(u8, (n,)), (x,))
    if dt.is_pred:
        return Term("reshape", _t(u8, (n,)), (Term("convert", _t(u8, shape), (x,)),))
    inner = shape + (w,) if w > 1 else shape
    return Term("reshape", _t(u8, (n * w,)), (Term("bitcast-convert", _t(u8, inner), (x,)),))


def flat_type(t: TensorType) -> TensorType:
    return _t(u8, (byte_size(t),))


def unflatten(flat: Term | Class, t: TensorType) -> Term | Class:
    """The logical tensor of type ``t`` stored as ``flat`` under t's layout."""
    perm, tile = physical_order(t)
    phys = tuple(t.shape[p] for p in perm)
    if not tile:
        x = _bytes_to(flat, t.dtype, phys)
    else:
        x = _untile(flat, t, phys, tile)
    if perm != tuple(range(t.rank)):
        x = Term("transpose", _t(t.dtype, t.shape), (x,), {"dimensions": tuple(perm.index(i) for i in range(t.rank))})
    return x


def flatten(x: Term | Class, t: TensorType) -> Term | Class:
    """The u8 vector storing tensor ``x`` of type ``t`` under t's layout."""
    perm, tile = physical_order(t)
    phys = tuple(t.shape[p] for p in perm)
    if perm != tuple(range(t.rank)):
        x = Term("transpose", _t(t.dtype, phys), (x,), {"dimensions": perm})
    if not tile:
        return _to_bytes(x, t.dtype, phys)
    return _tile(x, t, phys, tile)


def _blocked(phys, tile):  # noqa: ANN001, ANN202
    r, k = len(phys), len(tile)
    padded, _ = tiled_shape(phys, tile)
    split = padded[: r - k] + tuple(x for d, b in zip(padded[r - k :], tile) for x in (d // b, b))
    order_out = list(range(r - k)) + [r - k + 2 * i for i in range(k)] + [r - k + 2 * i + 1 for i in range(k)]
    return padded, split, order_out


def _untile(flat: Term | Class, t: TensorType, phys, tile) -> Term:  # noqa: ANN001
    padded, split, order = _blocked(phys, tile)
    stored = tuple(split[i] for i in order)  # outer blocks, then the tile
    x = _bytes_to(flat, t.dtype, stored)
    inverse = tuple(order.index(i) for i in range(len(order)))
    x = Term("transpose", _t(t.dtype, split), (x,), {"dimensions": inverse})
    x = Term("reshape", _t(t.dtype, padded), (x,))
    if padded != phys:
        x = Term("slice", _t(t.dtype, phys), (x,), {"slice": tuple(SliceDim(0, d, 1) for d in phys)})
    return x


def _tile(x: Term | Class, t: TensorType, phys, tile) -> Term:  # noqa: ANN001
    padded, split, order = _blocked(phys, tile)
    if padded != phys:
        if t.dtype.is_pred:
            raise ActgenError(f"padded tiled layouts of pred tensors are not supported ({t})")
        zero = Term("constant", _t(t.dtype, ()), (), {"literal": _zero(t.dtype)})
        x = Term("pad", _t(t.dtype, padded), (x, zero),
                 {"padding": tuple(PadDim(0, p - d, 0) for p, d in zip(padded, phys))})
    x = Term("reshape", _t(t.dtype, split), (x,))
    stored = tuple(split[i] for i in order)
    x = Term("transpose", _t(t.dtype, stored), (x,), {"dimensions": tuple(order)})
    return _to_bytes(x, t.dtype, stored)


def _zero(dt: dtypes.DType):  # noqa: ANN202
    import numpy as np

    from ..ir.attrs import Literal

    return Literal(dt, np.zeros((), dt.np))
