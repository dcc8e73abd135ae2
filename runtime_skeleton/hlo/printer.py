"""IR Module -> canonical HLO text that parses back to an equal Module.

Spelling follows XLA's printer (attribute names, ``slice={[0:4:2]}``,
``padding=0_0x1_2_1``, ``window={size=3x3 ...}``); attributes equal to their
defaults are left out, as XLA does. Floats print as the shortest text that
reads back to the same bits; every NaN prints as ``nan``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir.attrs import Literal, PadDim, SliceDim, Window, WindowDim
from ..ir.dtypes import DType
from ..ir.graph import Computation, Instruction, Module
from ..ir.types import Layout, TupleType, Type
from .parser import to_dtype_array


def print_module(m: Module) -> str:
    params = ", ".join(map(print_type, m.parameter_types))
    lines = [f"HloModule {m.name}, entry_computation_layout={{({params})->{print_type(m.result_type)}}}"]
    for comp in m.computations.values():
        lines.append("")
        lines.extend(print_computation(comp, entry=comp.name == m.entry))
    return "\n".join(lines) + "\n"


def print_computation(c: Computation, *, entry: bool = False) -> list[str]:
    lines = [f"{'ENTRY ' if entry else ''}{c.name} {{"]
    lines += ["  " + print_instruction(i, root=i.name == c.root) for i in c.instructions]
    lines.append("}")
    return lines


def print_instruction(i: Instruction, *, root: bool = False) -> str:
    if i.opcode == "parameter":
        args = str(i.attrs["parameter_number"])
    elif i.opcode == "constant":
        args = print_literal(i.attrs["literal"])
    else:
        args = ", ".join(i.operands)
    text = f"{'ROOT ' if root else ''}{i.name} = {print_type(i.type)} {i.opcode}({args})"
    for key in sorted(i.attrs, key=_attr_rank):
        if key in ("parameter_number", "literal"):
            continue
        value = _print_attr(i.opcode, key, i.attrs[key])
        if value is not None:
            text += f", {key}={value}"
    return text


def print_type(t: Type) -> str:
    if isinstance(t, TupleType):
        return "(" + ", ".join(print_type(e) for e in t.elements) + ")"
    text = f"{t.dtype.name}[{','.join(map(str, t.shape))}]"
    return text if t.layout is None else text + print_layout(t.layout)


def print_layout(layout: Layout) -> str:
    """XLA spelling: ``{1,0:T(8,128)(2,1)}`` (one T, then every tile)."""
    text = ",".join(map(str, layout.minor_to_major))
    if layout.tiles:
        text += ":T" + "".join("(" + ",".join(map(str, t)) + ")" for t in layout.tiles)
    return "{" + text + "}"


# ---------------------------------------------------------------- attributes

_ATTR_ORDER = (
    "dimensions", "slice", "dynamic_slice_sizes", "padding", "window", "dim_labels",
    "lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims",
    "feature_group_count", "batch_group_count", "iota_dimension", "index", "direction", "type",
    "to_apply",
)


def _attr_rank(key: str) -> tuple[int, str]:
    return (_ATTR_ORDER.index(key) if key in _ATTR_ORDER else len(_ATTR_ORDER), key)


def _int(v: Any) -> str:
    """An integer, or a symbolic one in parentheses so it reads back inside x/_ lists."""
    return str(v) if isinstance(v, int) else f"({v})"


def _ints(values: Any) -> str:
    return "{" + ",".join(map(str, values)) + "}"


def _slice(dims: tuple[SliceDim, ...]) -> str:
    parts = [f"[{d.start}:{d.limit}" + (f":{d.stride}]" if d.stride != 1 else "]") for d in dims]
    return "{" + ", ".join(parts) + "}"


def _padding(dims: tuple[PadDim, ...]) -> str:
    return "x".join(f"{_int(d.lo)}_{_int(d.hi)}" + (f"_{_int(d.interior)}" if d.interior != 0 else "") for d in dims)


def _window(w: Window) -> str:
    fields: list[tuple[str, Callable[[WindowDim], str], Callable[[WindowDim], bool]]] = [
        ("size", lambda d: _int(d.size), lambda d: True),
        ("stride", lambda d: _int(d.stride), lambda d: d.stride != 1),
        ("pad", lambda d: f"{_int(d.pad_lo)}_{_int(d.pad_hi)}", lambda d: d.pad_lo != 0 or d.pad_hi != 0),
        ("lhs_dilate", lambda d: _int(d.lhs_dilate), lambda d: d.lhs_dilate != 1),
        ("rhs_dilate", lambda d: _int(d.rhs_dilate), lambda d: d.rhs_dilate != 1),
        ("rhs_reversal", lambda d: str(int(d.reversal)), lambda d: d.reversal),
    ]
    parts = [f"{name}=" + "x".join(fmt(d) for d in w.dims)
             for name, fmt, needed in fields if w.dims and any(needed(d) for d in w.dims)]
    return "{" + " ".join(parts) + "}"


def _print_attr(opcode: str, key: str, value: Any) -> str | None:
    """XLA spelling of one attribute value, or None to leave a default out."""
    if key in ("dimensions", "lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims"):
        return None if opcode == "dot" and not value else _ints(value)
    if key == "dynamic_slice_sizes":
        return _ints(value)
    if key == "slice":
        return _slice(value)
    if key == "padding":
        return _padding(value)
    if key == "window":
        return None if opcode == "convolution" and not value.dims else _window(value)
    if key in ("feature_group_count", "batch_group_count"):
        return None if value == 1 else str(value)
    return str(value)  # dim_labels, to_apply, direction, type, iota_dimension, index


# ---------------------------------------------------------------- literals


def print_literal(lit: Literal) -> str:
    flat = lit.array.reshape(-1)
    if lit.dtype.is_pred:
        texts = ["true" if v else "false" for v in flat.tolist()]
    elif lit.dtype.is_int:
        texts = [str(v) for v in flat.tolist()]
    else:
        texts = _format_floats(flat, lit.dtype)
    if not lit.shape:
        return texts[0]
    return _nest(texts, lit.shape)


def _nest(flat: list[str], shape: tuple[int, ...]) -> str:
    if len(shape) == 1:
        return "{" + ", ".join(flat) + "}"
    step = len(flat) // shape[0] if shape[0] else 0
    rows = [_nest(flat[k * step:(k + 1) * step], shape[1:]) for k in range(shape[0])]
    return "{ " + ", ".join(rows) + " }" if rows else "{}"


def format_scalar(v: Any, dt: DType) -> str:
    """One element as HLO prints it; floats as the shortest text that reads back to the same bits."""
    return print_literal(Literal(dt, np.asarray(v, dtype=dt.np)))


def _strip(text: str) -> str:
    return text[:-2] if text.endswith(".0") else text


def _format_floats(flat: np.ndarray, dt: DType) -> list[str]:
    x = flat.astype(np.float64)
    texts = ["nan" if v != v else "inf" if v == np.inf else "-inf" if v == -np.inf else "" for v in x.tolist()]
    pending = np.array([k for k, t in enumerate(texts) if not t], dtype=np.int64)
    if dt.name == "bf16":  # numpy has no shortest-repr printing for bf16: try few digits first
        candidates = [lambda v, p=p: repr(float(f"{v:.{p}g}")) for p in range(1, 5)]
    else:  # numpy prints the shortest text that reads back in the value's own type
        candidates = [lambda v: str(dt.np.type(v))]
    bits = np.dtype(f"u{dt.np.itemsize}")
    for candidate in candidates:
        if not len(pending):
            break
        tried = [_strip(candidate(v)) for v in (x[pending] if dt.name == "bf16" else flat[pending])]
        back = to_dtype_array([float(t) for t in tried], dt)
        ok = back.view(bits) == flat[pending].view(bits)
        for k, text, good in zip(pending.tolist(), tried, ok.tolist()):
            if good:
                texts[k] = text
        pending = pending[~ok]
    for k in pending.tolist():  # the exact double always reads back
        texts[k] = _strip(repr(float(x[k])))
    return texts
