"""Identity instructions slice^H and concat^H (Act §5.2.3): data slices of a
buffer that need no instruction. A rule adds them beside every unit-stride
slice and every concatenate; whether one is a valid data slice of a particular
buffer (it cuts or joins only along access dimensions) is decided when the
extractor asks for that buffer (``identity_ok``)."""
from __future__ import annotations

from collections.abc import Iterator

from ..target import BufferDef
from .egraph import ClassId
from .rules import rule
from .terms import Class, ENode, Term, View


@rule("slice^H", {"slice"}, {"slice^H"})
def slice_identity(view: View, c: ClassId, n: ENode) -> Iterator[Term]:
    """slice(x) = slice^H(x) for unit strides."""
    if all(d.stride == 1 for d in n.attrs["slice"]):
        yield Term("slice^H", n.type, (Class(n.children[0]),), n.attrs)


@rule("concat^H", {"concatenate"}, {"concat^H"})
def concat_identity(view: View, c: ClassId, n: ENode) -> Iterator[Term]:
    """concatenate(xs) = concat^H(xs)."""
    yield Term("concat^H", n.type, tuple(Class(k) for k in n.children), n.attrs)


IDENTITY_RULES = [slice_identity, concat_identity]


def _fits(buf: BufferDef, shape: tuple[int, ...]) -> bool:
    m = len(buf.access_shape)
    return len(shape) == m + len(buf.unit_shape) and shape[m:] == buf.unit_shape


def identity_ok(buf: BufferDef, n: ENode, view: View) -> bool:
    """Is this slice^H / concat^H a data slice of ``buf`` (no data movement)?"""
    if n.type.dtype != buf.dtype or not _fits(buf, n.type.shape):
        return False
    if not all(_fits(buf, view.type(k).shape) for k in n.children):
        return False
    m = len(buf.access_shape)
    if n.op == "slice^H":
        src = view.type(n.children[0]).shape
        return all(d.start == 0 and d.limit == src[i] for i, d in enumerate(n.attrs["slice"]) if i >= m)
    (dim,) = n.attrs["dimensions"]
    return dim < m
