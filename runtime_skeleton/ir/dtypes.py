"""Element types of the tensor IR, named as XLA names them (pred, s8, ..., bf16, f64)."""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    name: str  # XLA spelling: "bf16"
    kind: str  # "pred" | "int" | "uint" | "float"
    bits: int

    @property
    def np(self) -> np.dtype:
        got = _NUMPY.get(self.name)
        return got if got is not None else _ml_dtype(self.name)

    @property
    def nbytes(self) -> int:
        return max(1, self.bits // 8)

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_signed(self) -> bool:
        return self.kind in ("int", "float")

    @property
    def is_pred(self) -> bool:
        return self.kind == "pred"

    def __str__(self) -> str:
        return self.name


_NUMPY: dict[str, np.dtype] = {
    "pred": np.dtype(np.bool_),
    "s8": np.dtype(np.int8),
    "s16": np.dtype(np.int16),
    "s32": np.dtype(np.int32),
    "s64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32),
    "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}


def _ml_dtype(name: str) -> np.dtype:
    """bf16's numpy type, from ml_dtypes, imported on first use: its import alone takes most of
    a second, and most kernels and every --help need no bf16."""
    import ml_dtypes

    _NUMPY[name] = np.dtype({"bf16": ml_dtypes.bfloat16}[name])
    return _NUMPY[name]

DTYPES: dict[str, DType] = {
    "pred": DType("pred", "pred", 8),
    **{f"s{b}": DType(f"s{b}", "int", b) for b in (8, 16, 32, 64)},
    **{f"u{b}": DType(f"u{b}", "uint", b) for b in (8, 16, 32, 64)},
    "f16": DType("f16", "float", 16),
    "bf16": DType("bf16", "float", 16),
    "f32": DType("f32", "float", 32),
    "f64": DType("f64", "float", 64),
}

pred, s8, s16, s32, s64 = (DTYPES[n] for n in ("pred", "s8", "s16", "s32", "s64"))
u8, u16, u32, u64 = (DTYPES[n] for n in ("u8", "u16", "u32", "u64"))
f16, bf16, f32, f64 = (DTYPES[n] for n in ("f16", "bf16", "f32", "f64"))


def dtype(name: str) -> DType:
    """Look up an XLA element type by name; KeyError names the unknown type."""
    try:
        return DTYPES[name]
    except KeyError:
        raise KeyError(f"unknown element type '{name}'") from None


def from_numpy(dt: np.dtype) -> DType:
    dt = np.dtype(dt)
    for name, n in _NUMPY.items():
        if n == dt:
            return DTYPES[name]
    if "ml_dtypes" in sys.modules and dt == bf16.np:  # a bfloat16 array: ml_dtypes made it
        return bf16
    raise KeyError(f"numpy dtype {dt} has no XLA element type")
