"""Shared CLI plumbing: turn ActgenError into one located line and exit status 2."""
from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable

from .errors import ActgenError


def run_cli(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> int:
    try:
        return main(argv)
    except ActgenError as err:
        print(str(err) if err.loc else f"error: {err}", file=sys.stderr)
        return 2
    except (FileNotFoundError, IsADirectoryError, PermissionError) as err:
        print(f"error: {err.filename}: {err.strerror}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def at_least(kind: Callable[[str], int | float], low: int | float, strict: bool = False) -> Callable[[str], int | float]:
    """An argparse ``type`` that parses with ``kind`` and refuses values below ``low``
    (or equal to it when ``strict``), so ``--timeout -3`` is a usage error, not a search
    that ends at once."""
    def parse(text: str) -> int | float:
        value = kind(text)
        if value != value or value in (math.inf, -math.inf):  # nan compares false with every bound
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(f"must be {'>' if strict else '>='} {low}, got {text}")
        return value
    parse.__name__ = kind.__name__  # argparse names the type in its 'invalid int value' message
    return parse


def refuse_overwrite(writes: dict[str, str | None], reads: dict[str, str | None]) -> None:
    """An ActgenError when a file the command writes ({"-o": path}) is one it reads
    ({"the kernel": path}) or another it writes: nothing the user wrote is overwritten."""
    seen: dict[str, str] = {}
    for role, path in reads.items():
        if path is not None:
            seen.setdefault(_identity(path), f"{role} {path}")
    for opt, path in writes.items():
        if path is None:
            continue
        key = _identity(path)
        if key in seen:
            raise ActgenError(f"{opt} {path} is {seen[key]}: refusing to overwrite it")
        seen[key] = f"the file {opt} writes"


def _identity(path: str) -> str:
    try:
        st = os.stat(path)
        return f"{st.st_dev}:{st.st_ino}"
    except OSError:  # not there yet: its absolute, normalised path
        return os.path.realpath(path)
