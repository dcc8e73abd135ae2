"""What the fuzzer draws for a target: element types and tile-friendly dimensions,
derived from the target's description (Act §9.4: kernels a backend should accept).

* dtypes: the element types of the values instructions compute and write
  (``obstacles.written_types``), not the u8 byte plumbing of loads and stores, nor
  types only inside an instruction (Gemmini's f32 scale on the way to int8, AMX's u32
  saturation in vpmovusdb). Gemmini: s8, s32; AMX: bf16, f32, s8, s32, u8; QKV: bf16.
* accumulators: what a dot of two tensors of a dtype produces (XLA allows a wider
  result type): narrow integers into s32 and bf16/f16 into f32 where the target
  computes in those, otherwise the operand type.
* dims: the sizes of the rows of on-chip buffers of those types (16 for Gemmini's DIM-wide rows,
  16 and 64 for AMX's zmm and tile rows, 64 for QKV) and their doubles, up to 64.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..isel.obstacles import written_types
from ..superopt.parallel import TargetRef
from ..target import TargetDef

_KNOWN = frozenset({"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "bf16", "f16", "f32", "f64"})
MAX_DIM = 64
MAX_ELEMENTS = 8192  # per tensor: small enough to sit on chip beside others


@dataclass(frozen=True)
class Profile:
    target: str
    dtypes: tuple[str, ...]  # sorted
    accumulators: dict  # dtype -> dtype a dot of two such tensors produces
    dims: tuple[int, ...]  # tile-friendly extents, sorted
    max_elements: int = MAX_ELEMENTS
    ops: frozenset | None = None  # (operator, dtype) pairs to draw (dot: its operands' dtype); None: all

    def acc(self, dtype: str) -> str:
        return self.accumulators.get(dtype, dtype)

    @property
    def probed(self) -> bool:
        """Restricted to what probes compiled (which also fixes the forms drawn to the probes')."""
        return self.ops is not None

    def can(self, op: str, dtype: str) -> bool:
        return not self.probed or (op, dtype) in self.ops


def resolve_target(target: TargetDef | str) -> TargetDef:
    """A TargetDef; a TargetRef (a job's, loaded from exactly its module); or the name of a
    generated package: a module path (``mypkg.mytgt``), or a bare name for one in
    ``generated/`` (``gemmini`` -> generated.gemmini)."""
    if isinstance(target, TargetDef):
        return target
    if isinstance(target, TargetRef):
        return target.load()
    return importlib.import_module(target if "." in target else f"generated.{target}").TARGET


def _accumulator(dt: str, have: set[str]) -> str:
    if dt in ("s8", "u8", "s16", "u16") and "s32" in have:
        return "s32"
    if dt in ("bf16", "f16") and "f32" in have:
        return "f32"
    return dt


def profile(target: TargetDef | str) -> Profile:
    t = resolve_target(target)
    have = written_types(t)
    dtypes = tuple(sorted(d for d in have if d in _KNOWN)) or ("f32",)
    onchip = [b for b in t.buffers.values() if not b.is_hbm and b.dtype.name in dtypes]  # not a config register
    rows = {b.unit_shape[-1] if b.unit_shape else b.access_shape[-1] for b in onchip}
    dims = sorted({d for r in rows for d in (r, 2 * r) if 1 <= d <= MAX_DIM}) or [16]
    return Profile(t.name, dtypes, {d: _accumulator(d, have) for d in dtypes}, tuple(dims))
