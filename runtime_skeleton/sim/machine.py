"""Functional execution of a program on a target, exactly Act Def. 6: slice the
inputs, run g(α) with the reference interpreter, write the output slice back;
every other buffer is unchanged. Any violated constraint or out-of-bounds slice
stops the run with an error naming the program line."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import ActgenError, SourceLoc
from ..layout import bflat, byte_size, unbflat
from ..reference import evaluate
from ..target import Bounds, InstructionDef, TargetDef
from ..program import ConcreteInstr, Program, TensorDecl


class SimError(ActgenError):
    pass


@dataclass
class Machine:
    target: TargetDef
    state: dict[str, np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        self.state = {b.name: np.zeros(b.shape, dtype=b.dtype.np) for b in self.target.buffers.values()}
        # HBM bytes an input, a constant or an instruction has set (the rest read as zeros)
        self.defined = np.zeros(self.hbm.shape, dtype=bool)

    @property
    def hbm(self) -> np.ndarray:
        return self.state[self.target.hbm.name]

    def write_hbm(self, offset: int, data: bytes, what: str, loc: SourceLoc | None = None) -> None:
        if offset + len(data) > self.hbm.size:
            raise SimError(f"{what} ({len(data)} bytes at @{offset}) does not fit in HBM ({self.hbm.size} bytes)", loc)
        self.hbm[offset : offset + len(data)] = np.frombuffer(data, dtype=np.uint8)
        self.defined.reshape(-1)[offset : offset + len(data)] = True

    def check_written(self, decl: TensorDecl) -> None:
        """Every byte of an output was set by an instruction, an input or a constant: a program
        that stops before writing its output (a truncated one) is an error, not zeros."""
        n = byte_size(decl.type)
        unset = np.flatnonzero(~self.defined.reshape(-1)[decl.offset : decl.offset + n])
        if unset.size == n:
            raise SimError(f"output {decl.name} is never written: no instruction, input or constant sets its bytes",
                           decl.loc)
        if unset.size:
            raise SimError(f"output {decl.name} is only partly written: no instruction, input or constant sets "
                           f"{unset.size} of its {n} bytes (the first at @{decl.offset + int(unset[0])})", decl.loc)

    def read_tensor(self, decl: TensorDecl) -> np.ndarray:
        n = byte_size(decl.type)
        if decl.offset + n > self.hbm.size:
            raise SimError(f"{decl.name} ({n} bytes at @{decl.offset}) lies outside HBM", decl.loc)
        return unbflat(self.hbm[decl.offset : decl.offset + n].tobytes(), decl.type)

    def step(self, ci: ConcreteInstr) -> None:
        ins, a, bounds = checked(self.target, ci)
        slices = [tuple(slice(s, s + n) for s, n in zip(starts, lengths)) for starts, lengths in bounds]
        alpha = {d.name: a[d.name] for d in ins.comp_attrs}
        args = [self.state[s.buffer][idx].copy() for s, idx in zip(ins.inputs, slices[1:])]
        module = self.target.semantics(ins, alpha)
        (result,) = evaluate(module, args)
        out = self.state[ins.output.buffer]
        if result.shape != out[slices[0]].shape:
            raise SimError(f"{ci.name}: semantics produced shape {result.shape} for an output slice of shape "
                           f"{out[slices[0]].shape}", ci.loc)
        out[slices[0]] = result
        if ins.output.buffer == self.target.hbm.name:
            self.defined[slices[0]] = True


def checked(target: TargetDef, ci: ConcreteInstr) -> tuple[type[InstructionDef], dict[str, int], tuple[Bounds, ...]]:
    """The instruction, its attributes and its slices (output first), after the checks every
    execution makes: a known instruction, attributes in range, the constraint e, slices in bounds."""
    ins = target.instructions.get(ci.name)
    if ins is None:
        raise SimError(f"unknown instruction '{ci.name}' for target {target.name}", ci.loc)
    a = _attributes(ins, ci)
    shown = " ".join(f"{k}={v}" for k, v in a.items())
    try:  # a description may divide by an attribute: at 0 its constraint or slices have no value
        if not ins.e(a):
            raise SimError(f"{ci.name} {shown}: violates the instruction's constraint", ci.loc)
        bounds = ins.h(a)
    except ZeroDivisionError:
        raise SimError(f"{ci.name} {shown}: the instruction's constraint or slices divide by zero at these "
                       "attributes", ci.loc) from None
    for s, b in zip((ins.output,) + ins.inputs, bounds):
        check_slice(target, s.buffer, b, ci)
    return ins, a, bounds


def check_slice(target: TargetDef, buffer: str, bounds: Bounds, ci: ConcreteInstr) -> None:
    """A slice of ``buffer`` that ``ci`` accesses must lie inside it (also used by the timing model)."""
    starts, lengths = bounds
    for s, n, dim in zip(starts, lengths, target.buffers[buffer].access_shape):
        if s < 0 or n < 1 or s + n > dim:
            raise SimError(f"{ci.name}: slice {buffer}[{s} : {n}] is outside the buffer (size {dim})", ci.loc)


def _attributes(ins: type[InstructionDef], ci: ConcreteInstr) -> dict[str, int]:
    want = {d.name: d for d in ins.attrs()}
    for k in ci.attrs:
        if k not in want:
            raise SimError(f"{ci.name} has no attribute '{k}' (attributes: {', '.join(want) or 'none'})", ci.loc)
    for k, d in want.items():
        if k not in ci.attrs:
            raise SimError(f"{ci.name} is missing attribute '{k}'", ci.loc)
        v = ci.attrs[k]
        if not d.lo <= v <= d.hi:
            raise SimError(f"{ci.name}: {k}={v} is outside its range [{d.lo}, {d.hi}]", ci.loc)
    return {k: ci.attrs[k] for k in want}


def run_program(target: TargetDef, prog: Program, inputs: Sequence[np.ndarray],
                on_step: Callable[[int, ConcreteInstr], None] | None = None) -> list[np.ndarray]:
    """Initialise HBM with the inputs and constants, execute, read the outputs."""
    if prog.target is not None and prog.target != target.name:
        raise SimError(f"program is for target '{prog.target}', not '{target.name}'", prog.target_loc)
    if len(inputs) != len(prog.inputs):
        raise SimError(f"program has {len(prog.inputs)} input(s), got {len(inputs)}")
    m = Machine(target)
    for decl, arr in zip(prog.inputs, inputs):
        if tuple(np.shape(arr)) != decl.type.shape:
            raise SimError(f"input {decl.name} must have shape {list(decl.type.shape)}, got {list(np.shape(arr))}",
                           decl.loc)
        m.write_hbm(decl.offset, bflat(arr, decl.type), f"input {decl.name}", decl.loc)
    for c in prog.consts:
        m.write_hbm(c.offset, c.data, "constant", c.loc)
    for i, ci in enumerate(prog.flat()):
        if on_step:
            on_step(i, ci)
        m.step(ci)
    outputs = [m.read_tensor(d) for d in prog.outputs]  # each inside HBM, before its bytes are checked
    for d in prog.outputs:
        m.check_written(d)
    return outputs
