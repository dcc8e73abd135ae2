"""Strided windows: how a tile that is not a contiguous byte range of its whole
tensor reaches the tile kernel compiled by phases 1-2.

A tile of a row-major tensor is ``rows`` rows of ``row`` contiguous bytes,
``pitch`` bytes apart (a column block of a matrix, say). The tile kernel then
takes the flat bytes from the first row's start to the last row's end and
unpacks them by pad, reshape and slice — the strided-load semantics DMA
instructions have (Gemmini's mvin, AMX's tileloadd), so phase 1 maps the unpack
onto one such instruction. An output tile that is a window is written in place:
the kernel also reads the window's old bytes and returns them with the tile's
rows replaced (the output takes over that parameter's storage,
``Module.output_alias``): a strided store.
"""
from __future__ import annotations

import numpy as np

from ..ir.attrs import Literal, PadDim, SliceDim
from ..ir.dtypes import DTYPES
from ..ir.graph import Computation, Instruction, Module
from ..ir.types import TensorType
from ..layout.flatten import physical_order
from .strip import OUTPUT, NotTileable, Placement, Tiling, strides

U8 = DTYPES["u8"]


def window(whole: TensorType, tile: TensorType) -> tuple[int, int, int] | None:
    """(rows, row bytes, pitch) of a tile of ``whole`` in memory; None when contiguous."""
    st = strides(whole)
    perm, _ = physical_order(whole)
    dims = [(tile.shape[d], st[d]) for d in perm if tile.shape[d] > 1]
    k, row = len(dims), whole.dtype.nbytes
    while k and dims[k - 1][1] == row:  # the contiguous innermost part
        row *= dims[k - 1][0]
        k -= 1
    if not k:
        return None
    if perm != tuple(range(whole.rank)):
        raise NotTileable(f"a strided tile of {whole}: only row-major layouts are unpacked")
    rows, pitch = dims[k - 1]
    for ext, s in reversed(dims[:k - 1]):
        if s != pitch * rows:
            raise NotTileable(f"a tile {tile} of {whole} is not rows at one pitch (a window of a window)")
        rows *= ext
    return rows, row, pitch


def span(rows: int, row: int, pitch: int) -> int:
    """Bytes from a window's first byte to its last."""
    return (rows - 1) * pitch + row


def _bytes(*shape: int) -> TensorType:
    return TensorType(U8, shape)


class _Emitter:
    def __init__(self, taken: set[str]):
        self.out: list[Instruction] = []
        self.taken = taken

    def emit(self, name: str, opcode: str, ty: TensorType, operands: tuple[str, ...] = (), attrs=None) -> str:
        new, k = name, 0
        while new in self.taken:
            k += 1
            new = f"{name}.{k}"
        self.taken.add(new)
        self.out.append(Instruction(new, opcode, ty, operands, attrs or {}))
        return new

    def zero(self) -> str:
        return self.emit("zero.w", "constant", _bytes(), (), {"literal": Literal(U8, np.zeros((), np.uint8))})

    def rows_of(self, flat: str, rows: int, row: int, pitch: int) -> tuple[str, str]:
        """The window bytes as u8[rows, pitch] (the last row padded), and that array's name."""
        full = self.emit(f"{flat}.pad", "pad", _bytes(rows * pitch), (flat, self.zero()),
                         {"padding": (PadDim(0, pitch - row),)})
        return self.emit(f"{flat}.rows", "reshape", _bytes(rows, pitch), (full,)), full

    def unpack(self, flat: str, ty: TensorType, rows: int, row: int, pitch: int, name: str) -> None:
        """``name`` = the tile of type ``ty`` in the window bytes ``flat``."""
        grid, _ = self.rows_of(flat, rows, row, pitch)
        part = self.emit(f"{flat}.part", "slice", _bytes(rows, row), (grid,),
                         {"slice": (SliceDim(0, rows), SliceDim(0, row))})
        e = ty.dtype.nbytes
        cols = row // e
        if e > 1:
            part = self.emit(f"{flat}.elems", "reshape", _bytes(rows, cols, e), (part,))
        flat_ty = TensorType(ty.dtype, (rows, cols))
        if flat_ty.shape == ty.shape:
            self.emit(name, "bitcast-convert", ty, (part,))
        else:
            vals = self.emit(f"{flat}.vals", "bitcast-convert", flat_ty, (part,))
            self.emit(name, "reshape", ty, (vals,))

    def merge(self, tile: str, ty: TensorType, old: str, rows: int, row: int, pitch: int) -> str:
        """The window bytes ``old`` with its rows replaced by the tile's (the strided store)."""
        e = ty.dtype.nbytes
        vals = self.emit(f"{tile}.rows", "reshape", TensorType(ty.dtype, (rows, row // e)), (tile,))
        if e > 1:
            b = self.emit(f"{tile}.b", "bitcast-convert", _bytes(rows, row // e, e), (vals,))
            b = self.emit(f"{tile}.bytes", "reshape", _bytes(rows, row), (b,))
        else:
            b = self.emit(f"{tile}.bytes", "bitcast-convert", _bytes(rows, row), (vals,))
        grid, _ = self.rows_of(old, rows, row, pitch)
        keep = self.emit(f"{old}.keep", "slice", _bytes(rows, pitch - row), (grid,),
                         {"slice": (SliceDim(0, rows), SliceDim(row, pitch))})
        new = self.emit(f"{tile}.merged", "concatenate", _bytes(rows, pitch), (b, keep), {"dimensions": (1,)})
        flat = self.emit(f"{tile}.flat", "reshape", _bytes(rows * pitch), (new,))
        n = span(rows, row, pitch)
        return self.emit(f"{tile}.window", "slice", _bytes(n), (flat,), {"slice": (SliceDim(0, n),)})


def windowed(tiling: Tiling) -> tuple[Module, tuple[Placement | None, ...]]:
    """The tile kernel as phases 1-2 compile it, with the placements of its
    parameters: strided tiles become flat windows unpacked in the kernel, and a
    strided output tile is written in place into its old bytes (a new parameter)."""
    module = tiling.tile
    comp = module.entry_computation
    em = _Emitter({i.name for i in comp.instructions})
    places = list(tiling.inputs)
    for ins in comp.instructions:
        n = ins.attrs.get("parameter_number") if ins.opcode == "parameter" else None
        geo = None if n is None or places[n] is None else window(tiling.whole(places[n]), ins.tensor_type)
        if geo is None:
            em.out.append(ins)
            continue
        flat = em.emit(f"{ins.name}.w", "parameter", _bytes(span(*geo)), (), {"parameter_number": n})
        em.taken.discard(ins.name)  # the unpacked tile keeps the parameter's name: its users stay as they are
        em.unpack(flat, ins.tensor_type, *geo, name=ins.name)
    root, alias = comp.root, None
    out_geo = None if module.resident_in(OUTPUT) else window(tiling.whole_output, comp.root_instruction.tensor_type)
    if out_geo is not None:
        alias = len(places)
        old = em.emit(f"{root}.old", "parameter", _bytes(span(*out_geo)), (), {"parameter_number": alias})
        places.append(Placement(OUTPUT, tiling.output.const, tiling.output.terms))
        root = em.merge(root, comp.root_instruction.tensor_type, old, *out_geo)
    if module.output_alias is not None and alias is not None:
        raise NotTileable("the tile kernel already writes its output in place")
    entry = Computation(comp.name, em.out, root)
    out = Module(module.name, {**module.computations, comp.name: entry}, module.entry,
                 output_alias=module.output_alias if alias is None else alias, resident=module.resident)
    return out, tuple(places)

