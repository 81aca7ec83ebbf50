"""The CPU runtime compiled once into ``libfadsl_rt.a``, cached like the builds.

A sim build compiles the kernel and ``main.cpp`` against the runtime's *declared*
headers (rt_split.py: the runtime's multi-line non-template ``inline`` functions are
only declared there) and links ``libfadsl_rt.a``, which compiles their definitions
once. Two cache entries beside the builds hold them:

- ``rtsrc-<key>``: the ``declared/`` and ``defined/`` views of the runtime headers,
  keyed on the runtime headers' bytes;
- ``rtlib-<key>``: the library, keyed like the precompiled header (pch.py) on the
  runtime headers, the compiler's identity and the exact flags of the kernel's
  compile command (the capacities the runtime enforces are ``-D`` flags, so each
  target and optimisation level has its own library).

Each entry is checked before use and made in a temporary folder renamed into place
(cache.py). A build whose library is missing compiles it while the kernel compiles
(``Maker``), so a cold build costs about the longer of the two, not their sum.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess

from fadsl.backends.sim import cache as sim_cache
from fadsl.backends.sim import rt_split, toolchain
from fadsl.errors import InternalError

LIBRARY = "libfadsl_rt.a"
FOLDER = "fadsl_rt"
"""Folder in a build's ``build/`` where the library is linked (see ``link``)."""
_MAIN_HEADER = "declared/tikicpulib.h"
_SOURCE = '// fadsl sim: the CPU runtime\'s out-of-line definitions\n#include "tikicpulib.h"\n'


def views(root: str) -> tuple[str, str]:
    """The cached declared and defined header folders (made when missing)."""
    from fadsl.runtime import include_dir

    digest = toolchain.runtime_digest()
    folder = os.path.join(root, f"rtsrc-{digest[:24]}")
    if not os.path.exists(folder):
        tmp = sim_cache.start(root, "rtsrc")
        try:
            rt_split.write_views(
                include_dir(),
                os.path.join(tmp, "declared"),
                os.path.join(tmp, "defined"),
            )
            files = _listing(tmp)
            sim_cache.seal(tmp, files, _MAIN_HEADER)
            sim_cache.install(tmp, folder, files, _MAIN_HEADER, executable=False)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    elif not sim_cache.usable(folder, _listing(folder), _MAIN_HEADER, executable=False):
        shutil.rmtree(folder, ignore_errors=True)
        return views(root)
    return os.path.join(folder, "declared"), os.path.join(folder, "defined")


def _listing(folder: str) -> dict[str, bytes]:
    """The header files under ``folder``'s two views, by ``/``-separated path."""
    out: dict[str, bytes] = {}
    for view in ("declared", "defined"):
        base = os.path.join(folder, view)
        for dirpath, _, names in os.walk(base):
            for name in names:
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, folder).replace(os.sep, "/")
                with open(path, "rb") as f:
                    out[rel] = f.read()
    return out


def entry_name(flags: list[str]) -> str:
    """The cache entry of the library compiled with ``flags``."""
    h = hashlib.sha256(b"sim prebuilt runtime library, format 1\0")
    h.update(_SOURCE.encode() + b"\0")
    h.update(toolchain.runtime_digest().encode() + b"\0")
    h.update(toolchain.identity().encode() + b"\0")
    h.update("\0".join(flags).encode())
    return f"rtlib-{h.hexdigest()[:24]}"


def _files(flags: list[str]) -> dict[str, bytes]:
    return {
        "fadsl_rt.cpp": _SOURCE.encode(),
        "flags.txt": shlex.join(flags).encode() + b"\n",
    }


def cached(root: str, flags: list[str]) -> str | None:
    """The sound cached library for ``flags``, or None (missing or damaged)."""
    folder = os.path.join(root, entry_name(flags))
    if sim_cache.usable(folder, _files(flags), LIBRARY, executable=False):
        return os.path.join(folder, LIBRARY)
    return None


def library_path(build_folder: str) -> str:
    """Where a build links the library from (``link`` puts it there)."""
    return os.path.join(build_folder, FOLDER, LIBRARY)


def link(library: str, build_folder: str) -> None:
    """Put the cached ``library`` where the build links it (a symbolic link)."""
    os.makedirs(os.path.join(build_folder, FOLDER), exist_ok=True)
    os.symlink(library, library_path(build_folder))


class Maker:
    """Compiles the library for ``flags`` from the ``defined`` headers in a temporary
    entry, started at once; ``finish`` waits, installs it and returns its path."""

    def __init__(self, root: str, flags: list[str], defined: str) -> None:
        self.root = root
        self.flags = flags
        self.tmp = sim_cache.start(root, "rtlib")
        for rel, data in _files(flags).items():
            with open(os.path.join(self.tmp, rel), "wb") as f:
                f.write(data)
        src = os.path.join(self.tmp, "fadsl_rt.cpp")
        obj = os.path.join(self.tmp, "fadsl_rt.o")
        cmd = [toolchain.compiler(), *flags, f"-I{defined}", "-o", obj, "-c", src]
        self.obj = obj
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )

    def finish(self) -> str:
        """Wait for the compiler, archive the object, install the entry."""
        try:
            out, _ = self.proc.communicate()
            if self.proc.returncode != 0:
                tail = "\n".join(out.strip().splitlines()[-30:])
                raise InternalError(
                    "compiling fadsl's CPU runtime library with the kernel's flags "
                    f"failed (the runtime must compile with them):\n{tail}"
                )
            library = os.path.join(self.tmp, LIBRARY)
            subprocess.run(["ar", "rcs", library, self.obj], check=True)
            os.remove(self.obj)
            files = _files(self.flags)
            sim_cache.seal(self.tmp, files, LIBRARY)
            folder = os.path.join(self.root, entry_name(self.flags))
            sim_cache.install(self.tmp, folder, files, LIBRARY, executable=False)
            return os.path.join(folder, LIBRARY)
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def abandon(self) -> None:
        """Stop the compiler and remove the temporary entry (the build failed)."""
        self.proc.kill()
        self.proc.communicate()
        shutil.rmtree(self.tmp, ignore_errors=True)
