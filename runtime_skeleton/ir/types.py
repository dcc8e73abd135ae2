"""Tensor and tuple types with XLA layouts.

A layout is XLA's: ``minor_to_major`` lists the logical dimensions from fastest-
to slowest-varying in memory, and ``tiles`` the tiling applied on top, outermost
tile first (``{1,0:T(8,128)(2,1)}`` has tiles ((8, 128), (2, 1))).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .dtypes import DType


@dataclass(frozen=True)
class Layout:
    minor_to_major: tuple[int, ...]
    tiles: tuple[tuple[int, ...], ...] = ()

    @staticmethod
    def default(rank: int) -> Layout:
        return Layout(tuple(range(rank - 1, -1, -1)))

    def is_default(self) -> bool:
        return not self.tiles and self.minor_to_major == tuple(range(len(self.minor_to_major) - 1, -1, -1))

    def __str__(self) -> str:
        s = ",".join(map(str, self.minor_to_major))
        if self.tiles:
            s += ":T" + "".join("(" + ",".join(map(str, t)) + ")" for t in self.tiles)
        return "{" + s + "}"


@dataclass(frozen=True)
class TensorType:
    dtype: DType
    shape: tuple[int, ...]
    layout: Layout | None = None  # None: no layout written; means the default

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.nbytes

    @property
    def effective_layout(self) -> Layout:
        return self.layout if self.layout is not None else Layout.default(self.rank)

    def with_layout(self, layout: Layout | None) -> TensorType:
        return TensorType(self.dtype, self.shape, layout)

    def with_dtype(self, dtype: DType) -> TensorType:
        return TensorType(dtype, self.shape, self.layout)

    def with_shape(self, shape: tuple[int, ...]) -> TensorType:
        return TensorType(self.dtype, tuple(shape), None)

    def same_shape_dtype(self, other: object) -> bool:
        """Type equality ignoring layout (HLO ops are layout-independent)."""
        return isinstance(other, TensorType) and self.dtype == other.dtype and self.shape == other.shape

    def __str__(self) -> str:
        s = f"{self.dtype.name}[{','.join(map(str, self.shape))}]"
        return s + str(self.layout) if self.layout is not None else s


@dataclass(frozen=True)
class TupleType:
    elements: tuple[Type, ...]

    def same_shape_dtype(self, other: object) -> bool:
        return (
            isinstance(other, TupleType)
            and len(self.elements) == len(other.elements)
            and all(a.same_shape_dtype(b) for a, b in zip(self.elements, other.elements))
        )

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.elements)) + ")"


Type = TensorType | TupleType


def leaves(t: Type) -> list[TensorType]:
    """The tensor types of a (possibly nested) tuple type, in order."""
    if isinstance(t, TensorType):
        return [t]
    return [leaf for e in t.elements for leaf in leaves(e)]
