"""The roofline bound of a program (AccelOpt §3.4), from the target's facts:

    T_peak = max(bytes_read / BW_read, bytes_written / BW_write, max over engines of flops_e / peak_e)
    percent = 100 * T_peak / cycles

- Bytes: the program's inputs and constants are read from HBM once and its
  outputs written once (the minimal traffic; layout padding included).
- Bandwidth: the links d0 -> X of one target share the HBM read port (Gemmini's
  DMA, AMX's load unit), so summing them would overstate what HBM delivers; the
  read bandwidth is the largest d0 -> X link and the write bandwidth the largest
  X -> d0 link. Reads and writes proceed concurrently (separate channels, as the
  timing model's load and store engines do), hence the max, not the sum, of the
  two terms. A target declaring links in one direction only uses them for both.
- Flops: counted from the kernel when it is known (dot and convolution 2 per
  multiply-add, elementwise arithmetic 1 per output element, reductions 1 per
  combine; data movement and type conversion 0), else from the g(α) of each of
  the program's instructions. A dot's dtype is its operands' before widening
  converts, and it goes to the fastest peak of that dtype (or the same width and
  kind, as u8 for s8), else to the fastest peak. Elementwise work goes to a
  vector-like peak, one on an engine whose instructions compute no dot; a target
  without one (Gemmini) does such work on engines it gives no peak for, so it is
  left out of the bound (``unplaced``) rather than charged to a wrong engine.
  Work given to one engine adds up; engines overlap perfectly.

Without a peak or an HBM bandwidth the roofline is undefined: ``t_peak`` is None
and ``reason`` says why.
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..ir.dtypes import DType, dtype
from ..ir.graph import Computation, Instruction, Module
from ..ir.ops import CONTRACTIONS, ELEMENTWISE
from ..ir.types import TensorType
from ..layout import byte_size
from ..target import Peak, TargetDef
from .machine import SimError, _attributes
from ..program import Program

FlopClass = tuple[str, str]  # ("dot" | "elementwise", dtype name)

_ELEMENTWISE = ELEMENTWISE - {"copy", "convert"}
_DOT_RE = re.compile(r"\b(dot|convolution)\(")


@dataclass(frozen=True)
class Roofline:
    t_peak: float | None  # cycles; None when undefined
    reason: str = ""  # why undefined
    bytes_read: int = 0
    bytes_written: int = 0
    read_bw: float | None = None  # bytes/cycle
    write_bw: float | None = None
    t_memory: float = 0.0
    t_engines: dict[str, float] = field(default_factory=dict)  # compute cycles per engine
    flops: dict[FlopClass, int] = field(default_factory=dict)
    unplaced: dict[FlopClass, int] = field(default_factory=dict)  # flops no declared peak can run

    @property
    def bytes_min(self) -> int:
        return self.bytes_read + self.bytes_written

    def percent(self, cycles: int) -> float | None:
        if self.t_peak is None or cycles <= 0:
            return None
        return 100.0 * self.t_peak / cycles

    def bound(self) -> str:
        """Which term sets T_peak."""
        terms = {"memory": self.t_memory, **{f"engine {e}": t for e, t in self.t_engines.items()}}
        return max(terms, key=terms.__getitem__)


def roofline(target: TargetDef, prog: Program, kernel: Module | None = None) -> Roofline:
    if not target.peaks:
        return Roofline(None, f"target {target.name} declares no peak")
    hbm = target.hbm.name
    rd = [b.bytes_per_cycle for b in target.bandwidths if b.src == hbm and b.dst != hbm]
    wr = [b.bytes_per_cycle for b in target.bandwidths if b.dst == hbm and b.src != hbm]
    if not rd and not wr:
        return Roofline(None, f"target {target.name} declares no bandwidth to or from {hbm}")
    read_bw, write_bw = max(rd or wr), max(wr or rd)
    bytes_read = sum(byte_size(d.type) for d in prog.inputs) + sum(len(c.data) for c in prog.consts)
    bytes_written = sum(byte_size(d.type) for d in prog.outputs)
    t_memory = max(bytes_read / read_bw, bytes_written / write_bw)
    flops = kernel_flops(kernel) if kernel is not None else program_flops(target, prog)
    t_engines: dict[str, float] = defaultdict(float)
    unplaced: dict[FlopClass, int] = {}
    for cls, n in flops.items():
        peak = place(target, cls)
        if peak is None:
            unplaced[cls] = n
        else:
            t_engines[peak.engine] += n / peak.ops_per_cycle
    t_peak = max([t_memory, *t_engines.values()])
    return Roofline(t_peak, "", bytes_read, bytes_written, read_bw, write_bw, t_memory, dict(t_engines),
                    flops, unplaced)


def place(target: TargetDef, cls: FlopClass) -> Peak | None:
    """The peak a class of flops runs at (see the module docstring)."""
    kind, name = cls
    peaks = list(target.peaks)
    if kind == "elementwise":
        matrix = matrix_engines(target)
        peaks = [p for p in peaks if p.engine not in matrix]
        if not peaks:
            return None
    want = dtype(name)
    for same in (lambda d: d == want, lambda d: d.bits == want.bits and d.is_int == want.is_int):
        fits = [p for p in peaks if same(dtype(p.dtype))]
        if fits:
            return max(fits, key=lambda p: p.ops_per_cycle)
    return max(peaks, key=lambda p: p.ops_per_cycle)


def matrix_engines(target: TargetDef) -> frozenset[str]:
    """Engines running an instruction whose semantics computes a dot or convolution."""
    return frozenset(ins.engine for ins in target.instructions.values() if _DOT_RE.search(ins.semantics))


def program_flops(target: TargetDef, prog: Program) -> dict[FlopClass, int]:
    """Flops of the program's instructions, each counted from its g(α)."""
    per_instr: dict[tuple, dict[FlopClass, int]] = {}
    total: dict[FlopClass, int] = defaultdict(int)
    for ci in prog.flat():
        ins = target.instructions.get(ci.name)
        if ins is None:
            raise SimError(f"unknown instruction '{ci.name}' for target {target.name}", ci.loc)
        a = _attributes(ins, ci)
        alpha = tuple((d.name, a[d.name]) for d in ins.comp_attrs)
        if (ins, alpha) not in per_instr:
            per_instr[ins, alpha] = kernel_flops(target.semantics(ins, dict(alpha)))
        for cls, n in per_instr[ins, alpha].items():
            total[cls] += n
    return dict(total)


def kernel_flops(module: Module) -> dict[FlopClass, int]:
    """Flops of a kernel's entry computation (calls followed), by class."""
    total: dict[FlopClass, int] = defaultdict(int)
    _count(module, module.entry_computation, total)
    return dict(total)


def _count(module: Module, comp: Computation, total: dict[FlopClass, int]) -> None:
    for inst in comp:
        if inst.opcode == "call":
            _count(module, module.computations[str(inst.attrs["to_apply"])], total)
        elif inst.opcode in CONTRACTIONS:
            total["dot", _dot_dtype(comp, inst).name] += _dot_flops(comp, inst)
        elif inst.opcode in ("reduce", "reduce-window"):
            n = len(inst.operands) // 2
            x = comp[inst.operands[0]].tensor_type
            combines = _combines(inst, x)
            total["elementwise", x.dtype.name] += n * combines
        elif inst.opcode in _ELEMENTWISE and isinstance(inst.type, TensorType):
            t = comp[inst.operands[0]].tensor_type if inst.opcode == "compare" else inst.tensor_type
            total["elementwise", t.dtype.name] += math.prod(inst.tensor_type.shape)


def _dot_flops(comp: Computation, inst: Instruction) -> int:
    out = math.prod(_result_shapes(inst))
    lhs, rhs = (comp[o].tensor_type for o in inst.operands[:2])
    if inst.opcode == "dot":
        k = math.prod(lhs.shape[d] for d in inst.attrs.get("lhs_contracting_dims", ()))
    else:  # each output element sums over one kernel window of input features
        k = math.prod(rhs.shape) // rhs.shape[inst.attrs["dim_labels"].rhs_out()]
    return 2 * out * k


def _combines(inst: Instruction, x: TensorType) -> int:
    out = math.prod(_result_shapes(inst))
    if inst.opcode == "reduce":
        return math.prod(x.shape) - out
    return out * (math.prod(w.size for w in inst.attrs["window"].dims) - 1)


def _result_shapes(inst: Instruction) -> Iterable[int]:
    t = inst.type
    return t.shape if isinstance(t, TensorType) else t.elements[0].shape


def _dot_dtype(comp: Computation, inst: Instruction) -> DType:
    """The wider of the operands' dtypes before the converts that widen them for the dot."""
    def before_convert(name: str) -> DType:
        while comp[name].opcode == "convert":
            name = comp[name].operands[0]
        return comp[name].tensor_type.dtype

    lhs, rhs = (before_convert(o) for o in inst.operands[:2])
    return rhs if rhs.bits > lhs.bits else lhs
