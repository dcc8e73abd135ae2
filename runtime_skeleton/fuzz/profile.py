"""What the fuzzer draws for a target: element types and tile-friendly dimensions,
derived from the target's description (Act §9.4: kernels a backend should accept).

* dtypes: the element types the instruction semantics compute with — operands and
  results of arithmetic (dot, add, clamp, convert, ...), not the u8 byte plumbing
  of loads and stores (bitcast-convert, reshape, pad, slice) — plus the element types
  of the on-chip buffers. Gemmini: s8, s32; AMX: bf16, f32, s8, s32, u8, u32; QKV: bf16.
* accumulators: what a dot of two tensors of a dtype produces (XLA allows a wider
  result type): narrow integers into s32 and bf16/f16 into f32 where the target
  computes in those, otherwise the operand type.
* dims: the sizes of the on-chip buffers' rows (16 for Gemmini's DIM-wide rows,
  16 and 64 for AMX's zmm and tile rows, 64 for QKV) and their doubles, up to 64.
"""
from __future__ import annotations

import importlib
import re
from dataclasses import dataclass

from ..target import TargetDef

# name = dtype[shape] opcode(operands) in the semantics' HLO text
_LINE = re.compile(r"^\s*(?:ROOT\s+)?([\w.\-]+)\s*=\s*([a-z]+[0-9]*)\[[^\]]*\][^=\n]*?\s([a-z][\w\-]*)\(([^)\n]*)\)",
                   re.M)
_ARITH = frozenset({"dot", "add", "subtract", "multiply", "divide", "maximum", "minimum", "negate", "abs",
                    "clamp", "convert", "exponential", "reduce", "sqrt", "tanh", "and", "or", "xor"})
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
    """A TargetDef, or the name of a generated package (``gemmini`` -> generated.gemmini)."""
    if isinstance(target, TargetDef):
        return target
    return importlib.import_module(f"generated.{target}").TARGET


def semantic_dtypes(target: TargetDef) -> set[str]:
    found: set[str] = set()
    for ins in target.instructions.values():
        names: dict[str, str] = {}
        for m in _LINE.finditer(ins.semantics):
            name, dt, op, args = m.groups()
            names[name] = dt
            if op in _ARITH:
                found.add(dt)
                found.update(names[a.strip()] for a in args.split(",") if a.strip() in names)
    return found


def _accumulator(dt: str, have: set[str]) -> str:
    if dt in ("s8", "u8", "s16", "u16") and "s32" in have:
        return "s32"
    if dt in ("bf16", "f16") and "f32" in have:
        return "f32"
    return dt


def profile(target: TargetDef | str) -> Profile:
    t = resolve_target(target)
    onchip = [b for b in t.buffers.values() if not b.is_hbm]
    have = semantic_dtypes(t) | {b.dtype.name for b in onchip}
    dtypes = tuple(sorted(d for d in have if d in _KNOWN)) or ("f32",)
    rows = {b.unit_shape[-1] if b.unit_shape else b.access_shape[-1] for b in onchip}
    dims = sorted({d for r in rows for d in (r, 2 * r) if 1 <= d <= MAX_DIM}) or [16]
    return Profile(t.name, dtypes, {d: _accumulator(d, have) for d in dtypes}, tuple(dims))
