"""The generic side of a generated backend: what every target provides.

A generated package (generated/<t>/) subclasses ``InstructionDef`` once per
instruction, filling in Act's "pure virtual functions" — the address functions
h(i), the validity constraint e and the latency — and builds one ``TargetDef``
from its buffer and instruction tables. Everything else (simulator, and later
instruction selection and allocation) works through these classes only.

Attribute values are passed as a mapping ``a`` from attribute name to value;
``x`` is the algebra for and/or/not/div/mod/min/max (see symbolic.py), so the
same function evaluates concretely, builds z3 terms or CP-SAT expressions.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

from .errors import SourceLoc
from .ir.dtypes import DType
from .ir.graph import Module
from .symbolic import PY

Bounds = tuple[tuple[Any, ...], tuple[Any, ...]]  # (starts, lengths), one entry per access dimension


@dataclass(frozen=True)
class BufferDef:
    name: str
    dtype: DType
    access_shape: tuple[int, ...]  # S0
    unit_shape: tuple[int, ...] = ()  # S1
    is_hbm: bool = False

    @property
    def shape(self) -> tuple[int, ...]:
        return self.access_shape + self.unit_shape

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.nbytes

    @property
    def row_nbytes(self) -> int:
        """Bytes of one row: the unit an access dimension counts (S1's elements)."""
        return math.prod(self.unit_shape) * self.dtype.nbytes


@dataclass(frozen=True)
class AttrDef:
    name: str
    lo: int
    hi: int  # inclusive


@dataclass(frozen=True)
class SliceDef:
    var: str  # name of the semantics parameter (input) or ROOT (output)
    buffer: str


class InstructionDef:
    """One abstract instruction θ. Generated subclasses set the class attributes
    and override h, e and latency."""

    name: ClassVar[str]
    engine: ClassVar[str]
    comp_attrs: ClassVar[tuple[AttrDef, ...]] = ()  # α
    addr_attrs: ClassVar[tuple[AttrDef, ...]] = ()  # β
    inputs: ClassVar[tuple[SliceDef, ...]] = ()
    output: ClassVar[SliceDef]
    alias: ClassVar[int | None] = None  # input index the output provably overwrites in place
    semantics: ClassVar[str]  # HLO text of g(α); shapes may use α and the target's constants
    semantics_loc: ClassVar[SourceLoc]
    native: ClassVar[str | None] = None  # the instruction as C, ``{attr}`` for an attribute's value

    @classmethod
    def attrs(cls) -> tuple[AttrDef, ...]:
        return cls.comp_attrs + cls.addr_attrs

    @staticmethod
    def h(a: Mapping[str, Any], x: Any = PY) -> tuple[Bounds, ...]:
        """Slice bounds: index 0 is the output, 1..n the inputs (Act's h(i))."""
        raise NotImplementedError

    @staticmethod
    def e(a: Mapping[str, Any], x: Any = PY) -> Any:
        """The validity constraint e(α, β)."""
        raise NotImplementedError

    @staticmethod
    def latency(a: Mapping[str, Any], x: Any = PY) -> Any:
        """Cycles the instruction occupies its engine, over α."""
        raise NotImplementedError


@dataclass(frozen=True)
class Peak:
    engine: str
    dtype: str
    ops_per_cycle: float


@dataclass(frozen=True)
class Bandwidth:
    src: str
    dst: str
    bytes_per_cycle: float


@dataclass(frozen=True)
class NativeDef:
    """How the target's programs run as C here (``emit/native.py``): lines before the kernel,
    compiler flags, and the /proc/cpuinfo flags the CPU needs."""

    prelude: str = ""
    flags: str = ""
    cpu: tuple[str, ...] = ()


@dataclass(frozen=True)
class TargetDef:
    name: str
    source: str
    constants: Mapping[str, int]
    buffers: Mapping[str, BufferDef]  # the HBM first
    instructions: Mapping[str, type[InstructionDef]]
    clock_hz: float | None = None
    peaks: tuple[Peak, ...] = ()
    bandwidths: tuple[Bandwidth, ...] = ()
    native: NativeDef | None = None  # None: its programs run only on the simulator
    package: str | None = None  # the module that imports it (``generated.gemmini``): how worker processes load it

    @property
    def hbm(self) -> BufferDef:
        return next(b for b in self.buffers.values() if b.is_hbm)

    def semantics(self, ins: type[InstructionDef], alpha: Mapping[str, int]) -> Module:
        """g(α) as an IR module (parsed once per distinct α)."""
        return _parse_semantics(ins, tuple(sorted({**self.constants, **alpha}.items())))


@lru_cache(maxsize=4096)
def _parse_semantics(ins: type[InstructionDef], symbols: tuple[tuple[str, int], ...]) -> Module:
    from .hlo import parse_module

    loc = ins.semantics_loc
    return parse_module(ins.semantics, loc.file, symbols=dict(symbols), start_line=loc.line,
                        start_col=loc.col, default_name=ins.name)
