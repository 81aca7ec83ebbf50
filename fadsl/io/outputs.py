"""Safe output folders: everything is written beside the target and renamed into place.

A command that fails or is interrupted midway leaves the previous output intact and
no temporary folder behind; nothing is written outside the chosen folder (missing
parent folders are created, and removed again if the command fails).

Because a command replaces its output folder as a whole, ``-o`` may only name a new
folder, an empty one, or an unchanged earlier fadsl output: a folder whose
``fadsl-manifest.json`` (written last, see fadsl/io/manifest.py) lists every file in it
with the file's SHA-256 as fadsl wrote it. A folder with anything else in it (a file
the user added or edited, other outputs side by side) is refused with a list of what
is there, never deleted; so are a file, a symbolic link, the root, and the current
folder or one of its ancestors.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from fadsl.io import manifest
from fadsl.errors import UsageError

SHOWN = 5
"""How many unexpected files a refusal names."""


def check_output_dir(path: str, flag: str = "-o") -> str:
    """Refuse an output path fadsl must not replace (see the module docstring).

    Returns the absolute path. Creates nothing.
    """
    if not path or not path.strip():
        raise UsageError(f"{flag} needs a folder name", hint="e.g. -o out/fa2")
    full = os.path.abspath(path)
    _refuse_special(full, path, flag)
    if os.path.isdir(full):
        _refuse_foreign(full, path, flag)
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
            code="output_is_a_file",
        )
    here = os.path.realpath(os.getcwd())
    real = os.path.realpath(full)
    if real == os.path.dirname(real) or here == real or here.startswith(real + os.sep):
        raise UsageError(
            f"{flag} {path} would replace the current folder or one that contains it",
            hint="name a folder of its own, e.g. -o out/run1",
            code="output_is_current_folder",
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


def _refuse_foreign(full: str, path: str, flag: str) -> None:
    notes = foreign(full)
    if notes:
        raise UsageError(
            f"{flag} {path}: the folder exists and is not an unchanged earlier fadsl "
            "output, so fadsl will not replace it",
            notes=notes,
            hint="fadsl replaces its output folder as a whole: choose another "
            f"{flag} (a new folder), or move away what you want to keep and remove "
            "the folder yourself",
            code="output_not_replaceable",
        )


def foreign(folder: str) -> list[str]:
    """Why fadsl may not replace ``folder``, as notes; [] when it may: the folder is
    empty, or every file in it is one its manifest lists, unchanged (files fadsl
    wrote and the user since removed do not matter)."""
    try:
        entries = sorted(os.listdir(folder))
    except OSError as exc:
        return [f"it cannot be listed: {exc.strerror or exc}"]
    if not entries:
        return []
    files = manifest.read(folder)
    if files is None:
        shown = [
            e + "/" if os.path.isdir(os.path.join(folder, e)) else e for e in entries
        ]
        return [
            f"it has no {manifest.NAME}, so it is not a fadsl output (or one written "
            f"before fadsl kept manifests); it holds {_some(shown)}"
        ]
    diff = manifest.compare(folder, files)
    notes = []
    if diff.extra:
        notes.append(f"not written by fadsl: {_some(diff.extra)}")
    if diff.edited:
        notes.append(f"changed since fadsl wrote them: {_some(diff.edited)}")
    return notes


def _some(names: list[str]) -> str:
    more = len(names) - SHOWN
    return ", ".join(names[:SHOWN]) + (f" and {more} more" if more > 0 else "")


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
        manifest.write(tmp)
        _swap_into_place(tmp, target, path, flag)
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


def _swap_into_place(tmp: str, target: str, path: str, flag: str) -> None:
    if not os.path.exists(target):
        os.rename(tmp, target)
        return
    parent, name = os.path.split(target)
    old = tempfile.mkdtemp(prefix=f".{name}.old-", dir=parent)
    os.rmdir(old)
    os.rename(target, old)
    try:  # checked again now that no one can add to it unseen
        _refuse_foreign(old, path, flag)
    except UsageError:
        os.rename(old, target)
        raise
    try:
        os.rename(tmp, target)
    except BaseException:
        os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def seal(folder: str) -> None:
    """Write the manifest of everything in ``folder`` (atomic_dir does this for the
    folder it yields; call it for a sub-folder that is an output of its own)."""
    manifest.write(folder)


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


def write_files(files: dict[str, bytes], folder: str) -> None:
    """Write ``files`` (relative path -> bytes) under ``folder``; ``.sh`` files get
    the execute bits."""
    import stat

    for rel, data in sorted(files.items()):
        path = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        if rel.endswith(".sh"):
            mode = os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
            os.chmod(path, mode)


def write_folder(files: dict[str, bytes], out: str) -> None:
    """Write every file into a fresh folder beside ``out`` and swap it into place."""
    with atomic_dir(out) as tmp:
        write_files(files, tmp)
