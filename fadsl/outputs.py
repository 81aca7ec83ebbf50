"""Safe output folders: everything is written beside the target and renamed into place.

A command that fails or is interrupted midway leaves the previous output intact and
no temporary folder behind; nothing is written outside the chosen folder (missing
parent folders are created, and removed again if the command fails).

Because a command replaces its output folder as a whole, ``-o`` may only name a new
folder, an empty one, or an earlier fadsl output (a folder with fadsl's ``meta.json``
or ``resources.json``, or one holding only such folders); never a file, a symbolic
link, the root, or the current folder or one of its ancestors.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from fadsl.errors import UsageError

MARKERS = ("meta.json", "resources.json")
"""Files that mark a folder as written by fadsl (run/sim, compile); both name a kernel."""


def check_output_dir(path: str, flag: str = "-o") -> str:
    """Refuse an output path fadsl must not replace (see the module docstring).

    Returns the absolute path. Creates nothing.
    """
    if not path or not path.strip():
        raise UsageError(f"{flag} needs a folder name", hint="e.g. -o out/fa2")
    full = os.path.abspath(path)
    _refuse_special(full, path, flag)
    if os.path.isdir(full) and not _replaceable(full):
        raise UsageError(
            f"{flag} {path}: the folder exists and holds files fadsl did not write",
            hint="fadsl replaces its output folder as a whole; choose a new folder, "
            "or empty this one",
        )
    _refuse_file_in_path(os.path.dirname(full), path, flag)
    return full


def _refuse_special(full: str, path: str, flag: str) -> None:
    if os.path.islink(full):
        raise UsageError(
            f"{flag} {path} is a symbolic link",
            hint="give the folder it points to, or a new folder name",
        )
    if os.path.exists(full) and not os.path.isdir(full):
        raise UsageError(
            f"{flag} {path}: a file of that name exists; outputs go into a folder",
            hint="choose a folder name, or remove the file",
        )
    here = os.path.realpath(os.getcwd())
    real = os.path.realpath(full)
    if real == os.path.dirname(real) or here == real or here.startswith(real + os.sep):
        raise UsageError(
            f"{flag} {path} would replace the current folder or one that contains it",
            hint="name a folder of its own, e.g. -o out/run1",
        )


def _refuse_file_in_path(parent: str, path: str, flag: str) -> None:
    probe = parent
    while probe and not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if probe and not os.path.isdir(probe):
        raise UsageError(
            f"{flag} {path}: {probe} is a file, not a folder",
            hint="choose an output path whose parents are folders",
        )


def _replaceable(folder: str) -> bool:
    """True for an empty folder or one fadsl wrote (see MARKERS)."""
    entries = os.listdir(folder)
    if not entries:
        return True
    if any(_names_a_kernel(os.path.join(folder, m)) for m in MARKERS):
        return True
    subdirs = [os.path.join(folder, e) for e in entries]
    return all(
        os.path.isdir(d) and not os.path.islink(d) and _replaceable(d) for d in subdirs
    )


def _names_a_kernel(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("kernel"), str)


@contextmanager
def atomic_dir(path: str, flag: str = "-o") -> Iterator[str]:
    """Yield a fresh temporary folder; on success it replaces ``path`` in one rename."""
    target = check_output_dir(path, flag)
    parent, name = os.path.split(target)
    made = _make_parents(parent, path, flag)
    try:
        tmp = tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=parent)
        os.chmod(
            tmp, 0o777 & ~_umask()
        )  # mkdtemp makes 0700; outputs get the usual mode
    except OSError as exc:
        _remove_made(made)
        raise _cannot_write(path, flag, parent, exc) from None
    try:
        yield tmp
        _swap_into_place(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_made(made)
        raise _cannot_write(path, flag, parent, exc) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_made(made)
        raise


def _make_parents(parent: str, path: str, flag: str) -> list[str]:
    """Create the missing parent folders; return them, outermost first."""
    missing = []
    probe = parent
    while probe and not os.path.isdir(probe):
        missing.append(probe)
        probe = os.path.dirname(probe)
    missing.reverse()
    try:
        for folder in missing:
            os.mkdir(folder)
    except OSError as exc:
        _remove_made(missing)
        raise _cannot_write(path, flag, os.path.dirname(folder), exc) from None
    return missing


def _remove_made(made: list[str]) -> None:
    for folder in reversed(made):
        try:
            os.rmdir(folder)
        except OSError:
            return


def _cannot_write(path: str, flag: str, where: str, exc: OSError) -> UsageError:
    return UsageError(
        f"{flag} {path}: cannot write in {where}: {exc.strerror or exc}",
        hint="choose a folder you can write to",
    )


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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
