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
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..ir.graph import Computation, Instruction, Module
from ..ir.types import TensorType
from ..target import TargetDef
from .strip import OUTPUT, NotTileable, Tiling, _Builder


@dataclass(frozen=True)
class Split:
    var: str
    trips: int
    prologue: Tiling
    body: Tiling  # runs for var = 1 .. trips - 1
    epilogue: Tiling

    def on(self, buffer: str) -> Split:
        """The split with the accumulator in ``buffer``."""
        def put(t: Tiling, resident: tuple) -> Tiling:
            return replace(t, tile=replace(t.tile, resident=resident))

        return replace(self, prologue=put(self.prologue, ((OUTPUT, buffer),)),
                       body=put(self.body, ((0, buffer), (OUTPUT, buffer))),
                       epilogue=put(self.epilogue, ((0, buffer),)))

    @property
    def buffer(self) -> str | None:
        """Where the accumulator lives (None before ``on``)."""
        return self.body.tile.resident_in(0)

    def describe(self) -> str:
        return f"{self.var}<{self.trips} accumulating in {self.buffer}"


def contraction(module: Module) -> tuple[Instruction, int] | None:
    """The dot with the longest single contracted dimension, and its extent."""
    best = None
    for ins in module.entry_computation.instructions:
        if ins.opcode != "dot" or len(ins.attrs.get("lhs_contracting_dims", ())) != 1:
            continue
        k = module.entry_computation[ins.operands[0]].tensor_type.shape[ins.attrs["lhs_contracting_dims"][0]]
        if best is None or k > best[1]:
            best = (ins, k)
    return best


def accumulator_buffers(target: TargetDef, t: TensorType) -> list[str]:
    """On-chip buffers that can hold values of t's element type: those of that type,
    or, when there are none, those whose rows hold whole elements as bytes (an s32
    accumulator in AMX's byte tiles; ``bflat.resident_type``)."""
    chip = [b for b in target.buffers.values() if not b.is_hbm]
    same = [b.name for b in chip if b.dtype == t.dtype]
    if same or t.dtype.is_pred:
        return same
    return [b.name for b in chip if not b.dtype.is_pred and
            (math.prod(b.unit_shape) * b.dtype.nbytes) % t.dtype.nbytes == 0]


def split(outer: Tiling, t: int, var: str) -> Split:
    """``outer``'s tile kernel with its longest contraction cut into steps of ``t``."""
    module = outer.tile
    comp = module.entry_computation
    found = contraction(module)
    if found is None:
        raise NotTileable("no dot to accumulate")
    dot, k = found
    if t < 1 or t >= k or k % t:
        raise NotTileable(f"steps of {t} do not divide the contraction of {k}")
    b = _Builder(comp, k, t, var, outer)
    lhs = b.visit(dot.operands[0], (dot.attrs["lhs_contracting_dims"][0], False))
    rhs = b.visit(dot.operands[1], (dot.attrs["rhs_contracting_dims"][0], False))
    part = Instruction(f"{dot.name}.part", "dot", dot.type, (lhs, rhs), dot.attrs, dot.loc)
    places = tuple(b.placements)

    def piece(instrs: list[Instruction], root: str, inputs: tuple) -> Tiling:
        body = Computation(comp.name, instrs, root)
        tile = Module(module.name, {**module.computations, comp.name: body}, module.entry)
        return replace(outer, tile=tile, inputs=inputs)

    prologue = piece(b.out + [part], part.name, tuple(p.at(var, 0) for p in places))
    acc = Instruction(f"{dot.name}.acc", "parameter", dot.type, (), {"parameter_number": 0})
    shifted = [replace(i, attrs={**i.attrs, "parameter_number": i.attrs["parameter_number"] + 1})
               if i.opcode == "parameter" else i for i in b.out]
    total = Instruction(f"{dot.name}.sum", "add", dot.type, (acc.name, part.name))
    body = piece([acc] + shifted + [part, total], total.name, (None,) + places)
    return Split(var, k // t, prologue, replace(body, loops=body.loops + ((var, k // t),)),
                 _epilogue(outer, dot, acc, piece))


def _epilogue(outer: Tiling, dot: Instruction, acc: Instruction, piece) -> Tiling:  # noqa: ANN001
    """The kernel after the dot: the dot's value is the accumulator (parameter 0)."""
    comp = outer.tile.entry_computation
    needed: set[str] = set()
    stack = [comp.root]
    while stack:
        name = stack.pop()
        if name in needed or name == dot.name:
            continue
        needed.add(name)
        stack.extend(comp[name].operands)
    instrs, inputs = [acc], [None]
    for ins in comp.instructions:
        if ins.name not in needed:
            continue
        if ins.opcode == "parameter":
            inputs.append(outer.inputs[ins.attrs["parameter_number"]])
            ins = replace(ins, attrs={**ins.attrs, "parameter_number": len(inputs) - 1})
        instrs.append(replace(ins, operands=tuple(acc.name if o == dot.name else o for o in ins.operands)))
    root = comp.root
    if root == dot.name:
        out = Instruction(f"{dot.name}.out", "copy", dot.type, (acc.name,))
        instrs.append(out)
        root = out.name
    return piece(instrs, root, tuple(inputs))
