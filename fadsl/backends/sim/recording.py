"""Asking the CPU runtime for its executed-instruction record (``FADSL_RECORD``,
fadsl/runtime/cpu/README.md): ``fadsl sim --profile`` and ``fd.sim(..., profile=...)``
run the kernel inside ``recording()`` and read the rows it wrote."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fadsl.errors import InternalError

RECORD_ENV = "FADSL_RECORD"


@contextmanager
def recording() -> Iterator[str]:
    """A fresh record path, named by ``FADSL_RECORD`` while the block runs."""
    folder = tempfile.mkdtemp(prefix="fadsl-record-")
    path = os.path.join(folder, "record.tsv")
    old = os.environ.get(RECORD_ENV)
    os.environ[RECORD_ENV] = path
    try:
        yield path
    finally:
        if old is None:
            os.environ.pop(RECORD_ENV, None)
        else:
            os.environ[RECORD_ENV] = old
        shutil.rmtree(folder, ignore_errors=True)


def record_rows(path: str) -> list[Any]:
    """The rows the run wrote (fadsl/backends/sim/record.py parses them)."""
    from fadsl.backends.sim.record import read_record

    if not os.path.exists(path):  # the runtime writes it whenever FADSL_RECORD is set
        raise InternalError(
            f"the CPU runtime wrote no executed-instruction record at {path}"
        )
    rec = read_record(path)
    return list(getattr(rec, "rows", rec))
