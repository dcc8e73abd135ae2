"""A program as C, built with the system's C compiler and run on this CPU.

Target-free: what each instruction is in C comes from the description (an instruction's
``native`` text, with ``{attr}`` for its attributes' values, and the target's prelude,
flags and CPU features). Every on-chip buffer becomes a byte array named after it, HBM the
kernel's argument ``uint8_t *<hbm name>``, a loop a C ``for`` loop, and an attribute its
affine C expression over the loop counters. So a description that writes, say,
``Y({dst}) = _mm256_add_ps(Y({a}), Y({b}));`` with ``#define Y(i) (((__m256 *)ymm)[i])`` in
its prelude runs its programs as AVX2 code.

Before a program runs natively, every instruction is checked over its loops' ranges
(``program.verify``): a program that would read or write outside its buffers never
reaches the CPU.
"""
from __future__ import annotations

import ctypes
import hashlib
import math
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence

import numpy as np

from ..cache import cache_root
from ..errors import ActgenError
from ..layout import bflat, byte_size, unbflat
from ..program import Affine, ConcreteInstr, Item, Loop, Program
from ..target import TargetDef

ENTRY = "actgen_kernel"
_C_KEYWORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register restrict return short signed sizeof static struct switch typedef union unsigned void volatile "
    "while".split())
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class NativeError(ActgenError):
    """A program that cannot run natively here: no native text, no compiler, a CPU without
    the target's features, a build that fails."""


def c_source(target: TargetDef, prog: Program) -> str:
    """The program as one C translation unit defining ``void actgen_kernel(uint8_t *hbm)``."""
    require_native(target)
    for name in target.buffers:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or name in _C_KEYWORDS:
            raise NativeError(f"buffer '{name}' of {target.name} cannot be a C array name")
    lines = [f"/* {target.name} program, emitted by actgen: run with `run --native` or as a shared library */",
             "#include <stdint.h>", "#include <string.h>", ""]
    for b in target.buffers.values():
        if not b.is_hbm:
            lines.append(f"static uint8_t {b.name}[{b.nbytes}] __attribute__((aligned(64)));")
    lines += ["", target.native.prelude, "", f"void {ENTRY}(uint8_t *{target.hbm.name}) {{"]
    _items(target, prog.instructions, "    ", lines)
    lines.append("}")
    return "\n".join(lines) + "\n"


def require_native(target: TargetDef) -> None:
    """A NativeError unless the description says how its programs run natively."""
    if target.native is None:
        raise NativeError(f"target {target.name} says nothing of how its programs run natively "
                          f"(its description has no native_prelude, native_flags or native_cpu)")


def _items(target: TargetDef, items: Sequence[Item], indent: str, lines: list[str]) -> None:
    for it in items:
        if isinstance(it, Loop):
            v = _var(it.var)
            lines.append(f"{indent}for (int64_t {v} = {it.start}; {v} < {it.stop}; {v}++) {{")
            _items(target, it.body, indent + "    ", lines)
            lines.append(indent + "}")
        else:
            lines += [indent + line for line in _statement(target, it).split("\n")]


def _statement(target: TargetDef, ci: ConcreteInstr) -> str:
    ins = target.instructions.get(ci.name)
    if ins is None:
        raise NativeError(f"unknown instruction '{ci.name}' for target {target.name}", ci.loc)
    if ins.native is None:
        raise NativeError(f"{ci.name} has no native text in {target.name}'s description: its programs cannot run "
                          f"natively", ci.loc)
    return _PLACEHOLDER.sub(lambda m: _value(ci.attrs[m.group(1)]), ins.native)


def _value(v: int | Affine) -> str:
    if isinstance(v, int):
        return f"INT64_C({v})" if abs(v) >= 2**31 else str(v)
    terms = "".join(f" + {c} * {_var(x)}" for x, c in v.terms)
    return f"({v.const}{terms})"


def _var(name: str) -> str:
    return f"loop_{name}"  # apart from the buffers' and the prelude's names


def missing_cpu_features(target: TargetDef) -> list[str]:
    """The CPU features the target's native code needs that this CPU lacks."""
    want = target.native.cpu if target.native else ()
    if not want:
        return []
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return list(want)  # cannot tell: treat as absent
    have = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            have |= set(line.split(":", 1)[1].split())
    return [f for f in want if f not in have]


def build(target: TargetDef, prog: Program, out: pathlib.Path | None = None) -> pathlib.Path:
    """The program as a shared library (``out``, else a cached one named by its source)."""
    source = c_source(target, prog)
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        raise NativeError(f"no C compiler '{cc}' on this machine (set CC)")
    flags = ["-O2", "-shared", "-fPIC", *target.native.flags.split()]
    key = hashlib.sha256("\0".join([cc, *flags, source]).encode()).hexdigest()[:20]
    if out is None:
        cache = cache_root() / "native"
        cache.mkdir(parents=True, exist_ok=True)
        out = cache / f"{target.name}-{key}.so"
        if out.is_file():
            return out
    with tempfile.TemporaryDirectory(prefix="actgen-native-") as tmp:
        c_file = pathlib.Path(tmp) / "kernel.c"
        c_file.write_text(source)
        built = pathlib.Path(tmp) / "kernel.so"
        r = subprocess.run([cc, *flags, "-o", str(built), str(c_file)], capture_output=True, text=True)
        if r.returncode != 0:
            raise NativeError(f"{cc} could not build the program:\n{r.stderr.strip()[:2000]}")
        shutil.move(str(built), out)
    return out


def native_function(target: TargetDef, prog: Program) -> NativeKernel:
    """A Python function running ``prog`` on this CPU: arrays in (one per program input),
    arrays out (one per output). Refused (NativeError) when the CPU lacks the target's
    features; a program an instruction of which would leave its buffers never runs."""
    from ..program.verify import verify_program

    missing = missing_cpu_features(target)
    if missing:
        raise NativeError(f"this CPU lacks {', '.join(missing)}: {target.name} programs cannot run natively here")
    verify_program(target, prog)  # the simulator's bound checks, over every loop iteration, first
    return NativeKernel(target, prog, build(target, prog))


class NativeKernel:
    """A built program: call it with the inputs; ``seconds`` times the kernel alone."""

    def __init__(self, target: TargetDef, prog: Program, library: pathlib.Path) -> None:
        self.prog = prog
        self.size = target.hbm.nbytes
        self.entry = getattr(ctypes.CDLL(str(library)), ENTRY)
        self.entry.argtypes, self.entry.restype = [ctypes.c_void_p], None

    def hbm(self, inputs: Sequence[np.ndarray]) -> np.ndarray:
        """HBM with the inputs and constants in place."""
        if len(inputs) != len(self.prog.inputs):
            raise NativeError(f"the program has {len(self.prog.inputs)} input(s), got {len(inputs)}")
        hbm = np.zeros(self.size, np.uint8)
        for decl, arr in zip(self.prog.inputs, inputs):
            data = bflat(np.asarray(arr), decl.type)
            hbm[decl.offset:decl.offset + len(data)] = np.frombuffer(data, np.uint8)
        for c in self.prog.consts:
            hbm[c.offset:c.offset + len(c.data)] = np.frombuffer(c.data, np.uint8)
        return hbm

    def __call__(self, *inputs: np.ndarray) -> list[np.ndarray]:
        hbm = self.hbm(inputs)
        self.entry(hbm.ctypes.data)
        return [unbflat(hbm[d.offset:d.offset + byte_size(d.type)].tobytes(), d.type) for d in self.prog.outputs]

    def seconds(self, inputs: Sequence[np.ndarray], repeat: int = 5, min_seconds: float = 0.05) -> float:
        """``best_seconds`` of the kernel alone, inputs in place; HBM keeps what a call leaves."""
        hbm = self.hbm(inputs)
        at = hbm.ctypes.data
        return best_seconds(lambda: self.entry(at), repeat, min_seconds)


def best_seconds(call: Callable[[], object], repeat: int = 5, min_seconds: float = 0.05) -> float:
    """The fastest of ``repeat`` timings of ``call``, each the mean over enough calls to last
    about ``min_seconds``."""
    calls, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < min_seconds / 10:
        call()
        calls += 1
    n = max(1, calls * 10)
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            call()
        best = min(best, (time.perf_counter_ns() - t0) / n / 1e9)
    return best
