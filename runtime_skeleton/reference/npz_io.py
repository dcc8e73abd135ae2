"""Kernel inputs and outputs as .npz files: inputs ``arg0, arg1, ...`` in parameter
order, outputs ``out0, out1, ...``. npz has no bf16, so bf16/f16 arrays are written
as float32 (which holds them exactly) and read back from any float dtype with
round-to-nearest-even."""
from __future__ import annotations

import re
import zipfile
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import EvalError
from ..ir.types import TensorType, Type
from .interpreter import check_argument, check_shape

_ARG = re.compile(r"arg(\d+)$")


def _tensor_types(param_types: Sequence[Type]) -> list[TensorType]:
    for i, t in enumerate(param_types):
        if not isinstance(t, TensorType):
            raise EvalError(f"parameter {i} has tuple type {t}; npz inputs must be arrays")
    return list(param_types)  # type: ignore[arg-type]


def load_inputs(path: str, param_types: Sequence[Type], names: Sequence[str] | None = None) -> list[np.ndarray]:
    """Read ``arg0..argN-1`` (or ``names``, a program's inputs as it declares them)
    from ``path``, checked against and converted to the parameter types. Keys not
    named ``argK`` (e.g. outputs saved beside the inputs) are ignored, so an output
    file of ``--random`` is a valid input file."""
    types = _tensor_types(param_types)
    by_program = names is not None  # a program's .input names, not a kernel's argK
    names = list(names) if names is not None else [f"arg{i}" for i in range(len(types))]
    if not zipfile.is_zipfile(path):  # a .npy, or anything else numpy would read or pickle
        open(path, "rb").close()  # a missing file or a directory is said as such
        raise EvalError(f"{path}: not an .npz archive (numpy.savez(path, arg0=..., arg1=...) writes one; "
                        "a .npy file holds a single array)")
    try:
        shapes = _shapes(path)
        extra = sorted(k for k in shapes if _ARG.match(k) and k not in names)
        if extra and by_program:  # the program's declarations are what is short
            raise EvalError(f"{path}: has input '{extra[0]}', which the program declares no '.input' for "
                            f"(its inputs: {', '.join(names) or 'none'})")
        if extra:
            raise EvalError(f"{path}: unexpected input '{extra[0]}' (the kernel has {len(types)} parameters)")
        inputs = []
        with np.load(path, allow_pickle=False) as npz:
            for i, (t, name) in enumerate(zip(types, names)):
                if name not in shapes:
                    raise EvalError(f"{path}: missing input '{name}' for parameter {i} "
                                    f"({t.dtype}[{','.join(map(str, t.shape))}])")
                check_shape(shapes[name], t, f"{path}: input '{name}'")  # before reading: a header may claim 10^11
                inputs.append(check_argument(npz[name], t, f"{path}: input '{name}'"))
    # zipfile says an encrypted member or an unknown compression with RuntimeError and
    # NotImplementedError
    except (zipfile.BadZipFile, ValueError, EOFError, OSError, RuntimeError, NotImplementedError) as err:
        if isinstance(err, (FileNotFoundError, IsADirectoryError, PermissionError)):
            raise
        raise EvalError(f"{path}: not a readable .npz file ({type(err).__name__})") from None
    return inputs


def _shapes(path: str) -> dict[str, tuple[int, ...]]:
    """The shape of each array in an .npz archive, from the .npy headers alone."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for member in z.namelist():
            if member.endswith(".npy"):
                with z.open(member) as f:
                    major, _ = np.lib.format.read_magic(f)
                    read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
                    shape, _, _ = read(f)
                out[member[: -len(".npy")]] = tuple(shape)
    return out


def storable(arr: np.ndarray) -> np.ndarray:
    """The array as npz can hold it: bf16/f16 widened (exactly) to float32."""
    arr = np.asarray(arr)
    if arr.dtype.kind not in "biuf" or (arr.dtype.kind == "f" and arr.dtype.itemsize < 4):
        return arr.astype(np.float32)
    return arr


def save_arrays(path: str, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` to exactly ``path`` (np.savez would append '.npz')."""
    with open(path, "wb") as f:
        np.savez(f, **{k: storable(v) for k, v in arrays.items()})


def integer_inputs(param_types: Sequence[Type], seed: int, limit: int = 2) -> list[np.ndarray]:
    """Deterministic random inputs whose floats are small integers (in [-limit, limit]):
    sums and products of them are exact while they stay within the type's integers, in any
    order. Integer and pred inputs as ``random_inputs``."""
    rng = np.random.default_rng(seed)
    out = random_inputs(param_types, seed)
    for k, t in enumerate(_tensor_types(param_types)):
        if t.dtype.is_float:
            out[k] = rng.integers(-limit, limit, size=t.shape, endpoint=True).astype(t.dtype.np)
    return out


def random_inputs(param_types: Sequence[Type], seed: int) -> list[np.ndarray]:
    """Deterministic random inputs: floats ~ N(0, 1); signed ints in [-10, 10] and
    unsigned in [0, 20] (small, so products and short sums do not overflow); pred
    uniform."""
    rng = np.random.default_rng(seed)
    out = []
    for t in _tensor_types(param_types):
        dt = t.dtype
        if dt.is_pred:
            a = rng.random(t.shape) < 0.5
        elif dt.is_int:
            lo, hi = (-10, 10) if dt.is_signed else (0, 20)
            a = rng.integers(lo, hi, size=t.shape, endpoint=True)
        else:
            a = rng.standard_normal(t.shape)
            if dt.bits < 64:
                a = a.astype(np.float32)
        out.append(np.asarray(a).astype(dt.np))
    return out
