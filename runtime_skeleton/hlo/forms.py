"""Every form a kernel comes in, read into a Module.

- HLO text as JAX and XLA print it, with or without an ``--xla_dump_to`` file's source
  tables: the dependency-free parser (``parser.py``);
- StableHLO or MHLO as MLIR text (``jax.jit(f).lower(...).as_text()``, JAX's default), and a
  serialized ``HloModuleProto`` (``.pb``, ``as_serialized_hlo_module_proto()``): converted
  to HLO text by jaxlib's own converters, which only the ``jax`` extra installs;
- from Python: a ``jax.stages.Lowered``, a jitted function with example arguments, an
  ``XlaComputation``, a Module, text or bytes (``kernel_module``).

A ``str`` is always text and a path always a file: nothing is guessed from a string's
shape. Which form a file or text is, is read from its first token (``module`` or
``func.func``: MLIR; anything else: HLO text) and, for bytes, from whether they are text.
"""
from __future__ import annotations

import os
import re
import sys
from types import SimpleNamespace
from typing import Any

from ..errors import HloError, SourceLoc, read_bounded, source_text
from ..ir.graph import Module
from .parser import parse_module

JAX_EXTRA = "pip install 'actgen[jax]'"
_MLIR_START = re.compile(r"\A(?:\s|//[^\n]*\n)*(?:module\b|func\.func\b|#loc)")
_MLIR_ERROR = re.compile(r"-:(\d+):(\d+): error: ([^\n]*)")
_PROTO_TEXT_START = re.compile(r"\A\s*(?:name|entry_computation_name|computations|hlo_module)\s*[:{]")


def read_kernel(path: str | os.PathLike) -> Module:
    """A kernel file in any of the forms above; errors are located in ``path``. ``-``:
    standard input."""
    if str(path) == "-":
        return _bytes_module(read_bounded(sys.stdin.buffer, "<stdin>", HloError), "<stdin>")
    with open(path, "rb") as f:
        return _bytes_module(read_bounded(f, str(path), HloError), str(path))


def _bytes_module(data: bytes, label: str) -> Module:
    """A serialized HloModuleProto, or text (UTF-8, errors located)."""
    if _is_binary(data[:4096]):
        return parse_module(proto_to_hlo(data, label), f"{label} (as HLO)")
    return text_module(source_text(data, label, HloError), label)


def text_module(text: str, filename: str = "<hlo>") -> Module:
    """HLO text, or StableHLO/MHLO MLIR text (converted by jaxlib)."""
    if _MLIR_START.match(text):
        return parse_module(mlir_to_hlo(text, filename), f"{filename} (as HLO)")
    if _PROTO_TEXT_START.match(text):
        raise HloError("an HloModuleProto in protobuf text format is not read: write it as HLO text "
                       "(XlaComputation(proto).as_hlo_text()) or as a serialized proto (.pb)",
                       SourceLoc(filename, 1, 1))
    return parse_module(text, filename)


def kernel_module(source: Any, filename: str = "<hlo>") -> Module:
    """A kernel given from Python: a path (``pathlib.Path`` or ``os.PathLike``), text, bytes
    (a serialized HloModuleProto, or UTF-8 text), a Module, a ``jax.stages.Lowered`` or an
    ``XlaComputation``. A jitted function needs its example arguments: ``jax_module``."""
    if isinstance(source, Module):
        return source
    if isinstance(source, os.PathLike):
        return read_kernel(source)
    if isinstance(source, str):
        return text_module(source, filename)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _bytes_module(bytes(source), filename)
    if hasattr(source, "as_hlo_text"):  # an XlaComputation
        return parse_module(source.as_hlo_text(), filename)
    if hasattr(source, "as_text") and hasattr(source, "compile"):  # a jax.stages.Lowered
        return parse_module(source.as_text(dialect="hlo"), filename)
    if callable(source):
        raise HloError(f"{_name(source)} is a function: give its example arguments too "
                       "(compile_jax(target, f, *args), or jax.jit(f).lower(*args))", None)
    raise HloError(f"cannot read a kernel from {type(source).__name__}: give a path, HLO or StableHLO text, "
                   "a serialized HloModuleProto, or a jax.stages.Lowered", None)


def jax_module(fn: Any, *args: Any, **kwargs: Any) -> Module:
    """The kernel JAX traces from ``fn`` on these example arguments (arrays or
    ``jax.ShapeDtypeStruct``s): ``jax.jit(fn).lower(*args, **kwargs)`` as HLO text."""
    jax = _jax()
    lowered = (fn if hasattr(fn, "lower") else jax.jit(fn)).lower(*args, **kwargs)
    return parse_module(lowered.as_text(dialect="hlo"), f"<{_name(fn)}>")


def mlir_to_hlo(text: str, filename: str) -> str:
    """StableHLO/MHLO text as HLO text, by jaxlib."""
    mlir = _jaxlib(filename, "StableHLO").mlir
    try:
        comp = mlir.mlir_module_to_xla_computation(text, use_tuple_args=False, return_tuple=False)
    except Exception as e:  # jaxlib raises its own exception types; any of them means bad input
        at = _MLIR_ERROR.search(str(e))  # MLIR's own location of the error, in the text it read
        if at is None:
            raise HloError(f"not valid StableHLO/MHLO: {_first_line(e)}", SourceLoc(filename, 1, 1)) from None
        raise HloError(f"not valid StableHLO/MHLO: {at.group(3)[:300]}",
                       SourceLoc(filename, int(at.group(1)), int(at.group(2)))) from None
    return comp.as_hlo_text()


def proto_to_hlo(data: bytes, filename: str) -> str:
    """A serialized HloModuleProto as HLO text, by jaxlib."""
    client = _jaxlib(filename, "a serialized HloModuleProto").client
    try:
        return client.XlaComputation(data).as_hlo_text()
    except Exception as e:  # as above: jaxlib's exception types are its own
        raise HloError(f"not a serialized HloModuleProto: {_first_line(e)}", SourceLoc(filename, 1, 1)) from None


def _jaxlib(filename: str, what: str) -> Any:
    """jaxlib's converters: ``.mlir`` (MLIR to XlaComputation) and ``.client`` (XlaComputation)."""
    try:
        from jax._src.lib import _jax, xla_client
    except ImportError:
        raise HloError(f"reading {what} needs jaxlib's converters: {JAX_EXTRA}", SourceLoc(filename, 1, 1)) from None
    return SimpleNamespace(mlir=_jax.mlir, client=xla_client)


def _jax() -> Any:
    try:
        import jax
    except ImportError:
        raise HloError(f"compiling a JAX function needs jax: {JAX_EXTRA}", None) from None
    return jax


def _is_binary(head: bytes) -> bool:
    """A serialized HloModuleProto, not text: it starts with field 1 (the module's name, a
    length-delimited string: byte 0x0a) and holds control bytes, which text does not (a text
    kernel with a stray control byte gets the parser's located error instead)."""
    return head[:1] == b"\n" and any(b < 9 or 13 < b < 32 for b in head)


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else type(e).__name__


def _name(fn: Any) -> str:
    return getattr(fn, "__name__", type(fn).__name__)
