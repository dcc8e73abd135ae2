"""IsaSpec: the typed model of one accelerator ISA description (Act §3, Appendix B).

Data model: ``d0`` is the byte-addressable HBM (u8[size]); every other buffer d
has type (S0, E[S1]): access dimensions S0 and a unit tensor E[S1]. A slice
``d[s0 : l0, s1 : l1, ...]`` gives a start and a length per access dimension and
is a tensor E[l0, l1, ..., *S1].

An instruction θ has computational attributes α (fix shapes; chosen by
instruction selection) and addressing attributes β (chosen by allocation), input
slices and one output slice whose starts/lengths are expressions h(i) over the
attributes, a validity constraint e(α, β), an engine and a latency over α, and
semantics g(α): HLO text whose shapes may use α and constants.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from runtime_skeleton.errors import SourceLoc
from runtime_skeleton.ir.dtypes import DType
from runtime_skeleton.target import Bandwidth, Peak  # target facts: the same records in spec and backend

from .expr import Expr


@dataclass(frozen=True)
class Buffer:
    name: str
    dtype: DType
    access_shape: tuple[int, ...]  # S0
    unit_shape: tuple[int, ...]  # S1
    is_hbm: bool = False
    loc: SourceLoc | None = field(default=None, compare=False, repr=False)

    @property
    def unit_bytes(self) -> int:
        n = self.dtype.nbytes
        for d in self.unit_shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        n = self.unit_bytes
        for d in self.access_shape:
            n *= d
        return n

    @property
    def shape(self) -> tuple[int, ...]:
        return self.access_shape + self.unit_shape

    def type_str(self) -> str:
        unit = f"{self.dtype.name}[{','.join(map(str, self.unit_shape))}]"
        return f"{unit} x [{','.join(map(str, self.access_shape))}]"


@dataclass(frozen=True)
class Slice:
    """``var = buffer[start : length, ...]`` — one range per access dimension."""

    var: str  # the name the semantics' parameter/ROOT uses
    buffer: str
    starts: tuple[Expr, ...]
    lengths: tuple[Expr, ...]
    loc: SourceLoc | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Attribute:
    name: str
    kind: str  # "comp" (α) or "addr" (β)
    lo: int | None = None  # inclusive range, derived by the checker from the
    hi: int | None = None  # constraints and the slice bounds
    loc: SourceLoc | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Semantics:
    text: str  # HLO text (a bare instruction list or computations), braces stripped
    loc: SourceLoc  # where `text` starts in the .isa file


@dataclass(frozen=True)
class Instruction:
    name: str
    comp_attrs: tuple[Attribute, ...]  # α
    addr_attrs: tuple[Attribute, ...]  # β
    inputs: tuple[Slice, ...]
    output: Slice
    constraints: tuple[Expr, ...]  # e(α, β), conjunction
    engine: str
    latency: Expr
    semantics: Semantics
    alias: int | None = None  # index into inputs of an input the output overwrites in place
    native: str | None = None  # the instruction as C, ``{attr}`` for attribute values (None: none given)
    loc: SourceLoc | None = field(default=None, compare=False, repr=False)

    @property
    def attrs(self) -> tuple[Attribute, ...]:
        return self.comp_attrs + self.addr_attrs

    @property
    def attr_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attrs)


@dataclass(frozen=True)
class Native:
    """How a target's programs run as C on this machine: lines before the kernel (headers,
    macros over the buffers' byte arrays), compiler flags, and the CPU features needed."""

    prelude: str = ""
    flags: str = ""
    cpu: tuple[str, ...] = ()


@dataclass(frozen=True)
class IsaSpec:
    name: str
    source: str  # path of the .isa file, as given
    constants: dict[str, int]
    hbm: Buffer
    buffers: dict[str, Buffer]  # on-chip buffers, in declaration order (HBM not included)
    instructions: dict[str, Instruction]
    clock_hz: float | None = None
    peaks: tuple[Peak, ...] = ()
    bandwidths: tuple[Bandwidth, ...] = ()
    native: Native | None = None  # None: no native_* declaration

    @property
    def all_buffers(self) -> dict[str, Buffer]:
        return {self.hbm.name: self.hbm, **self.buffers}

    @property
    def engines(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for ins in self.instructions.values():
            seen.setdefault(ins.engine)
        return tuple(seen)
