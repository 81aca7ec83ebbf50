"""A precompiled header of the CPU runtime, shared by every sim build with its flags.

Parsing the runtime's headers is about 1.5 s of CPU in each of a project's two
translation units (the kernel and ``main.cpp``). Every build is configured with
``-include <build>/fadsl_pch/fadsl_rt_pch.h`` (a header that includes
``tikicpulib.h``, hence the whole runtime, in the declared view the build compiles
against: prebuilt.py); when GCC finds a valid
``fadsl_rt_pch.h.gch`` beside it, it loads that instead of parsing. The ``.gch`` is a
cache entry ``pch-<key>`` beside the builds, keyed like them: the runtime headers'
bytes, the compiler's identity and the exact flags of the kernel's compile command
(defines, optimisation level, language standard; include folders do not enter a
precompiled header). Without a ``.gch`` (the first build with these flags, or a
compiler that rejects it, which ``-Winvalid-pch`` reports in the build log) GCC
parses the header's text: the program is the same, only the build is slower.

The first build with new flags starts a process of its own (``make_detached``) that
makes the ``.gch`` at low priority and installs it; the build neither waits for it
nor stops it (on a busy machine waiting cost that build 5-7 s), and later builds
link it into their build folder before compiling.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys

from fadsl.backends.sim import cache as sim_cache
from fadsl.backends.sim import toolchain

FOLDER = "fadsl_pch"
HEADER = "fadsl_rt_pch.h"
TEXT = (
    "// fadsl sim: the CPU runtime, included first in every translation unit\n"
    "// (-include); GCC loads fadsl_rt_pch.h.gch instead when it is valid.\n"
    '#include "tikicpulib.h"\n'
)
GCH = HEADER + ".gch"
_DROP_WITH_VALUE = ("-o", "-c", "-MT", "-MF", "-include", "-I", "-isystem", "-iquote")
"""Options (and their values) that do not enter the precompiled header."""


def include_flags(build_folder: str) -> str:
    """The compiler flags that make every translation unit include the runtime header
    first (precompiled when possible); writes that header into ``build_folder``.
    They go with the build type's flags: CMake's compiler check, which cannot find the
    runtime, compiles without them."""
    folder = os.path.join(build_folder, FOLDER)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, HEADER), "w", encoding="utf-8") as f:
        f.write(TEXT)
    header = os.path.join(folder, HEADER)
    return f"-include {header} -Winvalid-pch"


def pch_flags(compile_commands: str, source_suffix: str) -> list[str] | None:
    """The flags of the compile command of the source ending with ``source_suffix``
    in CMake's compile_commands.json, without the file names, dependency outputs and
    include folders; None when there is no such command."""
    try:
        with open(compile_commands, encoding="utf-8") as f:
            entries = json.load(f)
    except (OSError, ValueError):
        return None
    for entry in entries:
        if not str(entry.get("file", "")).endswith(source_suffix):
            continue
        args = entry.get("arguments") or shlex.split(entry.get("command", ""))
        return _strip(args[1:], str(entry["file"]))
    return None


def _strip(args: list[str], source: str) -> list[str]:
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in _DROP_WITH_VALUE:
            skip = True
        elif a == source or a in ("-MD", "-MMD") or a.startswith(("-I", "-isystem")):
            continue
        else:
            out.append(a)
    return out


def entry_name(flags: list[str]) -> str:
    """The cache entry of the precompiled header for ``flags``."""
    h = hashlib.sha256(
        b"sim precompiled runtime (declared headers, prebuilt.py), format 2\0"
    )
    h.update(TEXT.encode() + b"\0")
    h.update(toolchain.runtime_digest().encode() + b"\0")
    h.update(toolchain.identity().encode() + b"\0")
    h.update("\0".join(flags).encode())
    return f"pch-{h.hexdigest()[:24]}"


def _files(flags: list[str]) -> dict[str, bytes]:
    return {HEADER: TEXT.encode(), "flags.txt": shlex.join(flags).encode() + b"\n"}


def cached(root: str, flags: list[str]) -> str | None:
    """The sound cached ``.gch`` for ``flags``, or None (missing or damaged)."""
    folder = os.path.join(root, entry_name(flags))
    if sim_cache.usable(folder, _files(flags), GCH, executable=False):
        return os.path.join(folder, GCH)
    return None


def link(gch: str, build_folder: str) -> None:
    """Put the cached ``gch`` beside the build's runtime header (a symbolic link)."""
    os.symlink(gch, os.path.join(build_folder, FOLDER, GCH))


def make_detached(root: str, flags: list[str], include: str) -> None:
    """Start a process, in a session of its own and at low priority, that makes the
    ``.gch`` for ``flags`` from the headers in ``include`` and installs it (``main``);
    nothing waits for it."""
    here = os.path.abspath(__file__)  # <parent>/fadsl/backends/sim/pch.py
    package_parent = here
    for _ in range(4):
        package_parent = os.path.dirname(package_parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_parent, env.get("PYTHONPATH", "")) if p
    )
    job = json.dumps({"root": root, "flags": flags, "include": include})
    subprocess.Popen(
        [sys.executable, "-m", "fadsl.backends.sim.pch", job],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,
        preexec_fn=_lower_priority,
    )


def main(job: str) -> None:
    """The detached process: make and install the ``.gch`` the ``job`` describes."""
    spec = json.loads(job)
    Maker(spec["root"], spec["flags"], spec["include"]).finish()


class Maker:
    """Makes the ``.gch`` for ``flags`` in a temporary entry, at low priority;
    ``finish`` waits for it and installs it."""

    def __init__(self, root: str, flags: list[str], include: str) -> None:
        self.root = root
        self.flags = flags
        self.tmp = sim_cache.start(root, "pch")
        for rel, data in _files(flags).items():
            with open(os.path.join(self.tmp, rel), "wb") as f:
                f.write(data)
        cmd = [toolchain.compiler(), *flags, f"-I{include}", "-x", "c++-header"]
        cmd += [os.path.join(self.tmp, HEADER), "-o", os.path.join(self.tmp, GCH)]
        self.proc = subprocess.Popen(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_lower_priority,
        )

    def finish(self) -> None:
        """Wait for the compiler; install the entry when it succeeded."""
        try:
            if self.proc.wait() == 0:
                files = _files(self.flags)
                sim_cache.seal(self.tmp, files, GCH)
                folder = os.path.join(self.root, entry_name(self.flags))
                sim_cache.install(self.tmp, folder, files, GCH, executable=False)
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def abandon(self) -> None:
        """Stop the compiler and remove the temporary entry (the build failed)."""
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _lower_priority() -> None:
    try:
        os.nice(10)
    except OSError:
        pass


if __name__ == "__main__":
    main(sys.argv[1])
