"""Shared CLI plumbing: turn ActgenError into one located line and exit status 2."""
from __future__ import annotations

import argparse
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
        if value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(f"must be {'>' if strict else '>='} {low}, got {text}")
        return value
    parse.__name__ = kind.__name__  # argparse names the type in its 'invalid int value' message
    return parse
