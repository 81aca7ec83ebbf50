"""Safe output folders: everything is written beside the target and renamed into place.

A command that fails or is interrupted midway leaves the previous output intact and
no temporary folder behind; nothing is written outside the chosen folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from fadsl.errors import UsageError


def check_output_dir(path: str, flag: str = "-o") -> str:
    """Refuse an output path that is an existing file; return its absolute path."""
    if not path:
        raise UsageError(f"{flag} needs a folder name")
    full = os.path.abspath(path)
    if os.path.exists(full) and not os.path.isdir(full):
        raise UsageError(
            f"{flag} {path}: a file of that name exists; outputs go into a folder",
            None, hint="choose a folder name, or remove the file")
    parent = os.path.dirname(full)
    if parent and not os.path.isdir(parent):
        os.makedirs(parent, exist_ok=True)
    return full


@contextmanager
def atomic_dir(path: str, flag: str = "-o") -> Iterator[str]:
    """Yield a fresh temporary folder; on success it replaces ``path`` in one rename."""
    target = check_output_dir(path, flag)
    parent, name = os.path.split(target)
    tmp = tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=parent)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _swap_into_place(tmp, target)


def _swap_into_place(tmp: str, target: str) -> None:
    if not os.path.exists(target):
        os.rename(tmp, target)
        return
    parent, name = os.path.split(target)
    old = tempfile.mkdtemp(prefix=f".{name}.old-", dir=parent)
    os.rmdir(old)
    os.rename(target, old)
    try:
        os.rename(tmp, target)
    except BaseException:
        os.rename(old, target)
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)


def write_if_different(path: str, data: bytes) -> bool:
    """Write ``data`` unless the file already holds exactly it; True if written."""
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return False
    except FileNotFoundError:
        pass
    with open(path, "wb") as f:
        f.write(data)
    return True
