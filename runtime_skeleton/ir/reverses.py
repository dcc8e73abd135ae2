"""Reverses moved toward the kernel's inputs, through the operators that commute with them.

A reverse permutes elements, and so many operators commute with it exactly, bit for
bit: an element-wise operator computes each element alone; a broadcast, a transpose and
a reverse move elements; a dot's or a reduce's result element is the same sum (in the
same order) of the same elements whichever dimension of the result is reversed, as long
as the reversed dimension is not a contracted or reduced one. ``sunk`` rewrites every
reverse into its operand's operator over reversed operands, until it reaches a value it
does not commute with (a kernel input, a slice, a reshape, ...), where it stays:

    reverse(negate(a) + broadcast(v), {0, 1})  ==  negate(reverse(a, {0, 1})) + broadcast(reverse(v, {0}))

On a target with no instruction that reverses, a reverse costs a move of every row,
column or element (``isel.pretile``); reverses of inputs compile as loops of those moves,
each once per shape (``superopt.stages.isolated_plan``), while a reverse between two
computations cuts the kernel into stages through memory. A value the kernel also reads
unreversed is computed twice, once in each order.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from .graph import Computation, Instruction, Module
from .ops import ELEMENTWISE
from .types import TensorType


def sunk(module: Module) -> Module:
    """``module`` with its entry computation's reverses moved toward its inputs (the
    module itself when it has no reverse)."""
    comp = module.entry_computation
    if not any(i.opcode == "reverse" for i in comp.instructions):
        return module
    s = _Sinker(comp)
    root = s.value(comp.root)
    return module.with_entry(list(s.out.values()), root)


class _Sinker:
    def __init__(self, comp: Computation) -> None:
        self.comp = comp
        self.out: dict[str, Instruction] = {}  # the new instructions, operands first
        self.done: dict[str, str] = {}  # old name -> new name, unreversed
        self.rev: dict[tuple[str, tuple[int, ...]], str] = {}  # (new name, dims) -> its reverse

    def value(self, name: str) -> str:
        """The new instruction computing the old instruction ``name``."""
        got = self.done.get(name)
        if got is not None:
            return got
        for old in self.comp.operands_first(name):
            if old in self.done:
                continue
            ins = self.comp[old]
            if ins.opcode == "reverse":
                self.done[old] = self.reversed(self.done[ins.operands[0]], tuple(ins.attrs["dimensions"]))
            else:
                self.done[old] = self.emit(dataclasses.replace(ins, operands=tuple(self.done[o] for o in ins.operands)))
        return self.done[name]

    def emit(self, ins: Instruction) -> str:
        name = ins.name
        while name in self.out and self.out[name] != ins:
            name += "'"
        self.out[name] = dataclasses.replace(ins, name=name)
        return name

    def reversed(self, name: str, dims: Iterable[int]) -> str:
        """A new instruction computing new instruction ``name`` reversed along ``dims``
        (iteratively: a chain of operators as long as the kernel)."""
        want = self._key(name, dims)
        stack = [want]
        while stack:
            key = stack[-1]
            if not key[1] or key in self.rev:
                stack.pop()
                continue
            ins = self.out[key[0]]
            spelled = f"{ins.name}.reversed{'_'.join(map(str, key[1]))}"
            plan = _through(ins, key[1], {o: self.out[o].type for o in ins.operands})
            if plan is None:
                self.rev[key] = self.emit(Instruction(spelled, "reverse", ins.type, (ins.name,),
                                                      {"dimensions": key[1]}, ins.loc))
                continue
            needs = [self._key(o, d) for o, d in zip(ins.operands, plan)]
            missing = [k for k in needs if k[1] and k not in self.rev]
            if missing:
                stack += missing
                continue
            new = tuple(self.rev[k] if k[1] else k[0] for k in needs)
            self.rev[key] = new[0] if ins.opcode == "reverse" else \
                self.emit(dataclasses.replace(ins, name=spelled, operands=new))
        return self.rev[want] if want[1] else name

    def _key(self, name: str, dims: Iterable[int]) -> tuple[str, tuple[int, ...]]:
        """(name, the dimensions of more than one element among ``dims``, sorted)."""
        t = self.out[name].type
        assert isinstance(t, TensorType)
        return name, tuple(sorted(d for d in set(dims) if t.shape[d] > 1))


def _through(ins: Instruction, dims: tuple[int, ...], types: dict) -> list[tuple[int, ...]] | None:
    """Per operand of ``ins``, the dimensions to reverse it along so that ``ins`` over
    them computes ``ins`` reversed along ``dims``; None where the reverse stays above it."""
    op, a = ins.opcode, ins.attrs
    if op == "reverse":  # reversing twice along a dimension is the identity
        return [tuple(sorted(set(dims) ^ set(a["dimensions"])))]
    if op in ELEMENTWISE:
        rank = ins.type.rank
        return [dims if types[o].rank == rank else () for o in ins.operands]
    if op == "broadcast":
        return [tuple(i for i, r in enumerate(a["dimensions"]) if r in dims)]
    if op == "transpose":
        return [tuple(a["dimensions"][d] for d in dims)]
    if op == "reduce" and len(ins.operands) == 2:
        kept = [d for d in range(types[ins.operands[0]].rank) if d not in a["dimensions"]]
        return [tuple(kept[d] for d in dims), ()]
    if op == "dot":
        return _through_dot(ins, dims, types)
    return None


def _through_dot(ins: Instruction, dims: tuple[int, ...], types: dict) -> list[tuple[int, ...]]:
    """A dot's result dimensions are its batch dimensions, the lhs's free ones, the rhs's
    free ones, in order: reversing one reverses the operand dimension it comes from."""
    a = ins.attrs
    lhs, rhs = (types[o].rank for o in ins.operands)
    lb, rb = a["lhs_batch_dims"], a["rhs_batch_dims"]
    lf = [d for d in range(lhs) if d not in lb and d not in a["lhs_contracting_dims"]]
    rf = [d for d in range(rhs) if d not in rb and d not in a["rhs_contracting_dims"]]
    origin = [(lb[k], rb[k]) for k in range(len(lb))] + [(d, None) for d in lf] + [(None, d) for d in rf]
    return [tuple(sorted(origin[d][0] for d in dims if origin[d][0] is not None)),
            tuple(sorted(origin[d][1] for d in dims if origin[d][1] is not None))]
