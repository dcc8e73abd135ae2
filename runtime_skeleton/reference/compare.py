"""Comparing a program's outputs with the reference interpreter's.

Integers and pred must match exactly. Floats may differ by rounding: a compiled
program may accumulate in a different order (tiling splits a sum) and the
hardware's semantics may round at other points than the kernel does, so each
element may deviate by ``rtol`` relative to itself plus ``rtol`` relative to the
largest magnitude in the tensor (a sum's rounding error scales with its terms,
not with a result that cancelled to near zero), plus, given ``bounds`` (``magnitudes``:
how large the values summed on the way to each element get, which a chain of sums
that cancels makes far larger than any output), ``rtol`` relative to that bound.
``rtol`` is a few units in the last place of the type. NaN must be NaN at the same
place; infinities equal.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# A few ulps of each float type: 2^-(mantissa bits - 2).
RTOL = {"bfloat16": 2.0**-6, "float16": 2.0**-8, "float32": 2.0**-18, "float64": 2.0**-46}


def compare_outputs(got: Sequence[np.ndarray], want: Sequence[np.ndarray],
                    bounds: Sequence[np.ndarray | None] | None = None, exact: bool = False) -> list[str]:
    """Human-readable problems; empty when the outputs match. ``bounds``: per output, the
    magnitude bound of each element (``magnitudes.magnitudes``) or None. ``exact``: floats
    too must be equal (NaN where NaN is)."""
    if len(got) != len(want):
        return [f"{len(got)} outputs, expected {len(want)}"]
    problems = []
    for i, (g, w) in enumerate(zip(got, want)):
        msg = compare_array(np.asarray(g), np.asarray(w), None if bounds is None else bounds[i], exact)
        if msg:
            problems.append(f"out{i}: {msg}")
    return problems


def compare_array(got: np.ndarray, want: np.ndarray, bound: np.ndarray | None = None,
                  exact: bool = False) -> str | None:
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if want.dtype.kind not in "f" and want.dtype.name not in RTOL:
        bad = np.argwhere(got != want)
        if len(bad):
            idx = tuple(bad[0])
            return f"{len(bad)} element(s) differ; first at {list(idx)}: {got[idx]} != {want[idx]}"
        return None
    g, w = got.astype(np.float64), want.astype(np.float64)
    rtol = 0.0 if exact else RTOL[want.dtype.name]
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    if (nan_g != nan_w).any():
        idx = tuple(np.argwhere(nan_g != nan_w)[0])
        return f"NaN mismatch at {list(idx)}: {got[idx]} vs {want[idx]}"
    finite = np.isfinite(w) & np.isfinite(g)
    if (g[~finite & ~nan_w] != w[~finite & ~nan_w]).any():
        return "infinities differ"
    scale = np.abs(w[finite]).max(initial=0.0)
    err = np.abs(g - w)
    allowed = np.abs(w) + scale
    if bound is not None and bound.shape == w.shape:
        b = np.abs(bound.astype(np.float64))
        allowed = allowed + np.where(np.isfinite(b), b, 0.0)
    bad = finite & (err > rtol * allowed)
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        return (f"{int(bad.sum())} element(s) beyond tolerance (rtol {rtol:g}); first at {list(idx)}: "
                f"{got[idx]} vs {want[idx]}, max error {err[finite].max():g}")
    return None
