"""What reaches the compiler in ``fadsl sim``'s build, and the key that names it.

A build is reused exactly when the compiler would see the same input: the project's
C++ sources and headers and its CMake files (they set the flags), the CPU runtime's
headers, the optimisation level, and the identity of the C++ compiler and of cmake.
The rest of the generated project (README, resource report, ``gen_data.py`` with the
default shape, the ``.fir``) never reaches the compiler, so a new shape whose C++ is
the same reuses the build: shapes are read at run time from ``input/shape.txt``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess

from fadsl.errors import BackendError, UsageError

KEY_FORMAT = b"sim cache entry, format 3\0"
"""Part of every key: entries of an older layout are never looked up."""

_COMPILED_SUFFIXES = (".cpp", ".cc", ".cxx", ".h", ".hpp", ".inc", ".cmake")


def compiled_files(files: dict[str, bytes]) -> dict[str, bytes]:
    """The project files a build reads: C++ sources and headers, CMake files."""
    return {
        rel: data
        for rel, data in files.items()
        if rel.endswith(_COMPILED_SUFFIXES)
        or rel.rsplit("/", 1)[-1] == "CMakeLists.txt"
    }


def runtime_digest() -> str:
    """SHA-256 of the CPU runtime's headers: every path under the include folder and
    its bytes."""
    from fadsl.runtime import include_dir

    root = include_dir()
    h = hashlib.sha256()
    for dirpath, dirnames, names in os.walk(root):
        dirnames.sort()
        for n in sorted(names):
            path = os.path.join(dirpath, n)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            with open(path, "rb") as f:
                data = f.read()
            h.update(f"{rel}\0{len(data)}\0".encode() + data)
    return h.hexdigest()


def build_key(compiled: dict[str, bytes]) -> str:
    """The cache key of a build of ``compiled`` (see the module docstring)."""
    h = hashlib.sha256(KEY_FORMAT)
    for rel in sorted(compiled):
        data = compiled[rel]
        h.update(f"{rel}\0{len(data)}\0".encode() + data)
    h.update(runtime_digest().encode() + b"\0")
    h.update(identity().encode() + b"\0")
    h.update(optimization().encode())
    return h.hexdigest()


# ----------------------------------------------------------------------------
# Compiler, cmake, flags
# ----------------------------------------------------------------------------


OPT_LEVELS = ("-O0", "-O1", "-O2", "-O3", "-Os")


DEFAULT_OPT = "-O1"
"""sim's default level. fa2's two translation units compile at -O1 in about two-thirds
of the CPU time of -O3 (13 s instead of 20 s, measured 2026-12-04) and run about 1.5x
longer (B=1 N=8 Sq=Skv=2048 D=128: 12.6 s of CPU instead of 8.1); sim's default shape
runs for about a second, so the build dominates."""


def optimization() -> str:
    """The C++ optimisation level of the build: $FADSL_SIM_OPT, else -O1 (DEFAULT_OPT).
    -O3 pays off for runs of more than about a minute."""
    opt = os.environ.get("FADSL_SIM_OPT", "").strip() or DEFAULT_OPT
    if opt not in OPT_LEVELS:
        raise UsageError(
            f"FADSL_SIM_OPT={opt!r} is not an optimisation level",
            None,
            hint=f"use one of {', '.join(OPT_LEVELS)}, or unset it for {DEFAULT_OPT}",
        )
    return opt


def compiler() -> str:
    """The C++ compiler the build uses ($CXX, else g++, else c++), as a full path;
    it is passed to cmake, so the key names the compiler that runs."""
    cxx = os.environ.get("CXX") or "g++"
    found = shutil.which(cxx) or (
        shutil.which("c++") if "CXX" not in os.environ else None
    )
    if not found:
        raise BackendError(
            "fadsl sim needs a C++17 compiler (g++) and cmake",
            notes=(
                (f"$CXX names {cxx!r}, which is not a program",)
                if "CXX" in os.environ
                else ()
            ),
            hint="apt-get install g++ cmake",
        )
    return os.path.abspath(found)


def compiler_version() -> str:
    """The compiler's first ``--version`` line (recorded in sim's meta.json)."""
    return _probe(compiler())[0]


def identity() -> str:
    """The compiler and cmake the build runs: their real paths, sizes, mtimes and
    ``--version`` texts (an upgraded compiler gives a new key)."""
    return "\n".join(_probe(p)[1] for p in (compiler(), shutil.which("cmake") or ""))


def _probe(program: str) -> tuple[str, str]:
    """``program``'s first ``--version`` line and its identity text."""
    if not program:
        return "(none)", "(none)"
    real = os.path.realpath(program)
    try:
        st = os.stat(real)
    except OSError:
        return program, f"{program} (missing)"
    return _probe_cached(real, st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _probe_cached(path: str, size: int, mtime_ns: int) -> tuple[str, str]:
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    first = out.splitlines()[0] if out.strip() else os.path.basename(path)
    return first, f"{path} {size} {mtime_ns}\n{out}"
