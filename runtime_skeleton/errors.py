"""User-facing errors: every one carries a source location and prints as
``file:line:col: message`` (the format compilers use, so editors can jump to it)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO


@dataclass(frozen=True)
class SourceLoc:
    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class ActgenError(Exception):
    """An error in something the user wrote (or a kernel the target cannot run).

    CLIs catch it, print ``str(err)`` and exit with status 2; nothing else should
    reach the user as a traceback."""

    def __init__(self, message: str, loc: SourceLoc | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc

    def __str__(self) -> str:
        return f"{self.loc}: {self.message}" if self.loc else self.message


class HloError(ActgenError):
    """Malformed or ill-typed HLO text, or an HLO op actgen does not support."""


class EvalError(ActgenError):
    """The reference interpreter cannot evaluate a graph (bad inputs, unsupported op)."""


def shown_count(n: int) -> str:
    """A count for a message: its digits, or its order of magnitude when it is huge."""
    return str(n) if n < 10**15 else f"about 10^{len(str(n)) - 1}"


MAX_SOURCE_BYTES = 64 << 20  # the largest .isa, HLO or program file read (docs/limits.md)
MAX_BUFFER_BYTES = 1 << 32  # the largest buffer a description declares, HBM included (docs/limits.md)


def read_source(path: str | Path, error: type[ActgenError] = ActgenError, label: str | None = None) -> str:
    """A source file's text; ``error`` located at the first byte that is not UTF-8 (a
    UnicodeDecodeError traceback otherwise), or where the file passes MAX_SOURCE_BYTES (a
    device such as /dev/zero never ends). ``label``: the file's name in messages."""
    with open(path, "rb") as f:
        return source_text(read_bounded(f, label or str(path), error), label or str(path), error)


def read_bounded(f: BinaryIO, label: str, error: type[ActgenError] = ActgenError) -> bytes:
    """At most MAX_SOURCE_BYTES of a file or stream; ``error`` where it passes them."""
    data = f.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise error(f"file is larger than {MAX_SOURCE_BYTES >> 20} MiB, the most actgen reads",
                    _byte_loc(data, MAX_SOURCE_BYTES, label))
    return data


def source_text(data: bytes, label: str, error: type[ActgenError] = ActgenError) -> str:
    """``data`` as UTF-8; ``error`` located at the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error("file is not valid UTF-8", _byte_loc(data, e.start, label)) from None


def _byte_loc(data: bytes, i: int, label: str) -> SourceLoc:
    """Byte i's line and column."""
    return SourceLoc(label, data.count(b"\n", 0, i) + 1, i - data.rfind(b"\n", 0, i))
