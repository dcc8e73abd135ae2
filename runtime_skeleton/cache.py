"""Where actgen keeps what it can compute again: ``$ACTGEN_CACHE``, else
``$XDG_CACHE_HOME/actgen``, else ``~/.cache/actgen`` (the fuzzer's capability probes,
built native programs)."""
from __future__ import annotations

import os
import pathlib


def cache_root() -> pathlib.Path:
    return pathlib.Path(os.environ.get("ACTGEN_CACHE") or
                        pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "actgen")
