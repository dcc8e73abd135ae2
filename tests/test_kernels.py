"""The kernels of examples/kernels/*.hlo against the HLO parser and the reference interpreter.

For every kernel file: it parses, it round-trips through the printer, and the reference
interpreter reproduces the outputs stored next to it in <name>.npz (computed by JAX in
examples/export_jax.py, or by numpy in examples/act_kernels.py for the hand-written amx_k*):
integers and pred exactly, floats within the per-dtype tolerance explained at FLOAT_TOL below.

jax is not needed here: the fixtures are committed, regenerate them with
``python examples/export_jax.py`` and ``python examples/act_kernels.py``.
"""
from __future__ import annotations

import functools
import pathlib
import re

import numpy as np
import pytest

from runtime_skeleton.ir.dtypes import dtype as xla_dtype

KERNEL_DIR = pathlib.Path(__file__).resolve().parent.parent / "examples" / "kernels"
HLO_FILES = sorted(KERNEL_DIR.glob("*.hlo"))
IDS = [p.stem for p in HLO_FILES]

# The parser and the interpreter are imported inside the tests, not at module level, so that a
# problem in one of them shows up as failing tests here rather than as a collection error that
# stops the whole test run.


@functools.lru_cache(maxsize=None)
def _parsed(path: pathlib.Path):
    from runtime_skeleton.hlo import parse_module

    return parse_module(path.read_text(), str(path))


def _npz(path: pathlib.Path) -> dict[str, np.ndarray]:
    with np.load(path.with_suffix(".npz"), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _numbered(data: dict[str, np.ndarray], prefix: str) -> list[np.ndarray]:
    n = sum(1 for k in data if re.fullmatch(rf"{prefix}\d+", k))
    assert all(f"{prefix}{i}" in data for i in range(n)), f"{prefix}N keys not contiguous"
    return [data[f"{prefix}{i}"] for i in range(n)]


_TYPE = re.compile(r"\b(pred|[su](?:8|16|32|64)|bf16|f16|f32|f64)\[([0-9,]*)\]")


def _result_types(text: str) -> list[tuple[str, tuple[int, ...]]]:
    """Leaf (dtype, shape) of the entry result, read from the ``entry_computation_layout`` that
    JAX prints in the module header (independent of the parser under test)."""
    header = text.splitlines()[0]
    m = re.search(r"entry_computation_layout=\{\((.*)\)->(.*)\}\s*$", header)
    assert m, f"no entry_computation_layout in header: {header}"
    return [
        (dt, tuple(int(d) for d in dims.split(",") if d))
        for dt, dims in _TYPE.findall(m.group(2))
    ]


# ---------------------------------------------------------------------------------------------
# Float tolerances.
#
# An element passes when |got - want| <= atol * scale + rtol * |want|, compared in float64,
# where scale = max(1, max|want|) over that output.  Scaling atol by the output's magnitude
# makes it meaningful for values produced by cancellation in a sum (a GEMM entry near 0 whose
# terms are O(scale)): their absolute error is O(eps * scale), not O(eps * |value|).
#
# JAX (XLA:CPU) and the reference interpreter are two correct implementations of the same HLO
# that may differ in summation order (dot, convolution, reduce), in how they evaluate
# transcendental functions (XLA uses its own vectorised polynomial approximations), and, for
# bf16/f16, in whether an intermediate is kept in f32 inside a fusion. The tolerance must
# cover the sum of both implementations' errors.
#
# f32 (eps = 2^-23 ~ 1.2e-7): measured error of JAX's f32 outputs against an f64 evaluation of
#   the same functions is at most 2e-6 relative to scale, for every kernel here, including the
#   transcendental ones (softmax, attention, gelu, layernorm, exp/log/tanh/...).  The longest
#   f32 sums here have <= 144 terms (3x3x16 conv), whose reordering error is ~ sqrt(n)*eps ~
#   1.5e-6 of scale in practice.  rtol = atol = 1e-5 leaves a ~5x margin over both, while a real
#   semantic error (a wrong op, a wrong constant, an off-by-one window) is >= 1e-3.
# bf16 (8 significant bits: ulp = 2^-7 relative at worst, rounding error <= 2^-8): a couple of
#   ulps, rtol = atol = 2^-6.  JAX's own bf16 outputs are within 2^-7.6 of scale of the f64
#   result (mlp_bf16, attention_bf16_64, softmax_bf16); an interpreter that rounds every
#   intermediate to bf16 is within the same bound, so the two are within ~2 ulps of each other.
# f16 (11 significant bits: ulp 2^-10 relative at worst): likewise a couple of ulps,
#   rtol = atol = 2^-9 (JAX's gemm_f16 is within 2^-11 of the f64 result).
# Measured agreement of the reference interpreter with JAX when these tolerances were set:
#   f32 at most 6e-7 of scale (swiglu_f32; 3% of the bound), bf16 at most 3.6e-3 of scale
#   (attention_bf16_64: 4% of the elements differ by one ulp, 18% of the bound), the other
#   bf16 and f16 kernels bit-exact.
FLOAT_TOL: dict[str, tuple[float, float]] = {
    "f64": (1e-12, 1e-12),
    "f32": (1e-5, 1e-5),
    "bf16": (2.0**-6, 2.0**-6),
    "f16": (2.0**-9, 2.0**-9),
}

# Per-kernel overrides {name: {dtype: (rtol, atol)}}, each with its justification.
KERNEL_TOL: dict[str, dict[str, tuple[float, float]]] = {}


def _assert_close(name: str, idx: int, dt: str, got: np.ndarray, want: np.ndarray) -> None:
    rtol, atol = KERNEL_TOL.get(name, {}).get(dt, FLOAT_TOL[dt])
    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    assert np.array_equal(np.isnan(g), np.isnan(w)), f"{name} out{idx}: NaN positions differ"
    inf = np.isinf(w)
    assert np.array_equal(np.isinf(g), inf) and np.array_equal(g[inf], w[inf]), (
        f"{name} out{idx}: infinities differ"
    )
    fin = np.isfinite(w)
    g, w = g[fin], w[fin]
    if w.size == 0:
        return
    scale = max(1.0, float(np.abs(w).max()))
    err = np.abs(g - w)
    bound = atol * scale + rtol * np.abs(w)
    bad = err > bound
    if bad.any():
        i = int(np.argmax(err - bound))
        pytest.fail(
            f"{name} out{idx} ({dt}): {int(bad.sum())}/{w.size} elements outside "
            f"rtol={rtol:g} atol={atol:g}*{scale:g}; worst (flat index {i} of finite values): "
            f"got {g[i]!r}, want {w[i]!r}, |err|={err[i]:.3g}; max|err|={err.max():.3g}"
        )


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------


def test_enough_kernels():
    assert len(HLO_FILES) >= 25, f"only {len(HLO_FILES)} kernels in {KERNEL_DIR}"


def test_fixture_files_consistent():
    """Every .hlo has its .npz, and MANIFEST.txt lists exactly the exported kernels."""
    missing = [p.name for p in HLO_FILES if not p.with_suffix(".npz").exists()]
    assert not missing, f"kernels without .npz: {missing}"
    manifest = (KERNEL_DIR / "MANIFEST.txt").read_text().splitlines()
    names = sorted(line.split()[0] for line in manifest if line.strip())
    assert names == sorted(IDS)


@pytest.mark.parametrize("path", HLO_FILES, ids=IDS)
def test_parses(path):
    from runtime_skeleton.hlo import parse_file

    m = parse_file(path)
    assert m == _parsed(path)
    params = m.entry_computation.parameters
    data = _npz(path)
    assert len(params) == len(_numbered(data, "arg"))


@pytest.mark.parametrize("path", HLO_FILES, ids=IDS)
def test_round_trip(path):
    from runtime_skeleton.hlo import parse_module, print_module

    m = _parsed(path)
    text = print_module(m)
    m2 = parse_module(text, f"{path.name} (printed)")
    assert m2 == m
    assert print_module(m2) == text  # printing is a fixed point


@pytest.mark.parametrize("path", HLO_FILES, ids=IDS)
def test_reference_matches_jax(path):
    from runtime_skeleton.reference import evaluate

    name = path.stem
    m = _parsed(path)
    data = _npz(path)
    stored_args = _numbered(data, "arg")
    wants = _numbered(data, "out")
    params = m.entry_computation.parameters
    assert len(params) == len(stored_args)

    args = []
    for i, (p, a) in enumerate(zip(params, stored_args)):
        np_dt = p.type.dtype.np
        assert tuple(p.type.shape) == a.shape, f"arg{i}: parameter {p.type} vs stored {a.shape}"
        conv = a.astype(np_dt)
        # bf16/f16 inputs were stored as float32; the conversion back must be exact.
        assert np.array_equal(conv.astype(a.dtype), a), f"arg{i}: not exact in {p.type.dtype}"
        args.append(conv)

    got = evaluate(m, args)
    result_types = _result_types(path.read_text())
    assert len(got) == len(wants) == len(result_types)

    for i, (g, w, (dt, shape)) in enumerate(zip(got, wants, result_types)):
        g = np.asarray(g)
        xdt = xla_dtype(dt)
        assert g.shape == shape == w.shape, f"{name} out{i}: shape {g.shape}, want {shape}"
        assert g.dtype == xdt.np, f"{name} out{i}: dtype {g.dtype}, want {dt}"
        if xdt.is_float:
            _assert_close(name, i, dt, g, w)
        else:
            if not np.array_equal(g, w):
                bad = np.argwhere(g != w)
                j = tuple(bad[0])
                pytest.fail(
                    f"{name} out{i} ({dt}): {len(bad)}/{w.size} elements differ; first at "
                    f"{j}: got {g[j]!r}, want {w[j]!r}"
                )
