"""Checks of a kernel's inputs before any work: the ones that would otherwise give
wrong numbers with exit 0.

- A run folder's meta.json records each file's dtype and shape: ``--inputs`` refuses
  files recorded with another dtype or shape than the kernel takes (a bf16 run read
  as fp16 is garbage of the right size). Files without a record are read raw, checked
  by size only.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from fadsl.errors import UsageError
from fadsl.ir.nodes import Param

_CLI_NAMES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


def check_recorded(
    folder: str,
    meta: dict[str, Any] | None,
    p: Param,
    dtype: np.dtype,
    shape: tuple[int, ...],
) -> None:
    """Refuse ``p``'s file when the folder's meta.json records another dtype or shape."""
    entry = (meta or {}).get("params", {}).get(p.name)
    if entry is None:
        return
    path = os.path.join(folder, "meta.json")
    recorded = entry["dtype"]
    if recorded != dtype.name:
        cli = _CLI_NAMES.get(recorded)
        raise UsageError(
            f"input `{p.name}`: {path} records {p.name}.bin as {recorded}, but this "
            f"kernel reads `{p.name}` as {dtype.name}",
            p.loc,
            notes=(
                f"read as {dtype.name}, the {recorded} bits would give other numbers",
            ),
            hint=(
                f"run the kernel in the data's dtype with --dtype {cli}, or "
                if cli is not None
                else ""
            )
            + f"give inputs written as {dtype.name}",
        )
    got = entry.get("shape")
    if got is not None and tuple(got) != shape:
        raise UsageError(
            f"input `{p.name}`: {path} records {p.name}.bin with the shape {list(got)}, "
            f"but at this --shape `{p.name}` is {list(shape)}",
            p.loc,
            notes=(_recorded_shape(meta),) if _recorded_shape(meta) else (),
            hint="give the --shape of the run that wrote the folder",
        )


def _recorded_shape(meta: dict[str, Any] | None) -> str:
    shape = (meta or {}).get("shape")
    if not isinstance(shape, dict) or not shape:
        return ""
    return "the folder was written with --shape " + ",".join(
        f"{k}={v}" for k, v in shape.items()
    )
