"""Shared CLI plumbing: an ActgenError is one located line and exit status 2; a crash
inside actgen (a bug) is one line naming it as one, exit 3, its traceback only under -v."""
from __future__ import annotations

import argparse
import math
import os
import sys
import traceback
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version

from .errors import ActgenError

BUG = 3  # exit status of a crash inside actgen
MAX_SHOWN = 4000  # characters of an error's text printed (a 1 MB token is not echoed)
MAX_SHOWN_BUG = 200  # characters of a crash's exception text


def actgen_version() -> str:
    try:
        return version("actgen")
    except PackageNotFoundError:  # run from a source tree that is not installed
        return "unknown (not installed)"


def add_common_flags(ap: argparse.ArgumentParser, with_version: bool = True, verbose_also: str = "") -> None:
    """``--version`` and ``-v`` (a crash inside actgen prints its traceback), on every CLI
    (``-v`` on each subcommand too, where it is written after the subcommand's name: there,
    without ``--version``, it has no default of its own, so a ``-v`` before the subcommand's
    name holds); ``verbose_also``: what else ``-v`` does on that command."""
    if with_version:
        ap.add_argument("--version", action="version", version=f"actgen {actgen_version()}")
    ap.add_argument("-v", "--verbose", action="store_true", default=False if with_version else argparse.SUPPRESS,
                    help="on a crash inside actgen (a bug), print its traceback" + (f"; {verbose_also}" if verbose_also else ""))


def _shown(text: str, limit: int = MAX_SHOWN) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def run_cli(main: Callable[[list[str] | None], int], argv: list[str] | None = None) -> int:
    verbose = any(a in ("-v", "--verbose") for a in (sys.argv[1:] if argv is None else argv))
    try:
        return main(argv)
    except ActgenError as err:
        print(str(err) if err.loc else f"error: {_shown(str(err))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`info | head -2`): stop quietly, as a pipeline expects
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python flushes stdout at exit too
        return 1
    except OSError as err:  # a file not found, a directory, no permission, a full disk
        print(f"error: {err.filename + ': ' if err.filename else ''}{err.strerror or err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except RecursionError:
        _trace(verbose)
        print("error: the input is nested too deeply for actgen (Python's recursion limit)", file=sys.stderr)
        return 2
    except MemoryError:
        _trace(verbose)
        print("error: out of memory: the input asks for more than this machine has", file=sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - anything else is a bug in actgen, said as one
        _trace(verbose)
        frame = traceback.extract_tb(err.__traceback__)[-1]
        where = f"{os.path.relpath(frame.filename) if frame.filename.startswith(os.getcwd()) else frame.filename}" \
                f":{frame.lineno} in {frame.name}"
        print(f"internal error (a bug in actgen {actgen_version()}): {type(err).__name__}: {_shown(str(err), MAX_SHOWN_BUG)} "
              f"at {where}; please report it with the command and its input files"
              + ("" if verbose else " (-v prints the traceback)"), file=sys.stderr)
        return BUG


def _trace(verbose: bool) -> None:
    if verbose:
        traceback.print_exc()


def at_least(kind: Callable[[str], int | float], low: int | float, strict: bool = False,
             high: int | float | None = None) -> Callable[[str], int | float]:
    """An argparse ``type`` that parses with ``kind`` and refuses values below ``low``
    (or equal to it when ``strict``) or above ``high``, so ``--timeout -3`` is a usage
    error, not a search that ends at once."""
    def parse(text: str) -> int | float:
        value = kind(text)
        if value != value or value in (math.inf, -math.inf):  # nan compares false with every bound
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
        if value < low or (strict and value == low):
            raise argparse.ArgumentTypeError(f"must be {'>' if strict else '>='} {low}, got {text}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be <= {high}, got {text}")
        return value
    parse.__name__ = kind.__name__  # argparse names the type in its 'invalid int value' message
    return parse


def refuse_overwrite(writes: dict[str, str | None], reads: dict[str, str | None]) -> None:
    """An ActgenError when a file the command writes ({"-o": path}) is one it reads
    ({"the kernel": path}) or another it writes: nothing the user wrote is overwritten."""
    seen: dict[str, str] = {}
    for role, path in reads.items():
        if path is not None and path != "-":  # standard input
            seen.setdefault(_identity(path), f"{role} {path}")
    for opt, path in writes.items():
        if path is None or path == "-":  # standard output
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
