"""Configuring and building a generated project with cmake for ``fadsl sim``.

The project compiles against the CPU runtime's declared headers and links the
prebuilt runtime library (prebuilt.py); every translation unit includes the
runtime's precompiled header first (pch.py). Both come from the build cache and are
made while the project builds when they are missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from fadsl.backends.sim import toolchain
from fadsl.backends.sim.progress import Progress, wait
from fadsl.errors import BackendError, InternalError


def build_folder(folder: str, progress: Progress, root: str) -> None:
    """Configure and build the project in ``folder`` against the runtime's declared
    headers, linking the prebuilt runtime library and using the precompiled header
    from the cache ``root`` (each made meanwhile when it is missing: prebuilt.py,
    pch.py)."""
    from fadsl.backends.sim import pch, prebuilt

    if shutil.which("cmake") is None:
        raise BackendError("fadsl sim needs cmake", hint="apt-get install cmake")
    build_dir = os.path.join(folder, "build")
    declared, defined = prebuilt.views(root)
    _configure(folder, build_dir, declared, progress)
    flags = pch.pch_flags(
        os.path.join(build_dir, "compile_commands.json"), "_kernel.cpp"
    )
    if flags is None:
        raise InternalError(
            "the configured project has no kernel compile command in "
            "compile_commands.json"
        )
    library = prebuilt.cached(root, flags)
    lib_maker = None if library else prebuilt.Maker(root, flags, defined)
    gch = pch.cached(root, flags)
    if gch is None:
        pch.make_detached(root, flags, declared)
    else:
        pch.link(gch, build_dir)
    jobs = str(max(1, os.cpu_count() or 1))
    try:
        if lib_maker is not None:
            kernel_target = "ascendc_kernels_fadsl"
            _step(
                ["cmake", "--build", build_dir, "-j", jobs, "--target", kernel_target],
                progress,
            )
            library = lib_maker.finish()
            lib_maker = None
        assert library is not None
        prebuilt.link(library, build_dir)
        _step(["cmake", "--build", build_dir, "-j", jobs], progress)
    except BaseException:
        if lib_maker is not None:
            lib_maker.abandon()
        raise


def _configure(folder: str, build_dir: str, include: str, progress: Progress) -> None:
    """Run cmake's configure step: the runtime headers from ``include``, the prebuilt
    library linked after everything else, the runtime's header included first."""
    from fadsl.backends.sim import pch, prebuilt

    opt = toolchain.optimization()
    _step(
        [
            "cmake",
            "-S",
            folder,
            "-B",
            build_dir,
            "-DRUN_MODE=fadsl",
            f"-DFADSL_RUNTIME_DIR={include}",
            f"-DCMAKE_CXX_COMPILER={toolchain.compiler()}",
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_CXX_FLAGS_RELEASE={opt} -DNDEBUG {pch.include_flags(build_dir)}",
            f"-DCMAKE_CXX_STANDARD_LIBRARIES={prebuilt.library_path(build_dir)}",
            "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
        ],
        progress,
    )


def _step(cmd: list[str], progress: Progress) -> None:
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    out, err = wait(proc, None, progress, lambda s: f"building... {s:.0f} s")
    if proc.returncode != 0:
        raise BackendError(
            "building the generated project with the CPU runtime failed "
            "(this is a fadsl bug: generated code must compile)",
            notes=(_tail(out + err),),
        )


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
