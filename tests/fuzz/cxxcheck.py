"""Compile a kernel file to an Ascend C project and type-check its C++ with g++.

``g++ -fsyntax-only`` of ``<kernel>_kernel.cpp`` and ``main.cpp`` against the CPU
runtime's headers (fadsl/runtime/cpu/include), with the defines and the GNU C++17 mode
the generated CMake (RUN_MODE=fadsl) builds with, plus ``-Werror=shadow``: a generated
name that hides another one is a silent wrong reference waiting to happen.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from fuzzkit import Outcome, run_cli

from fadsl.runtime import include_dir

DEFINES = (
    "ASCENDC_CPU_DEBUG",
    'FADSL_SOC_VERSION="ascend910b1"',
    "FADSL_UB_BYTES=196352",
    "FADSL_L1_BYTES=524032",
    "FADSL_L0A_BYTES=65536",
    "FADSL_L0B_BYTES=65536",
    "FADSL_L0C_BYTES=131072",
    "FADSL_AIC_CORES=24",
    "FADSL_AIV_CORES=48",
    "FADSL_HAS_DATACOPYPAD=1",
)


def have_gxx() -> bool:
    return shutil.which("g++") is not None


def compile_kernel(src: Path, out: Path, shape: str) -> Outcome:
    """``fadsl compile SRC --shape SHAPE -o OUT`` in-process, in SRC's folder."""
    argv = ["compile", str(src), "--shape", shape, "-o", str(out), "--quiet"]
    return run_cli(argv, str(src.parent))


def typecheck(project: Path) -> str | None:
    """g++'s errors for the project's two translation units, or None if both pass."""
    units = sorted(project.glob("*_kernel.cpp")) + [project / "main.cpp"]
    flags = ["-std=gnu++17", "-fsyntax-only", "-Wshadow", "-Werror=shadow"]
    flags += [f"-D{d}" for d in DEFINES]
    flags += [f"-I{include_dir()}", f"-I{project}", f"-I{project / 'include'}"]
    procs = [
        subprocess.Popen(
            ["g++", *flags, str(u)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for u in units
    ]
    errors = []
    for unit, proc in zip(units, procs):
        text, _ = proc.communicate(timeout=600)
        if proc.returncode != 0:
            lines = [ln for ln in text.splitlines() if "error" in ln][:8]
            errors.append(f"{unit.name}:\n" + "\n".join(lines or text.splitlines()[:8]))
    return "\n".join(errors) or None
