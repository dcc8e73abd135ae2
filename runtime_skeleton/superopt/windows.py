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

from dataclasses import replace

from ..ir.attrs import PadDim, SliceDim
from ..ir.dtypes import DTYPES, DType
from ..ir.graph import Computation, Instruction, Module
from ..ir.types import TensorType
from ..isel.bflat import Step, flatten_steps, fold, unflatten_steps, zero_literal
from ..layout.axe import Layout, LayoutError, compose
from ..layout.flatten import storage
from .strip import OUTPUT, NotTileable, Placement, Tiling

U8 = DTYPES["u8"]


def window(whole: TensorType, tile: TensorType) -> tuple[int, int, int] | None:
    """(rows, row bytes, pitch) of a tile of ``whole`` in memory; None when the tile
    is one contiguous run of bytes in its own layout's order.

    The tile is the box of ``tile.shape`` in whole's layout (an Axe slice). It is a
    window when that box is ``rows`` runs of ``row`` contiguous elements at one
    ``pitch`` and, read run after run, the elements come in the tile's own layout:
    box = window ∘ own layout, checked as an equality of layouts."""
    st, own = storage(whole), storage(tile)
    if own.shape != tile.shape:
        raise NotTileable(f"a tile {tile} that its own layout pads")
    try:
        box = st.layout.slice(st.shape, (0,) * whole.rank, tile.shape)
    except LayoutError as e:
        raise NotTileable(f"a tile {tile} of {whole}: {e}") from e
    box = replace(box, offset=()).canonical()
    its = sorted(box.shard, key=lambda it: it.stride)
    row, k = 1, 0
    while k < len(its) and its[k].stride == row:
        row *= its[k].extent
        k += 1
    rows, pitch = 1, its[k].stride if k < len(its) else row
    for it in its[k:]:
        if it.stride != pitch * rows:
            raise NotTileable(f"a tile {tile} of {whole} is not rows at one pitch (a window of a window)")
        rows *= it.extent
    runs = Layout.strided((rows, pitch), (row, 1))
    try:
        same = compose(runs, own.layout).same(box)
    except LayoutError:
        same = False
    if not same:
        raise NotTileable(f"a tile {tile} of {whole}: its bytes are not in the tile's own layout order")
    if rows == 1:
        return None
    e = whole.dtype.nbytes
    return rows, row * e, pitch * e


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

    def zero(self, dt: DType = U8) -> str:
        return self.emit("zero.w", "constant", TensorType(dt, ()), (), {"literal": zero_literal(dt)})

    def chain(self, x: str, steps: list[Step], name: str) -> str:
        """``steps`` applied to ``x``; the last operator is named ``name``."""
        count = iter(range(len(steps) - 1, -1, -1))

        def make(s: Step, ops: tuple[str, ...]) -> str:
            return self.emit(f"{ops[0]}.{s.opcode}" if next(count) else name, s.opcode, s.type, ops, dict(s.attrs))

        return fold(x, steps, make, self.zero)

    def rows_of(self, flat: str, rows: int, row: int, pitch: int) -> str:
        """The window bytes as u8[rows, pitch] (the last row padded)."""
        full = self.emit(f"{flat}.pad", "pad", _bytes(rows * pitch), (flat, self.zero()),
                         {"padding": (PadDim(0, pitch - row),)})
        return self.emit(f"{flat}.rows", "reshape", _bytes(rows, pitch), (full,))

    def unpack(self, flat: str, ty: TensorType, rows: int, row: int, pitch: int, name: str) -> None:
        """``name`` = the tile of type ``ty`` in the window bytes ``flat``: the rows'
        bytes, then byte-flattening undone (``unflatten_steps``)."""
        steps = unflatten_steps(ty)
        if steps[0].type == _bytes(rows, row):  # the rows already have that shape
            steps = steps[1:]
        grid = self.rows_of(flat, rows, row, pitch)
        part = self.emit(f"{flat}.part" if steps else name, "slice", _bytes(rows, row), (grid,),
                         {"slice": (SliceDim(0, rows), SliceDim(0, row))})
        self.chain(part, steps, name)

    def merge(self, tile: str, ty: TensorType, old: str, rows: int, row: int, pitch: int) -> str:
        """The window bytes ``old`` with its rows replaced by the tile's (the strided store)."""
        steps = flatten_steps(ty)
        steps[-1] = replace(steps[-1], type=_bytes(rows, row))  # the bytes as the window's rows
        if len(steps) > 1 and steps[-2].type == steps[-1].type:
            steps.pop()
        b = self.chain(tile, steps, f"{tile}.bytes")
        grid = self.rows_of(old, rows, row, pitch)
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
                 output_alias=module.output_alias if alias is None else alias, resident=module.resident,
                 output_written=True)
    return out, tuple(places)

