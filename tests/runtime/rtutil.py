"""Helpers for the CPU-runtime tests: compile small C++ programs against
fadsl/runtime/cpu/include with g++ (cached by source hash), run them, check results."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "fadsl" / "runtime" / "cpu" / "include"

# ascend910b1 facts, passed the way the generated CMake passes them.
TARGET_DEFINES = {
    "FADSL_SOC_VERSION": '"ascend910b1"',
    "FADSL_UB_BYTES": "196352",
    "FADSL_L1_BYTES": "524032",
    "FADSL_L0A_BYTES": "65536",
    "FADSL_L0B_BYTES": "65536",
    "FADSL_L0C_BYTES": "131072",
    "FADSL_AIC_CORES": "24",
    "FADSL_AIV_CORES": "48",
    "FADSL_HAS_DATACOPYPAD": "1",
}

# Test programs (tests/runtime/cpp/*.cpp): name -> (test module using it, compile options).
PROGRAMS = {
    "cube_matmul.cpp": (
        "test_rt_cube.py",
        {"opt": "-O0", "extra": ("-Werror", "-Wno-sign-compare")},
    ),
    "vector_ops.cpp": ("test_rt_vector.py", {"opt": "-O0"}),
    "cast_types.cpp": ("test_rt_cast.py", {"opt": "-O0"}),
    "datacopy.cpp": ("test_rt_datacopy.py", {"opt": "-O0"}),
    "misuse.cpp": ("test_rt_misuse.py", {"opt": "-O0"}),
    "sync.cpp": ("test_rt_sync.py", {"opt": "-O0"}),
    "event_pool.cpp": ("test_rt_event_pool.py", {"opt": "-O0"}),
    "atomic.cpp": ("test_rt_atomic.py", {"opt": "-O0"}),
    "sync_all.cpp": ("test_rt_sync_all.py", {"opt": "-O0"}),
    "record.cpp": ("test_rt_record.py", {"opt": "-O0"}),
    "debug_print.cpp": ("test_rt_debug.py", {"opt": "-O0"}),
    "sanitize.cpp": ("test_rt_sanitize.py", {"opt": "-O0"}),
}
CPP_DIR = Path(__file__).resolve().parent / "cpp"

# Exit status of a misuse report: abort() -> SIGABRT.
ABORTED = (-signal.SIGABRT, 128 + signal.SIGABRT)


def compile_cpp(
    source: str,
    out_dir: Path,
    *,
    opt: str = "-O0",
    defines: dict[str, str | None] | None = None,
    extra: tuple[str, ...] = ("-Werror",),
    check: bool = True,
    syntax_only: bool = False,
) -> tuple[Path, subprocess.CompletedProcess]:
    """Compile `source` (one TU including tikicpulib.h); returns (exe, result).

    Every test program is built with -Wall -Wextra -Werror, so the runtime headers stay warning-free.
    `defines` overrides the target macros (value None removes one)."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not available")
    defs = dict(TARGET_DEFINES)
    defs.update(defines or {})
    flags = [f"-D{k}={v}" for k, v in sorted(defs.items()) if v is not None]
    cmd_tail = [
        "-std=c++17",
        opt,
        "-Wall",
        "-Wextra",
        "-pthread",
        f"-I{INCLUDE}",
        *flags,
        *extra,
    ]
    key = hashlib.sha256((source + "\0" + " ".join(cmd_tail)).encode()).hexdigest()[:16]
    out_dir.mkdir(parents=True, exist_ok=True)
    src = out_dir / f"prog_{key}.cpp"
    exe = out_dir / f"prog_{key}"
    # out_dir is shared by the xdist workers of a run (conftest.build_dir): one builds a
    # program while the others wait for it, rather than each compiling it again
    with open(out_dir / f"prog_{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if exe.exists() and not syntax_only:
            return exe, subprocess.CompletedProcess([], 0, "", "")
        src.write_text(source)
        part = out_dir / f"prog_{key}.part"
        out = ["-fsyntax-only"] if syntax_only else ["-o", str(part)]
        res = subprocess.run(
            [gxx, *cmd_tail, str(src), *out], capture_output=True, text=True
        )
        if res.returncode == 0 and not syntax_only:
            os.replace(part, exe)
    if check and res.returncode != 0:
        raise AssertionError(f"g++ failed:\n{res.stderr[-6000:]}")
    return exe, res


def build_program(name: str, out_dir: Path) -> Path:
    """Compile tests/runtime/cpp/<name> with its PROGRAMS options (cached by content hash)."""
    _, kw = PROGRAMS[name]
    exe, _ = compile_cpp((CPP_DIR / name).read_text(), out_dir, **kw)
    return exe


def run(
    exe: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60.0
):
    e = dict(os.environ)
    # the suite turns the sanitizer on for sims (tests/conftest.py); these programs test the
    # runtime's own reports, with or without it, so each case sets it itself
    e.pop("FADSL_SANITIZE", None)
    e.update(env or {})
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, timeout=timeout, env=e
    )


def assert_aborted(res, *fragments: str) -> str:
    """The program must have reported misuse: abort() and a fadsl-cpu-runtime line naming things."""
    assert (
        res.returncode in ABORTED
    ), f"expected abort, got {res.returncode}\nstdout:{res.stdout}\nstderr:{res.stderr}"
    lines = [
        l
        for l in res.stderr.splitlines()
        if l.startswith("fadsl-cpu-runtime: ") and "warning:" not in l
    ]
    assert lines, f"no fadsl-cpu-runtime error line in stderr:\n{res.stderr}"
    msg = lines[0]
    for f in fragments:
        assert f in msg, f"{f!r} not in {msg!r}"
    return msg


def assert_ok(res) -> str:
    assert (
        res.returncode == 0
    ), f"exit {res.returncode}\nstdout:{res.stdout}\nstderr:{res.stderr}"
    return res.stdout
