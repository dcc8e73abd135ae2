"""Which attribute of an instruction addresses which of its slices."""
from __future__ import annotations

from collections.abc import Mapping

from ..sim.program import ConcreteInstr, value_at
from ..target import InstructionDef, TargetDef
from .strip import NotTileable

Rect = tuple[slice, ...]


def hbm_slices(target: TargetDef, ins: type[InstructionDef], attrs: Mapping[str, int]) -> list[tuple[int, int, int]]:
    """(slice index, start byte, length) of each HBM slice the instruction accesses."""
    hbm = target.hbm.name
    slices = (ins.output,) + ins.inputs
    found = []
    for j, (s, (starts, lengths)) in enumerate(zip(slices, ins.h(attrs))):
        if s.buffer == hbm:
            found.append((j, int(starts[0]), int(lengths[0])))
    return found


def start_attr(ins: type[InstructionDef], attrs: Mapping[str, int], j: int) -> tuple[str, int]:
    """The addressing attribute that moves slice j (its start in the first access
    dimension: an HBM byte, an on-chip row), and how far per unit of it."""
    def start(name: str, step: int) -> int:
        return int(ins.h({**attrs, name: attrs[name] + step})[j][0][0])

    found = []
    for d in ins.addr_attrs:
        c = start(d.name, 1) - start(d.name, 0)
        if c and start(d.name, 2) - start(d.name, 0) == 2 * c:  # affine in it
            found.append((d.name, c))
    if len(found) != 1:
        raise NotTileable(f"{ins.name}: cannot tell which attribute addresses its slice {j}")
    return found[0]


def slices_at(target: TargetDef, ci: ConcreteInstr, env: Mapping[str, int]) -> tuple[dict[str, int], list[tuple[int, str, Rect]]]:
    """The instruction's attributes with the loop variables at ``env``, and the
    (slice index, buffer, box) of each slice it accesses (0 the output, then the inputs)."""
    ins = target.instructions[ci.name]
    attrs = {k: value_at(v, env) for k, v in ci.attrs.items()}
    boxes = [(j, s.buffer, tuple(slice(int(a), int(a) + int(n)) for a, n in zip(starts, lengths)))
             for j, (s, (starts, lengths)) in enumerate(zip((ins.output,) + ins.inputs, ins.h(attrs)))]
    return attrs, boxes
