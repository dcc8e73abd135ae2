"""Shared CLI plumbing: turn ActgenError into one located line and exit status 2."""
from __future__ import annotations

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
