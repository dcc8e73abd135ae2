"""The tiled kernel's bytes in the forms the load and store instructions read and write.

A tile of a row-major kernel input is a strided window of the input's bytes, and a
result tiled along its columns is written by one read-modify-write strided store per
tile (``layout_axioms``: ``slice-reshape-strided``, ``concat-strided-store``). The
e-graph reaches those forms by pushing slices and concatenations through the
byte-flattening views, which on a two-tile s32[16, 32] sum took eight rounds and 22k
e-nodes. A kernel cut to its tiles (``pretile``) enters in those forms at once: the same
identities, applied to its terms before saturation, as a compiler assigns layouts
before it selects instructions.

- ``windowed``: each slice of a kernel input's bytes viewed as a tensor (bflat's
  reshape and bitcast-convert of a row-major input) is the strided window it reads;
- ``stored``: the bytes of a row-major result made of concatenations are the
  concatenation of its row blocks' bytes, each block along its columns the strided
  stores of ``layout_axioms.strided_stores``.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

from ..ir.dtypes import u8
from ..ir.types import TensorType
from . import bflat
from .axioms import Make, count
from .layout_axioms import bitcast_slice_spec, row_window, strided_stores, strided_window
from .terms import Term, post_order


def windowed(roots: Sequence[Term]) -> list[Term]:
    """``roots`` with every slice of an input's row-major view written as its window."""
    mk = Make(None)  # type: ignore[arg-type]  # terms only
    new: dict[int, Term] = {}
    for t in post_order(roots):
        args = tuple(new.get(id(a), a) if isinstance(a, Term) else a for a in t.args)
        built = t if args == t.args else Term(t.op, t.type, args, t.attrs)
        new[id(t)] = (_window(mk, built) if t.op == "slice" else None) or built
    return [new[id(r)] for r in roots]


def _window(mk: Make, s: Term) -> Term | None:
    (x,) = s.args
    spec = s.attrs["slice"]
    if not isinstance(x, Term):
        return None
    if x.op == "reshape" and _input_bytes(x.args[0]):
        win = row_window(x.type.shape, spec)
        return None if win is None else mk.reshape(strided_window(mk, x.args[0], *win), s.type.shape)
    r = x.args[0] if x.op == "bitcast-convert" else None
    if isinstance(r, Term) and r.op == "reshape" and _input_bytes(r.args[0]):
        sub = bitcast_slice_spec(spec, r.type, x.type)
        win = None if sub is None else row_window(r.type.shape, sub)
        if win is None:
            return None
        inner = tuple(count(d) for d in sub)
        return mk.bitcast(mk.reshape(strided_window(mk, r.args[0], *win), inner), s.type.dtype)
    return None


def _input_bytes(f: object) -> bool:
    return isinstance(f, Term) and f.op in ("input", "parameter") and f.type.rank == 1 and f.type.dtype == u8


def stored(x: Term, t: TensorType) -> Term | None:
    """The bytes of ``x`` (of type ``t``) as row-block and column-tile stores write them;
    None unless ``t`` is row-major and unpadded (its bytes are to_bytes of x) and ``x``
    is a concatenation."""
    if x.op != "concatenate" or bflat.flatten_steps(t) != bflat.to_bytes_steps(t.dtype, t.shape) or t.dtype.is_pred:
        return None
    return _bytes(Make(None), x)  # type: ignore[arg-type]


def _bytes(mk: Make, x: Term) -> Term:
    t = x.type
    if x.op != "concatenate":
        return bflat.flatten(x, TensorType(t.dtype, t.shape))  # type: ignore[return-value]
    (d,) = x.attrs["dimensions"]
    rows = math.prod(t.shape[:d])
    if rows == 1:
        return mk.concat([_bytes(mk, p) for p in x.args], 0)  # type: ignore[arg-type]
    return strided_stores(mk, [_rows(mk, p, rows) for p in x.args], rows)  # type: ignore[arg-type,return-value]


def _rows(mk: Make, p: Term, rows: int) -> Term:
    """The bytes of ``p`` as ``rows`` rows (u8[rows, W]), as a store's semantics views
    its source: reshape(bitcast-convert(p)) for a tile."""
    w = p.type.dtype.nbytes
    if p.op == "concatenate":
        flat = _bytes(mk, p)
    else:
        flat = mk.bitcast(p, u8) if p.type.dtype != u8 else p  # s8 bytes are u8 bytes too
    return mk.reshape(flat, (rows, math.prod(p.type.shape) * w // rows))  # type: ignore[return-value]
