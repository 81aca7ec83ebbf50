"""``fadsl sim``'s build cache: one folder per build, checked before it is used.

An entry is named by the SHA-256 of everything that reaches the compiler
(toolchain.build_key) and holds the project files the build reads, its ``build/``
folder and a ``fadsl-manifest.json`` listing the SHA-256 of each of those files and
of the built program (or, for the precompiled runtime header, of the ``.gch``). Before an entry
is used, its manifest must list exactly this project and every listed file must be
unchanged and the program executable; otherwise a note says why and the entry is
rebuilt. A build happens in ``.tmp-<host>-<pid>-...`` beside the entries and is renamed
into place only when complete, so a killed build never leaves a partial entry; the
temporary folders of builds whose process is gone are removed by the next build.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import socket
import tempfile

from fadsl.io import manifest
from fadsl.io.cache import note_damaged

_LEFTOVER = re.compile(r"^\.(?:tmp|old)-(?P<host>\w+)-(?P<pid>\d+)-")


def problem(
    folder: str, files: dict[str, bytes], program: str, executable: bool = True
) -> str | None:
    """Why the entry ``folder`` may not be used for ``files`` (None: it may).
    ``program`` is the built file's path relative to the entry (a program unless
    ``executable`` is False)."""
    listed = manifest.read(folder)
    if listed is None:
        return f"it has no readable {manifest.NAME}"
    for rel, data in files.items():
        if listed.get(rel) != hashlib.sha256(data).hexdigest():
            return f"its manifest does not list this project's {rel}"
    if program not in listed:
        return "its manifest does not list the built program"
    diff = manifest.compare(folder, listed)
    changed = diff.edited + diff.missing
    if changed:
        return f"changed since it was built: {', '.join(changed[:5])}"
    if executable and not os.access(os.path.join(folder, program), os.X_OK):
        return "its program is not executable"
    return None


def usable(
    folder: str, files: dict[str, bytes], program: str, executable: bool = True
) -> bool:
    """True when the entry can be used; a note names a damaged one."""
    if not os.path.exists(folder):
        return False
    why = problem(folder, files, program, executable)
    if why is not None:
        note_damaged(folder, why)
    return why is None


def start(root: str, name: str) -> str:
    """A fresh temporary build folder in ``root``, after removing dead builds' ones."""
    remove_dead_builds(root)
    return tempfile.mkdtemp(prefix=f".tmp-{_host()}-{os.getpid()}-{name}-", dir=root)


def seal(tmp: str, files: dict[str, bytes], program: str) -> None:
    """Write the manifest of a finished build: the project files and the program."""
    listed = {rel: hashlib.sha256(data).hexdigest() for rel, data in files.items()}
    listed[program] = manifest.file_digest(os.path.join(tmp, program))
    manifest.write(tmp, listed)


def install(
    tmp: str,
    folder: str,
    files: dict[str, bytes],
    program: str,
    executable: bool = True,
) -> None:
    """Rename the sealed build ``tmp`` to ``folder``; a damaged entry there is moved
    aside and removed, a sound one (another process's build) is kept."""
    for _ in range(3):
        try:
            os.rename(tmp, folder)
            return
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
        if problem(folder, files, program, executable) is None:
            shutil.rmtree(tmp, ignore_errors=True)
            return
        old = tempfile.mkdtemp(
            prefix=f".old-{_host()}-{os.getpid()}-", dir=os.path.dirname(folder)
        )
        os.rmdir(old)
        try:
            os.rename(folder, old)
        except FileNotFoundError:
            continue
        shutil.rmtree(old, ignore_errors=True)
    os.rename(tmp, folder)


def remove_dead_builds(root: str) -> None:
    """Remove the temporary folders of builds on this host whose process is gone."""
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        m = _LEFTOVER.match(name)
        if m and m["host"] == _host() and not _alive(int(m["pid"])):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, another user's
    return True


def _host() -> str:
    return re.sub(r"\W", "_", socket.gethostname()) or "host"
