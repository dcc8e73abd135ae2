"""The compiler's output: a program of instructions with affine attributes inside counted
loops, as the simulator, the timing model and the verifier read it (the text format is in
``text.py``). A program with loops runs as its unrolled instruction stream
(``Program.flat``): the simulator, the timing model and the roofline see exactly the
instructions a loop executes."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from ..errors import ActgenError, SourceLoc
from ..ir.types import TensorType


class ProgramError(ActgenError):
    pass


@dataclass(frozen=True)
class TensorDecl:
    name: str
    type: TensorType
    offset: int
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ConstData:
    offset: int
    data: bytes
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Affine:
    """An attribute value inside loops: const + sum of coefficient * loop variable."""

    const: int
    terms: tuple[tuple[str, int], ...] = ()  # (variable, coefficient), sorted, no zero coefficients

    @staticmethod
    def of(const: int, terms: Mapping[str, int] | None = None) -> Affine | int:
        """The value, as a plain int when no variable is left."""
        kept = tuple(sorted((v, c) for v, c in (terms or {}).items() if c))
        return Affine(const, kept) if kept else const

    def at(self, env: Mapping[str, int]) -> int:
        return self.const + sum(c * env[v] for v, c in self.terms)

    def __str__(self) -> str:
        parts = [str(self.const)] if self.const else []
        for v, c in self.terms:
            term = v if abs(c) == 1 else f"{abs(c)}*{v}"
            parts.append(("-" if c < 0 else "+" if parts else "") + term)
        return "".join(parts)


Attr = int | Affine


def value_at(v: Attr, env: Mapping[str, int]) -> int:
    return v.at(env) if isinstance(v, Affine) else v


def shift(v: Attr, const: int, terms: Mapping[str, int] | None = None) -> Attr:
    """v + const + sum(terms): relocating an address into loop-varying memory."""
    base = v if isinstance(v, Affine) else Affine(v)
    merged = dict(base.terms)
    for var, c in (terms or {}).items():
        merged[var] = merged.get(var, 0) + c
    return Affine.of(base.const + const, merged)


@dataclass(frozen=True)
class ConcreteInstr:
    name: str
    attrs: dict[str, Attr]
    loc: SourceLoc | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Loop:
    """``.loop var start stop`` ... ``.endloop``: the body once per var in [start, stop)."""

    var: str
    start: int
    stop: int
    body: tuple[ConcreteInstr | Loop, ...]
    loc: SourceLoc | None = field(default=None, compare=False)

    @property
    def trips(self) -> int:
        return max(0, self.stop - self.start)


Item = ConcreteInstr | Loop


@dataclass
class Program:
    target: str | None = None
    inputs: list[TensorDecl] = field(default_factory=list)
    outputs: list[TensorDecl] = field(default_factory=list)
    consts: list[ConstData] = field(default_factory=list)
    instructions: list[Item] = field(default_factory=list)  # straight-line code and loops
    target_loc: SourceLoc | None = field(default=None, compare=False)  # where '.target' names it

    def flat(self) -> Iterator[ConcreteInstr]:
        """The instructions in execution order, loops unrolled, attributes evaluated."""
        return _unroll(self.instructions, {})

    def executed(self) -> int:
        """How many instructions a run executes."""
        return _count(self.instructions)

    @property
    def has_loops(self) -> bool:
        return any(isinstance(i, Loop) for i in self.instructions)


def _unroll(items, env: dict[str, int]) -> Iterator[ConcreteInstr]:
    for it in items:
        if isinstance(it, Loop):
            for k in range(it.start, it.stop):
                yield from _unroll(it.body, {**env, it.var: k})
        elif env or any(isinstance(v, Affine) for v in it.attrs.values()):
            yield ConcreteInstr(it.name, {k: value_at(v, env) for k, v in it.attrs.items()}, it.loc)
        else:
            yield it


def _count(items) -> int:
    return sum(it.trips * _count(it.body) if isinstance(it, Loop) else 1 for it in items)
