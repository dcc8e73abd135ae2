"""Typed values of HLO instruction attributes.

Attributes live in ``Instruction.attrs`` keyed by their HLO spelling
(``dimensions``, ``slice``, ``lhs_contracting_dims``, ``padding``, ``window``,
``dim_labels``, ``to_apply``, ``direction``, ``iota_dimension``, ``index``,
``dynamic_slice_sizes``, ``feature_group_count``, ``batch_group_count``, ``type``)
plus two of actgen's own: ``parameter_number`` for ``parameter(N)`` and
``literal`` for ``constant(...)``. Every value is immutable and hashable.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dtypes import DType


@dataclass(frozen=True)
class SliceDim:
    start: int
    limit: int
    stride: int = 1


@dataclass(frozen=True)
class PadDim:
    lo: int
    hi: int
    interior: int = 0


def split_padding(pads: tuple[PadDim, ...]) -> tuple[int, tuple[PadDim, ...] | None] | None:
    """A pad seen along its first padded dimension d: (d, the padding of the other
    dimensions, or None when they are not padded); None when no dimension is padded."""
    d = next((i for i, p in enumerate(pads) if p != PadDim(0, 0)), None)
    if d is None:
        return None
    rest = tuple(PadDim(0, 0) if i == d else p for i, p in enumerate(pads))
    return d, (rest if any(p != PadDim(0, 0) for p in rest) else None)


@dataclass(frozen=True)
class WindowDim:
    size: int
    stride: int = 1
    pad_lo: int = 0
    pad_hi: int = 0
    lhs_dilate: int = 1
    rhs_dilate: int = 1
    reversal: bool = False


@dataclass(frozen=True)
class Window:
    dims: tuple[WindowDim, ...]


@dataclass(frozen=True)
class ConvDimLabels:
    """``dim_labels=b01f_01io->b01f``: which operand/result dimension is the batch
    (b), feature (f), input/output feature (i/o) and each spatial dim (0, 1, ...)."""

    lhs: str
    rhs: str
    out: str

    @property
    def spatial_rank(self) -> int:
        return len(self.lhs) - 2

    def lhs_batch(self) -> int:
        return self.lhs.index("b")

    def lhs_feature(self) -> int:
        return self.lhs.index("f")

    def rhs_in(self) -> int:
        return self.rhs.index("i")

    def rhs_out(self) -> int:
        return self.rhs.index("o")

    def out_batch(self) -> int:
        return self.out.index("b")

    def out_feature(self) -> int:
        return self.out.index("f")

    @staticmethod
    def spatial(labels: str) -> tuple[int, ...]:
        """Positions of spatial dims 0, 1, ... within one label string."""
        n = len(labels) - 2
        return tuple(labels.index(str(k)) for k in range(n))

    def __str__(self) -> str:
        return f"{self.lhs}_{self.rhs}->{self.out}"


@dataclass(frozen=True, eq=False)
class Literal:
    """A dense constant: a read-only numpy array of the constant's element type."""

    dtype: DType
    array: np.ndarray

    def __post_init__(self) -> None:
        arr = np.array(self.array, dtype=self.dtype.np, copy=True)
        arr.setflags(write=False)
        object.__setattr__(self, "array", arr)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    def __eq__(self, other: object) -> bool:
        # Bitwise equality so that NaN == NaN and -0.0 != 0.0: a literal equals its reprint.
        return (
            isinstance(other, Literal)
            and self.dtype == other.dtype
            and self.array.shape == other.array.shape
            and self.array.tobytes() == other.array.tobytes()
        )

    def __hash__(self) -> int:  # cached: phase 1 hashes the rules' constants (eye(64): 4 KB) again and again
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.dtype, self.array.shape, self.array.tobytes()))
            object.__setattr__(self, "_hash", h)
        return h

    def __repr__(self) -> str:
        return f"Literal({self.dtype.name}{list(self.array.shape)}, {self.array.tolist()!r})"
