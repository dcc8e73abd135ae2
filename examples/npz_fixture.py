"""Reproducible .npz writing for the kernel fixtures (examples/export_jax.py, examples/act_kernels.py)."""
from __future__ import annotations

import io
import pathlib
import zipfile

import numpy as np


def write_npz(path: pathlib.Path, arrays: dict[str, np.ndarray]) -> None:
    """Like ``np.savez`` (uncompressed, readable by ``np.load``) but reproducible.

    ``np.savez`` stamps every member with the current time; here every member gets the zip
    epoch 1980-01-01 and mode 0644, and members are written in the given order.
    """
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for key, arr in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(arr), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            info.create_system = 3  # unix, independent of the host
            zf.writestr(info, member.getvalue())
    path.write_bytes(buf.getvalue())
