"""Reduction loops: a dot whose contraction is too long for one tile program is
cut along the contracted dimension, and the partial products accumulate in place
on chip (Gemmini's accumulator, an AMX tile).

The kernel is ``E(dot(A, B), ...)``. With the contraction cut into ``trips``
steps of ``t``, the loop body becomes three tile kernels, each compiled by phases
1-2:

  prologue   C = dot(A_0, B_0)                    C on chip
  body       C = C + dot(A_k, B_k)   k = 1..      C on chip, updated in place
  epilogue   out = E(C, ...)                      from chip to HBM

C is a resident value (``Module.resident``): it stays at the start of one on-chip
buffer (as its bytes, in a buffer of another element type) across the three programs, so the accumulation never leaves the chip, and
element-wise work after the dot (bias, ReLU, requantize) is fused into the
epilogue. Which buffer holds C is the search's choice (any on-chip buffer of the
dot's element type). Integer sums are exact in any order; floating-point sums
are reassociated, as every tiled GEMM does.

A reduce is cut the same way along its longest reduced dimension, and its partial
results combine with its reducer's op (C = max(C, reduce_max(X_k)); ``combine``
says when that is sound): a sum over 16 rows of AMX vectors is a loop of vector
loads and adds into registers that stay put.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..ir.attrs import SliceDim
from ..ir.graph import Computation, Instruction, Module, combiner
from ..ir.types import TensorType
from ..isel.bflat import zero_literal
from ..target import TargetDef
from .strip import OUTPUT, NotTileable, Tiling, _Builder


@dataclass(frozen=True)
class Split:
    var: str
    trips: int
    prologue: Tiling
    body: Tiling  # runs for var = 1 .. trips - 1
    epilogue: Tiling
    # the accumulator's first value without a step: the combine's identity (a dot's 0, a
    # reduce's constant init), after which the body runs for var = 0 .. trips - 1; None
    # when the init is computed
    start: Tiling | None = None

    def on(self, buffer: str) -> Split:
        """The split with the accumulator in ``buffer``."""
        def put(t: Tiling, resident: tuple) -> Tiling:
            return replace(t, tile=replace(t.tile, resident=resident))

        return replace(self, prologue=put(self.prologue, ((OUTPUT, buffer),)),
                       start=None if self.start is None else put(self.start, ((OUTPUT, buffer),)),
                       body=put(self.body, ((0, buffer), (OUTPUT, buffer))),
                       epilogue=put(self.epilogue, ((0, buffer),)))

    @property
    def buffer(self) -> str | None:
        """Where the accumulator lives (None before ``on``)."""
        return self.body.tile.resident_in(0)

    def describe(self) -> str:
        return f"{self.var}<{self.trips} accumulating in {self.buffer}"


def contraction(module: Module) -> tuple[Instruction, int] | None:
    """The dot or reduce with the longest dimension it accumulates over (``accumulated``),
    and that dimension's extent."""
    best = None
    comp = module.entry_computation
    for ins in comp.instructions:
        d = accumulated(module, ins)
        if d is None:
            continue
        k = comp[ins.operands[0]].tensor_type.shape[d]
        if best is None or k > best[1]:
            best = (ins, k)
    return best


def accumulated(module: Module, ins: Instruction) -> int | None:
    """The dimension of operand 0 that ``ins`` sums over and that a split cuts: a dot's
    single contracted dimension, the longest reduced one of a reduce whose partial
    results ``combine``; else None."""
    if ins.opcode == "dot":
        dims = ins.attrs.get("lhs_contracting_dims", ())
        return dims[0] if len(dims) == 1 else None
    if combine(module, ins) is None:
        return None
    shape = module.entry_computation[ins.operands[0]].tensor_type.shape
    return max(ins.attrs["dimensions"], key=lambda d: shape[d], default=None)


def combine(module: Module, ins: Instruction) -> str | None:
    """The op that adds up ``ins``'s partial results: add for a dot; for a one-array
    reduce, its reducer's op when op(reduce(x_0, i), reduce(x_1, i)) = reduce(x, i) for
    any cut of x: maximum, minimum, and, or for any init i (idempotent), add with i = 0
    (floats reassociated, as for a dot), multiply with i = 1."""
    if ins.opcode == "dot":
        return "add"
    if ins.opcode != "reduce" or len(ins.operands) != 2:
        return None
    op = combiner(module.computations.get(ins.attrs["to_apply"]))
    if op in ("maximum", "minimum", "and", "or"):
        return op
    init = module.entry_computation[ins.operands[1]]
    if op not in ("add", "multiply") or init.opcode != "constant":
        return None
    identity = 1.0 if op == "multiply" else 0.0
    return op if float(init.attrs["literal"].array) == identity else None


def accumulator_buffers(target: TargetDef, t: TensorType) -> list[str]:
    """On-chip buffers that can hold values of t's element type: those of that type,
    or, when there are none, those whose rows hold whole elements as bytes (an s32
    accumulator in AMX's byte tiles; ``bflat.resident_type``)."""
    chip = [b for b in target.buffers.values() if not b.is_hbm]
    same = [b.name for b in chip if b.dtype == t.dtype]
    if same or t.dtype.is_pred:
        return same
    return [b.name for b in chip if not b.dtype.is_pred and
            b.row_nbytes % t.dtype.nbytes == 0]


def split(outer: Tiling, t: int, var: str, row: int = 1) -> Split:
    """``outer``'s tile kernel with its longest contraction (a dot's, or a reduce's
    reduced dimension) cut into steps of ``t``. A reduce's accumulator is flat and
    padded with zeros to a multiple of ``row`` elements (a row of the buffer that will
    hold it): the padding lanes combine zeros with whatever they hold and the epilogue
    drops them, so an f32[8] min over rows is a loop of full-register ``vminps``."""
    module = outer.tile
    comp = module.entry_computation
    found = contraction(module)
    if found is None:
        raise NotTileable("no dot or reduce to accumulate")
    op, k = found
    if t < 1 or t >= k or k % t:
        raise NotTileable(f"steps of {t} do not divide the contraction of {k}")
    b = _Builder(comp, k, t, var, outer)
    if op.opcode == "dot":
        operands = (b.visit(op.operands[0], (op.attrs["lhs_contracting_dims"][0], False)),
                    b.visit(op.operands[1], (op.attrs["rhs_contracting_dims"][0], False)))
    else:  # the reduce's init stays whole
        operands = (b.visit(op.operands[0], (accumulated(module, op), False)), b.visit(op.operands[1], None))
    part = Instruction(f"{op.name}.part", op.opcode, op.type, operands, op.attrs, op.loc)
    parts = [part]
    acc_type = op.tensor_type
    if op.opcode == "reduce":
        # an element-wise combine: the accumulator is kept flat (and padded), so it fills
        # whole on-chip rows (bflat.resident_type) whatever the shape of the reduce's result
        n = math.prod(acc_type.shape)
        if acc_type.rank != 1:
            acc_type = TensorType(acc_type.dtype, (n,))
            parts.append(Instruction(f"{op.name}.flat", "reshape", acc_type, (part.name,)))
        if n % row:  # concatenated with zeros: the form of a masked load's zero lanes
            dt = acc_type.dtype
            zero = Instruction(f"{op.name}.zero", "constant", TensorType(dt, ()), (), {"literal": zero_literal(dt)})
            lanes = Instruction(f"{op.name}.lanes", "broadcast", TensorType(dt, (row - n % row,)), (zero.name,),
                                {"dimensions": ()})
            acc_type = TensorType(dt, (n + row - n % row,))
            parts += [zero, lanes, Instruction(f"{op.name}.padded", "concatenate", acc_type,
                                               (parts[-1].name, lanes.name), {"dimensions": (0,)})]
    places = tuple(b.placements)

    def piece(instrs: list[Instruction], root: str, inputs: tuple) -> Tiling:
        body = Computation(comp.name, instrs, root)
        tile = Module(module.name, {**module.computations, comp.name: body}, module.entry)
        return replace(outer, tile=tile, inputs=inputs)

    prologue = piece(b.out + parts, parts[-1].name, tuple(p.at(var, 0) for p in places))
    acc = Instruction(f"{op.name}.acc", "parameter", acc_type, (), {"parameter_number": 0})
    shifted = [replace(i, attrs={**i.attrs, "parameter_number": i.attrs["parameter_number"] + 1})
               if i.opcode == "parameter" else i for i in b.out]
    total = Instruction(f"{op.name}.sum", combine(module, op), acc_type, (acc.name, parts[-1].name))
    body = piece([acc] + shifted + parts + [total], total.name, (None,) + places)
    return Split(var, k // t, prologue, replace(body, loops=body.loops + ((var, k // t),)),
                 _epilogue(outer, op, acc, piece), _start(comp, op, acc_type, piece))


def _start(comp: Computation, op: Instruction, acc_type: TensorType, piece) -> Tiling | None:  # noqa: ANN001
    """The kernel putting out the accumulator's value before any step: a dot's 0, a
    reduce's init (the combine's identity for add and multiply, any value for the
    idempotent ones) where it is a constant; None where it is computed."""
    dt = acc_type.dtype
    if op.opcode == "dot":
        literal = zero_literal(dt)
    elif comp[op.operands[1]].opcode == "constant":
        literal = comp[op.operands[1]].attrs["literal"]
    else:
        return None
    init = Instruction(f"{op.name}.init", "constant", TensorType(dt, ()), (), {"literal": literal})
    fill = Instruction(f"{op.name}.start", "broadcast", acc_type, (init.name,), {"dimensions": ()})
    return piece([init, fill], fill.name, ())


def _epilogue(outer: Tiling, op: Instruction, acc: Instruction, piece) -> Tiling:  # noqa: ANN001
    """The kernel after the dot or reduce: its value is the accumulator (parameter 0), or
    the accumulator reshaped (a flat one)."""
    comp = outer.tile.entry_computation
    needed: set[str] = set()
    stack = [comp.root]
    while stack:
        name = stack.pop()
        if name in needed or name == op.name:
            continue
        needed.add(name)
        stack.extend(comp[name].operands)
    instrs, inputs = [acc], [None]
    value = acc
    n = op.tensor_type.size
    if acc.tensor_type.size != n:  # padded: its leading elements
        value = Instruction(f"{op.name}.unpadded", "slice", TensorType(op.tensor_type.dtype, (n,)), (acc.name,),
                            {"slice": (SliceDim(0, n),)})
        instrs.append(value)
    if value.type != op.type:  # a flat accumulator
        value = Instruction(f"{op.name}.value", "reshape", op.type, (value.name,))
        instrs.append(value)
    for ins in comp.instructions:
        if ins.name not in needed:
            continue
        if ins.opcode == "parameter":
            inputs.append(outer.inputs[ins.attrs["parameter_number"]])
            ins = replace(ins, attrs={**ins.attrs, "parameter_number": len(inputs) - 1})
        instrs.append(replace(ins, operands=tuple(value.name if o == op.name else o for o in ins.operands)))
    root = value.name if comp.root == op.name else comp.root
    if root == acc.name:
        out = Instruction(f"{op.name}.out", "copy", op.type, (acc.name,))
        instrs.append(out)
        root = out.name
    return piece(instrs, root, tuple(inputs))


def chained(module: Module) -> Module | None:
    """The kernel with each reduce over several dimensions whose partial results combine
    cut into two: first over all but the reduced dimension innermost in memory, then over
    that one. A vector ISA reduces across registers (element-wise) but not within one, so
    the first reduce is a loop of vector ops and the second, from memory, gathers its
    dimension by strided loads. None when no reduce is cut."""
    comp = module.entry_computation
    body: list[Instruction] = []
    cut = False
    for ins in comp.instructions:
        dims = tuple(ins.attrs.get("dimensions", ())) if ins.opcode == "reduce" else ()
        if len(dims) < 2 or combine(module, ins) is None:
            body.append(ins)
            continue
        x = comp[ins.operands[0]].tensor_type
        minor = next(d for d in x.effective_layout.minor_to_major if d in dims)
        first = tuple(d for d in dims if d != minor)
        kept = tuple(d for d in range(x.rank) if d not in first)
        part = TensorType(x.dtype, tuple(x.shape[d] for d in kept))
        inner = Instruction(f"{ins.name}.major", "reduce", part, ins.operands, {**ins.attrs, "dimensions": first},
                            ins.loc)
        body += [inner, replace(ins, operands=(inner.name, ins.operands[1]),
                                attrs={**ins.attrs, "dimensions": (kept.index(minor),)})]
        cut = True
    if not cut:
        return None
    entry = Computation(comp.name, body, comp.root, comp.loc)
    return replace(module, computations={**module.computations, comp.name: entry})
