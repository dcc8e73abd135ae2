"""Byte-flattening as operator chains (Act Def. 7, C.1, case study 3): a kernel
input is a u8 vector on d0 and ``unflatten`` rebuilds the logical tensor from it
with reshape / bitcast-convert / transpose / slice, read off the type's layout
(``layout.storage``: XLA layouts and one level of tiling as Axe iters);
``flatten`` is the inverse, applied to each kernel output.

The chains are lists of ``Step``s, so that the e-graph's terms (here) and the
tile kernels' HLO instructions (``superopt.windows``) are built from one
description."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, TypeVar

import numpy as np

from ..errors import ActgenError
from ..ir import dtypes
from ..ir.attrs import Literal, PadDim, SliceDim
from ..ir.types import TensorType
from ..layout.flatten import byte_size, storage
from ..target import BufferDef
from .terms import Class, Term

u8 = dtypes.u8
X = TypeVar("X")


@dataclass(frozen=True)
class Step:
    """One single-operand operator of a chain; a ``pad`` also takes the zero of its
    element type (``zero_literal``)."""

    opcode: str
    type: TensorType
    attrs: tuple[tuple[str, Any], ...] = ()


def _t(dt: dtypes.DType, shape) -> TensorType:  # noqa: ANN001
    return TensorType(dt, tuple(shape))


def bytes_to_steps(dt: dtypes.DType, shape: tuple[int, ...]) -> list[Step]:
    """u8 bytes (any shape) -> dt[shape] (row-major bytes, little-endian elements)."""
    w = dt.nbytes
    if dt == u8:
        return [Step("reshape", _t(u8, shape))]
    if dt.is_pred:
        return [Step("reshape", _t(u8, shape)), Step("convert", _t(dt, shape))]
    inner = shape + (w,) if w > 1 else shape
    return [Step("reshape", _t(u8, inner)), Step("bitcast-convert", _t(dt, shape))]


def to_bytes_steps(dt: dtypes.DType, shape: tuple[int, ...]) -> list[Step]:
    """dt[shape] -> its u8 bytes as one vector."""
    n = int(np.prod(shape, dtype=np.int64)) * max(dt.nbytes, 1)
    if dt == u8:
        return [Step("reshape", _t(u8, (n,)))]
    if dt.is_pred:
        return [Step("convert", _t(u8, shape)), Step("reshape", _t(u8, (n,)))]
    inner = shape + (dt.nbytes,) if dt.nbytes > 1 else shape
    return [Step("bitcast-convert", _t(u8, inner)), Step("reshape", _t(u8, (n,)))]


def unflatten_steps(t: TensorType) -> list[Step]:
    """Bytes -> the logical tensor: the bytes as the layout's iters in memory order,
    transposed into logical order, merged into dimensions, cut to the unpadded shape."""
    st = storage(t)
    its, order = st.layout.shard, st.storage_order()
    split = tuple(it.extent for it in its)
    steps = bytes_to_steps(t.dtype, tuple(split[k] for k in order))
    if order != tuple(range(len(its))):
        steps.append(Step("transpose", _t(t.dtype, split), (("dimensions", tuple(order.index(i) for i in range(len(its)))),)))
    if split != st.shape:
        steps.append(Step("reshape", _t(t.dtype, st.shape)))
    if st.shape != t.shape:
        steps.append(Step("slice", _t(t.dtype, t.shape), (("slice", tuple(SliceDim(0, d, 1) for d in t.shape)),)))
    return steps


def flatten_steps(t: TensorType) -> list[Step]:
    """The logical tensor -> its bytes (the inverse of ``unflatten_steps``: pad, split
    into the layout's iters, transpose into memory order)."""
    st = storage(t)
    its, order = st.layout.shard, st.storage_order()
    split = tuple(it.extent for it in its)
    steps = []
    if st.shape != t.shape:
        if t.dtype.is_pred:
            raise ActgenError(f"padded tiled layouts of pred tensors are not supported ({t})")
        steps.append(Step("pad", _t(t.dtype, st.shape),
                          (("padding", tuple(PadDim(0, p - d, 0) for p, d in zip(st.shape, t.shape))),)))
    if split != st.shape:
        steps.append(Step("reshape", _t(t.dtype, split)))
    stored = tuple(split[k] for k in order)
    if order != tuple(range(len(its))):
        steps.append(Step("transpose", _t(t.dtype, stored), (("dimensions", order),)))
    return steps + to_bytes_steps(t.dtype, stored)


def reinterpret_steps(src: TensorType, dst: TensorType) -> list[Step]:
    """``src``'s bytes, row-major, read as ``dst`` (as many bytes): reshape and
    bitcast-convert, a wider element type taking consecutive narrow ones."""
    if src.dtype == dst.dtype:
        return [] if src.shape == dst.shape else [Step("reshape", dst.with_layout(None))]
    if src.dtype.is_pred or dst.dtype.is_pred:
        raise ActgenError(f"pred values are not bytes: {src} cannot be read as {dst}")
    a, b = src.dtype.nbytes, dst.dtype.nbytes
    if a <= b:
        inner = dst.shape + ((b // a,) if b > a else ())
        steps = [] if inner == src.shape else [Step("reshape", _t(src.dtype, inner))]
        return steps + [Step("bitcast-convert", dst.with_layout(None))]
    steps = [Step("bitcast-convert", _t(dst.dtype, src.shape + (a // b,)))]
    return steps + [Step("reshape", dst.with_layout(None))]


def resident_type(buffer: BufferDef, t: TensorType) -> TensorType:
    """The type a value of type ``t`` has when it is kept in ``buffer`` from its start:
    ``t`` itself in a buffer of its element type and slice rank; otherwise its bytes as the buffer's
    rows (an s32 accumulator in AMX's byte tiles: s8[1, 16, 64]; a tile f32[1, 1, 16] of a
    batched kernel in a zmm register: f32[1, 16]), the slice shape the buffer's
    instructions read and write."""
    if buffer.dtype == t.dtype and t.rank == len(buffer.access_shape) + len(buffer.unit_shape):
        return t.with_layout(None)
    unit = buffer.row_nbytes
    if t.dtype.is_pred or buffer.dtype.is_pred or t.nbytes % unit:
        raise ActgenError(f"{t} is not whole rows of {buffer.name}")
    rows, shape = t.nbytes // unit, []
    for extent in reversed(buffer.access_shape):
        take = min(rows, extent)
        if rows % take:
            raise ActgenError(f"{t} is not whole rows of {buffer.name}")
        shape.insert(0, take)
        rows //= take
    if rows != 1:
        raise ActgenError(f"{t} does not fit in {buffer.name}")
    return TensorType(buffer.dtype, tuple(shape) + buffer.unit_shape)


def zero_literal(dt: dtypes.DType) -> Literal:
    return Literal(dt, np.zeros((), dt.np))


def fold(x: X, steps: list[Step], make: Callable[[Step, tuple], X], zero: Callable[[dtypes.DType], X]) -> X:
    """Apply ``steps`` to ``x``; ``make(step, operands)`` builds one operator."""
    for s in steps:
        x = make(s, (x, zero(s.type.dtype)) if s.opcode == "pad" else (x,))
    return x


def term(s: Step, operands: tuple) -> Term:
    return Term(s.opcode, s.type, operands, dict(s.attrs))


def zero_term(dt: dtypes.DType) -> Term:
    return Term("constant", _t(dt, ()), (), {"literal": zero_literal(dt)})


def flat_type(t: TensorType) -> TensorType:
    return _t(u8, (byte_size(t),))


def unflatten(flat: Term | Class, t: TensorType) -> Term | Class:
    """The logical tensor of type ``t`` stored as ``flat`` under t's layout."""
    return fold(flat, unflatten_steps(t), term, zero_term)


def flatten(x: Term | Class, t: TensorType) -> Term | Class:
    """The u8 vector storing tensor ``x`` of type ``t`` under t's layout."""
    return fold(x, flatten_steps(t), term, zero_term)
