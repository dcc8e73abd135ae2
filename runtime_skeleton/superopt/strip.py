"""Strip-mining a kernel into a loop over tiles (Axon §4.3's strip loop).

The output is cut along one of its dimensions (by default the outermost, most
major one) into ``trips`` tiles of ``t`` rows. Walking the graph from the root,
every value gets a *label*: which of its dimensions follows the strip (and
whether in reverse order, through a ``reverse``), or ``None`` when each tile needs
the whole value (the right-hand side of a dot, a broadcast operand the strip does
not touch, a scalar). The tile kernel is the same graph with every labelled
dimension cut to ``t``; a parameter the strip runs through becomes a tile of the
input. Its ``Placement`` says where the tile starts in the whole kernel's tensor,
affine in the loop variables: iteration ``i`` moves it by ``i`` times the bytes
from one tile to the next in the whole tensor's layout (``step``: an Axe
grouping of the cut dimension's iters, so row-major, transposed and XLA-tiled
layouts such as AMX's VNNI weights are cut alike). Whether a tile is a
contiguous byte range or a strided window is settled when the innermost tile
kernel is compiled (``windows``), so tiles of tiles compose. A value needed under
two labels is computed twice (once per label), so nothing here depends on how the
graph shares values.

A slice of part of the strip dimension of a kernel input (an offset, a stride) cuts
the input into tiles of its own, a stride apart (``_slice_of_input``).

A ``Tiling`` is always the whole loop nest so far: ``identity(module)`` has no
loops, and ``strip(tiling, ...)`` cuts its tile kernel once more (a nested loop).
Operators whose tiles are not independent (a reduce over the strip dimension, a
reshape that regroups it, a slice of part of the strip of a computed value) make a
kernel not strip-mineable; the error names the operator.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..errors import ActgenError
from ..ir.attrs import SliceDim
from ..ir.graph import Computation, Instruction, Module
from ..ir.ops import ELEMENTWISE
from ..ir.types import TensorType
from ..layout.axe import Layout, LayoutError
from ..layout.flatten import physical_order, storage

OUTPUT = -1  # Placement.source of a tile kernel parameter that is the output's own old bytes
Label = tuple[int, bool] | None  # (strip dimension, reversed tile order), or None: the whole value


class NotTileable(ActgenError):
    """The kernel cannot be cut into independent tiles this way; the message says why."""


@dataclass(frozen=True)
class Placement:
    """Where a tile kernel's HBM tensor lies in the full kernel's tensor: tensor
    ``source`` (an input index, or OUTPUT), at byte offset
    ``const + sum(coef * loop variable)`` from its start."""

    source: int
    const: int = 0
    terms: tuple[tuple[str, int], ...] = ()

    def shifted(self, const: int, terms: tuple[tuple[str, int], ...]) -> Placement:
        merged = dict(self.terms)
        for v, c in terms:
            merged[v] = merged.get(v, 0) + c
        return Placement(self.source, self.const + const, tuple(sorted((v, c) for v, c in merged.items() if c)))

    def at(self, var: str, value: int) -> Placement:
        """The placement with loop variable ``var`` fixed to ``value``."""
        coef = dict(self.terms).get(var, 0)
        return Placement(self.source, self.const + coef * value, tuple((v, c) for v, c in self.terms if v != var))


@dataclass(frozen=True)
class Tiling:
    """A loop nest (outermost first: variable, trip count) whose body is ``tile``,
    with where each of the tile kernel's parameters and its output lie in the whole
    kernel's tensors (``whole_inputs``, ``whole_output``)."""

    loops: tuple[tuple[str, int], ...]
    tile: Module
    inputs: tuple[Placement, ...]  # per parameter of the tile kernel
    output: Placement
    whole_inputs: tuple[TensorType, ...]
    whole_output: TensorType
    dims: tuple[tuple[int, int, int], ...] = field(default=())  # per loop: (dimension, extent, tile rows)

    def describe(self) -> str:
        loops = " x ".join(f"{v}<{n}" for v, n in self.loops) or "no loops"
        return f"{loops} over tiles {self.tile.result_type}"

    def whole(self, place: Placement) -> TensorType:
        return self.whole_output if place.source == OUTPUT else self.whole_inputs[place.source]


def identity(module: Module) -> Tiling:
    """The kernel as its own single tile (no loops): where strip-mining starts."""
    ins = tuple(t for t in module.parameter_types if isinstance(t, TensorType))
    if len(ins) != len(module.parameter_types) or not isinstance(module.result_type, TensorType):
        raise NotTileable("the kernel has tuple-typed parameters or several outputs")
    return Tiling((), module, tuple(Placement(i) for i in range(len(ins))), Placement(OUTPUT), ins,
                  module.result_type)


def step(whole: TensorType, dim: int, t: int) -> int:
    """Bytes from one tile of ``t`` indices along ``dim`` of ``whole`` to the next.

    The dimension's iters in whole's layout (``layout.storage``) must group as
    (extent / t, t) with one iter for the tile number: then tile k starts k times
    that iter's stride further (a row-major row block, a column block, a run of
    whole XLA tiles). Otherwise tiles are not evenly spaced, and not a loop."""
    st = storage(whole)
    n = st.shape[dim]
    try:
        if n % t:
            raise LayoutError(f"{t} does not divide {n}")
        outer = Layout(Layout(st.blocks[dim]).blocks((n // t, t))[0]).canonical().shard
    except LayoutError as e:
        raise NotTileable(f"tiles of {t} along dimension {dim} of {whole}: not aligned with its layout ({e})") from e
    if len(outer) > 1:
        raise NotTileable(f"tiles of {t} along dimension {dim} of {whole} are not evenly spaced in its layout")
    return outer[0].stride * st.nbytes if outer else 0


def strip_dimension(t: TensorType) -> int | None:
    """The most major dimension of extent > 1 (None: a single element)."""
    perm, _ = physical_order(t)
    return next((d for d in perm if t.shape[d] > 1), None)


def tile_sizes(module: Module, dim: int | None = None) -> list[int]:
    """The proper divisors of the output's extent along ``dim`` (default: the strip
    dimension), smallest first ([] when none)."""
    root = module.result_type
    if not isinstance(root, TensorType):
        return []
    d = strip_dimension(root) if dim is None else dim
    if d is None:
        return []
    return proper_divisors(root.shape[d])


def proper_divisors(n: int) -> list[int]:
    """The divisors of n below n, smallest first, in O(sqrt(n)) (an extent can be 10^11)."""
    small = [t for t in range(1, math.isqrt(n) + 1) if n % t == 0]
    return sorted((set(small) | {n // t for t in small}) - {n})


def cut_dimensions(module: Module) -> list[int]:
    """The output dimensions a strip may cut (extent > 1), most major first."""
    root = module.result_type
    if not isinstance(root, TensorType) or module.output_alias is not None or module.resident:
        return []
    perm, _ = physical_order(root)
    return [d for d in perm if root.shape[d] > 1]


def strip(outer: Tiling, t: int, var: str, dim: int | None = None) -> Tiling:
    """``outer`` with its tile kernel cut once more: a loop over output dimension
    ``dim`` (default: the strip dimension) with tiles of ``t`` rows, innermost."""
    module = outer.tile
    comp = module.entry_computation
    root = comp.root_instruction
    if not isinstance(root.type, TensorType):
        raise NotTileable("the kernel has several outputs (a tuple)")
    dim = strip_dimension(root.type) if dim is None else dim
    if dim is None:
        raise NotTileable("the output has a single element")
    n = root.type.shape[dim]
    if t < 1 or t >= n or n % t:
        raise NotTileable(f"tile of {t} rows does not divide the strip of {n}")
    b = _Builder(comp, n, t, var, outer)
    name = b.visit(root.name, (dim, False))
    tile = Module(module.name, {**module.computations, comp.name: Computation(comp.name, b.out, name)}, module.entry)
    out_step = step(outer.whole_output, dim, t)
    return Tiling(outer.loops + ((var, n // t),), tile, tuple(b.placements),
                  outer.output.shifted(0, ((var, out_step),)), outer.whole_inputs, outer.whole_output,
                  outer.dims + ((dim, n, t),))


class _Builder:
    def __init__(self, comp: Computation, n: int, t: int, var: str, outer: Tiling):
        self.comp, self.n, self.t, self.var, self.outer = comp, n, t, var, outer
        self.out: list[Instruction] = []
        self.placements: list[Placement] = []
        self.names: dict[tuple[str, Label], str] = {}
        self.taken = {i.name for i in comp.instructions}

    def visit(self, name: str, label: Label) -> str:
        key = (name, label)
        if key not in self.names:
            self.names[key] = self._make(self.comp[name], label)
        return self.names[key]

    def _fresh(self, name: str, label: Label) -> str:
        if label is None:
            return name
        base = f"{name}.{'r' if label[1] else 't'}{label[0]}"
        new, k = base, 0
        while new in self.taken:
            k += 1
            new = f"{base}.{k}"
        self.taken.add(new)
        return new

    def _make(self, ins: Instruction, label: Label) -> str:
        if label is None and ins.opcode != "parameter":
            operands = tuple(self.visit(o, None) for o in ins.operands)
            self.out.append(replace(ins, operands=operands))
            return ins.name
        if ins.opcode == "parameter":
            return self._parameter(ins, label)
        dim, rev = label
        if ins.opcode == "slice" and ins.attrs["slice"][dim] != SliceDim(0, self.comp[ins.operands[0]].type.shape[dim], 1):
            return self._slice_of_input(ins, label)
        labels = self._operand_labels(ins, dim, rev)
        operands = tuple(self.visit(o, lab) for o, lab in zip(ins.operands, labels))
        new = Instruction(self._fresh(ins.name, label), ins.opcode, self._cut(ins.tensor_type, dim), operands,
                          self._cut_attrs(ins, dim), ins.loc)
        self.out.append(new)
        return new.name

    def _cut(self, t: TensorType, dim: int, rows: int | None = None) -> TensorType:
        """The type of one tile: ``dim`` cut to the tile's rows (or ``rows``), in the same
        layout unless the tile is smaller than its tiles (``T(14,16)`` of a 1x16 tile):
        then untiled, its elements in the same order, and the tile a window of the
        whole (``windows``)."""
        rows = self.t if rows is None else rows
        cut = TensorType(t.dtype, tuple(rows if d == dim else s for d, s in enumerate(t.shape)), t.layout)
        if t.layout is not None and t.layout.tiles and storage(cut).shape != cut.shape:
            return replace(cut, layout=replace(t.layout, tiles=()))
        return cut

    def _cut_attrs(self, ins: Instruction, dim: int) -> dict:
        """Attributes that name the strip dimension's extent, for one tile (a slice's)."""
        if ins.opcode != "slice":
            return ins.attrs
        dims = list(ins.attrs["slice"])
        dims[dim] = replace(dims[dim], limit=self.t)
        return {**ins.attrs, "slice": tuple(dims)}

    def _parameter(self, ins: Instruction, label: Label) -> str:
        """A parameter of the tile kernel, placed relative to the outer tiling's."""
        src = ins.attrs["parameter_number"]
        where = self.outer.inputs[src]
        if label is None:
            place, ty, name = where, ins.tensor_type, ins.name
        else:
            dim, rev = label
            by = step(self.outer.whole(where), dim, self.t)
            trips = self.n // self.t
            place = where.shifted(by * (trips - 1), ((self.var, -by),)) if rev else \
                where.shifted(0, ((self.var, by),))
            ty, name = self._cut(ins.tensor_type, dim), self._fresh(ins.name, label)
        return self._new_parameter(ins, name, ty, place)

    def _new_parameter(self, ins: Instruction, name: str, ty: TensorType, place: Placement) -> str:
        """Tile kernel parameter ``name`` of type ``ty``, a tile of kernel parameter ``ins`` at ``place``."""
        number = len(self.placements)
        self.placements.append(place)
        self.out.append(Instruction(name, "parameter", ty, (), {**ins.attrs, "parameter_number": number}, ins.loc))
        return name

    def _slice_of_input(self, ins: Instruction, label: Label) -> str:
        """A slice of part of the strip dimension of a kernel input (an offset, a stride):
        tile k of the slice reads rows start + stride * (k * t + j), j < t, of the input,
        so the tile kernel's parameter is the (t - 1) * stride + 1 rows from
        start + k * t * stride, and its slice takes every stride-th of them."""
        dim, rev = label
        src = self.comp[ins.operands[0]]
        if src.opcode != "parameter" or rev:
            raise NotTileable("a slice of part of the strip dimension of a computed value, or in reverse order")
        s = ins.attrs["slice"][dim]
        rows = (self.t - 1) * s.stride + 1
        where = self.outer.inputs[src.attrs["parameter_number"]]
        by = step(self.outer.whole(where), dim, 1)
        name = self._new_parameter(src, self._fresh(src.name, label), self._cut(src.tensor_type, dim, rows),
                                   where.shifted(s.start * by, ((self.var, self.t * s.stride * by),)))
        dims = list(ins.attrs["slice"])
        dims[dim] = SliceDim(0, rows, s.stride)
        new = Instruction(self._fresh(ins.name, label), "slice", self._cut(ins.tensor_type, dim), (name,),
                          {**ins.attrs, "slice": tuple(dims)}, ins.loc)
        self.out.append(new)
        return new.name

    def _operand_labels(self, ins: Instruction, dim: int, rev: bool) -> list[Label]:
        op, rank = ins.opcode, ins.tensor_type.rank
        types = [self.comp[o].type for o in ins.operands]
        same = (dim, rev)
        if op in ELEMENTWISE or op == "bitcast-convert":
            if op == "bitcast-convert" and types[0].rank != rank:
                raise NotTileable("a bitcast-convert that changes the rank")
            return [same if isinstance(ty, TensorType) and ty.rank == rank else None for ty in types]
        if op == "broadcast":
            dims = list(ins.attrs.get("dimensions", ()))
            return [(dims.index(dim), rev) if dim in dims else None]
        if op == "reverse":
            return [(dim, not rev) if dim in ins.attrs.get("dimensions", ()) else same]
        if op == "transpose":
            return [(ins.attrs["dimensions"][dim], rev)]
        if op == "reduce":
            if len(ins.operands) != 2:
                raise NotTileable("a variadic reduce")
            reduced = set(ins.attrs["dimensions"])
            kept = [d for d in range(types[0].rank) if d not in reduced]
            return [(kept[dim], rev), None]
        if op == "dot":
            return self._dot_labels(ins, dim, rev, types)
        if op == "concatenate":
            if ins.attrs["dimensions"][0] == dim:
                raise NotTileable("a concatenate along the strip dimension")
            return [same] * len(types)
        if op == "iota":
            if ins.attrs["iota_dimension"] == dim:
                raise NotTileable("an iota along the strip dimension")
            return []
        if op == "pad":
            p = ins.attrs["padding"][dim]
            if (p.lo, p.hi, p.interior) != (0, 0, 0):
                raise NotTileable("a pad of the strip dimension")
            return [same, None]
        if op == "slice":  # whole along the strip dimension (a part of it: _slice_of_input)
            return [same]
        if op == "reshape":
            return [(_same_dimension(types[0].shape, ins.tensor_type.shape, dim), rev)]
        raise NotTileable(f"{op} across the strip dimension")

    @staticmethod
    def _dot_labels(ins: Instruction, dim: int, rev: bool, types) -> list[Label]:
        a = ins.attrs
        lb, rb = list(a.get("lhs_batch_dims", ())), list(a.get("rhs_batch_dims", ()))
        lc, rc = set(a.get("lhs_contracting_dims", ())), set(a.get("rhs_contracting_dims", ()))
        lfree = [d for d in range(types[0].rank) if d not in lc and d not in lb]
        rfree = [d for d in range(types[1].rank) if d not in rc and d not in rb]
        if dim < len(lb):
            return [(lb[dim], rev), (rb[dim], rev)]
        if dim < len(lb) + len(lfree):
            return [(lfree[dim - len(lb)], rev), None]
        return [None, (rfree[dim - len(lb) - len(lfree)], rev)]


def _same_dimension(src: tuple[int, ...], out: tuple[int, ...], dim: int) -> int:
    """The dimension of a reshape's operand that is the result's ``dim``: the same
    extent after the same number of elements of the major dimensions, so rows of
    ``dim`` are rows of it (row-major order is what reshape keeps)."""
    before = math.prod(out[:dim])
    for d, n in enumerate(src):
        if n == out[dim] and math.prod(src[:d]) == before:
            return d
    raise NotTileable("a reshape that regroups the strip dimension")

