"""IR graphs: a module of computations, each a list of named instructions in
definition order (operands are referenced by name, as in HLO text).

Equality ignores source locations and instruction names are part of identity,
so ``parse(print(m)) == m`` is the round-trip property.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from ..errors import SourceLoc
from .ops import BINARY_OPS
from .types import TensorType, Type


def frozen_attrs(attrs: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(sorted((attrs or {}).items())))


@dataclass(frozen=True)
class Instruction:
    name: str
    opcode: str
    type: Type
    operands: tuple[str, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict)
    loc: SourceLoc | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "operands", tuple(self.operands))
        object.__setattr__(self, "attrs", frozen_attrs(self.attrs))

    def __hash__(self) -> int:
        return hash((self.name, self.opcode, self.type, self.operands, tuple(self.attrs.items())))

    def __reduce__(self):  # noqa: ANN204  (the read-only attrs view does not pickle; a dict does)
        return (Instruction, (self.name, self.opcode, self.type, self.operands, dict(self.attrs), self.loc))

    def attr(self, key: str, default: Any = None) -> Any:
        return self.attrs.get(key, default)

    @property
    def tensor_type(self) -> TensorType:
        assert isinstance(self.type, TensorType), f"{self.name} has tuple type {self.type}"
        return self.type


@dataclass
class Computation:
    name: str
    instructions: list[Instruction]
    root: str
    loc: SourceLoc | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name = {i.name: i for i in self.instructions}

    def __getitem__(self, name: str) -> Instruction:
        return self._by_name[name]

    def __contains__(self, name: str) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[Instruction]:
        return iter(self.instructions)

    @property
    def root_instruction(self) -> Instruction:
        return self._by_name[self.root]

    @property
    def parameters(self) -> list[Instruction]:
        """Parameter instructions ordered by parameter number."""
        ps = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(ps, key=lambda i: i.attrs["parameter_number"])

    def users(self, name: str) -> list[Instruction]:
        return [i for i in self.instructions if name in i.operands]

    def operands_first(self, name: str | None = None) -> list[str]:
        """The instructions ``name`` (default: the root) depends on, itself last, each
        after its operands (first operands first); iterative, for chains of any length."""
        order: list[str] = []
        seen: set[str] = set()
        stack: list[tuple[str, bool]] = [(self.root if name is None else name, False)]
        while stack:
            n, ready = stack.pop()
            if ready:
                order.append(n)
            elif n not in seen:
                seen.add(n)
                stack.append((n, True))
                stack += [(o, False) for o in reversed(self._by_name[n].operands) if o not in seen]
        return order

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Computation)
            and self.name == other.name
            and self.root == other.root
            and self.instructions == other.instructions
        )


@dataclass
class Module:
    name: str
    computations: dict[str, Computation]  # in text order; the entry is one of them
    entry: str
    loc: SourceLoc | None = field(default=None, compare=False, repr=False)
    # The parameter whose storage the output takes over (XLA's input_output_alias):
    # the program may overwrite it and writes the output in its place.
    output_alias: int | None = None
    # Values that live on chip instead of in HBM (the loop-carried accumulator of a
    # reduction loop): (parameter number, or -1 for the output; buffer), each at the
    # start of its buffer. An on-chip parameter is donated: the program may overwrite it.
    resident: tuple[tuple[int, str], ...] = ()
    # A piece of a larger kernel (a tile, an output, a stage): its program must write its
    # output into a region of its own, which the whole kernel's program then moves to its
    # place. (A whole kernel's output may be a view of an input: the program says where.)
    output_written: bool = False

    def resident_in(self, index: int) -> str | None:
        """The buffer parameter ``index`` (-1: the output) lives in, None for HBM."""
        return dict(self.resident).get(index)

    @property
    def entry_computation(self) -> Computation:
        return self.computations[self.entry]

    @property
    def parameter_types(self) -> list[Type]:
        return [p.type for p in self.entry_computation.parameters]

    @property
    def result_type(self) -> Type:
        return self.entry_computation.root_instruction.type

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Module)
            and self.name == other.name
            and self.entry == other.entry
            and self.output_alias == other.output_alias
            and self.resident == other.resident
            and self.output_written == other.output_written
            and list(self.computations.items()) == list(other.computations.items())
        )

    def with_entry(self, body: list[Instruction], root: str) -> Module:
        """This module with its entry computation rewritten to ``body`` (operands first) and
        ``root``: what the root does not read is dropped, but every parameter of the old
        entry stays (one the root never reads too), so the parameters keep their numbers."""
        comp = self.entry_computation
        named = {i.name for i in body}
        body = [i for i in comp.instructions if i.opcode == "parameter" and i.name not in named] + body
        live = set(Computation(comp.name, body, root, comp.loc).operands_first())
        entry = Computation(comp.name, [i for i in body if i.name in live or i.opcode == "parameter"], root, comp.loc)
        return replace(self, computations={**self.computations, comp.name: entry})

    def anonymous(self) -> Module:
        """This module with its name and its entry computation's instruction names dropped
        (numbered in order instead): kernels that differ only in names compute alike."""
        comp = self.entry_computation
        name = {ins.name: f"%{k}" for k, ins in enumerate(comp.instructions)}
        body = [replace(ins, name=name[ins.name], operands=tuple(name[o] for o in ins.operands))
                for ins in comp.instructions]
        entry = Computation(comp.name, body, name[comp.root], comp.loc)
        return replace(self, name="", computations={**self.computations, comp.name: entry})


def combiner(comp: Computation | None) -> str | None:
    """The opcode of a reducer computation ``ROOT r = op(p0, p1)`` (its two parameters), else None."""
    if comp is None or len(comp.instructions) != 3:
        return None
    root = comp.root_instruction
    params = sorted(i.name for i in comp.instructions if i.opcode == "parameter")
    if root.opcode in BINARY_OPS and len(params) == 2 and sorted(root.operands) == params:
        return root.opcode
    return None


def fresh_name(name: str, taken: set[str]) -> str:
    """``name``, or ``name.2``, ``name.3``, ... : the first not in ``taken``, which it joins."""
    new, k = name, 1
    while new in taken:
        k += 1
        new = f"{name}.{k}"
    taken.add(new)
    return new
