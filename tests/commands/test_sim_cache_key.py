"""sim's build cache is keyed on what reaches the compiler (issue 32, item 3).

A new shape whose C++ is the same reuses the build: the shape is read at run time, and
the project files that change with it (README, resource report, ``gen_data.py``) do not
reach the compiler. Anything that does reach it (a source, a runtime header, a flag,
the compiler) gives a new key. The real test builds with a compiler wrapper that logs
every compile and whether GCC loaded the runtime's precompiled header (``-H`` marks a
loaded one with ``!``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_checked_caches import FakeBuild, fake_cmake  # noqa: F401 (a fixture)
from test_outputs import FA2, ROOT, SMALL, cli

from fadsl.backends.sim import toolchain

OTHER = "B=2,N=1,Sq=40,Skv=24,D=16"
"""SMALL's kernel (same D) at other runtime sizes."""


@pytest.mark.smoke
def test_a_new_shape_with_the_same_cpp_reuses_the_build(
    tmp_path: Path, fake_cmake: tuple[FakeBuild, Path]  # noqa: F811
) -> None:
    fake, _ = fake_cmake
    assert cli(tmp_path, "sim", FA2, "--shape", SMALL, "-o", str(tmp_path / "a")) == 0
    assert cli(tmp_path, "sim", FA2, "--shape", OTHER, "-o", str(tmp_path / "b")) == 0
    assert fake.builds == 1
    other_d = "B=1,N=1,Sq=16,Skv=16,D=32"  # D sizes the tiles: other C++
    assert cli(tmp_path, "sim", FA2, "--shape", other_d, "-o", str(tmp_path / "c")) == 0
    assert fake.builds == 2


def test_only_files_that_reach_the_compiler_are_keyed() -> None:
    files = {
        "CMakeLists.txt": b"project(x)",
        "cmake/fadsl_cpu.cmake": b"add_library(x)",
        "main.cpp": b"int main() {}",
        "x_tiling.h": b"struct T {};",
        "README.md": b"Sq=300",
        "resources.json": b"{}",
        "scripts/gen_data.py": b"SHAPE = {}",
        "x.fir": b"kernel",
        "run.sh": b"cmake",
    }
    compiled = toolchain.compiled_files(files)
    assert sorted(compiled) == [
        "CMakeLists.txt",
        "cmake/fadsl_cpu.cmake",
        "main.cpp",
        "x_tiling.h",
    ]
    key = toolchain.build_key(compiled)
    for rel in compiled:
        edited = dict(compiled, **{rel: compiled[rel] + b" "})
        assert toolchain.build_key(edited) != key, rel


WRAPPER = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
if "-c" not in args or not any(a.endswith(".cpp") for a in args):
    os.execvp({cxx!r}, [{cxx!r}, *args])
proc = subprocess.run([{cxx!r}, "-H", *args], stderr=subprocess.PIPE, text=True)
lines = proc.stderr.splitlines()
marks = [ln for ln in lines if ln[:2] in ("! ", "x ")]
with open({log!r}, "a") as f:
    f.write(json.dumps({{"source": args[-1], "pch": marks}}) + "\\n")
sys.stderr.write("".join(ln + "\\n" for ln in lines if not ln.startswith((".", "!", "x "))))
sys.exit(proc.returncode)
"""


def compiles(log: Path) -> list[dict]:
    """The project's compiles in the log (CMake's own compiler checks left out)."""
    if not log.exists():
        return []
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    return [c for c in entries if not Path(c["source"]).name.startswith("CMake")]


def sim(tmp_path: Path, env: dict[str, str], out: str, *extra: str) -> str:
    cmd = [sys.executable, "-m", "fadsl", "sim", FA2, "-o", str(tmp_path / out)]
    proc = subprocess.run(
        cmd + list(extra), cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.rstrip().endswith("PASS"), proc.stdout
    return proc.stdout


@pytest.mark.cpu_runtime
def test_a_second_sim_at_a_new_shape_does_not_invoke_the_compiler(
    tmp_path: Path,
) -> None:
    cxx = shutil.which("g++")
    if cxx is None:
        pytest.skip("needs g++")
    log = tmp_path / "compiles.jsonl"
    wrapper = tmp_path / "logging-g++"
    wrapper.write_text(WRAPPER.format(python=sys.executable, cxx=cxx, log=str(log)))
    wrapper.chmod(0o755)
    env = dict(os.environ, CXX=str(wrapper), FADSL_SIM_OPT="-O0")
    env["FADSL_CACHE_DIR"] = str(tmp_path / "cache")

    first = sim(tmp_path, env, "first", "--shape", SMALL)
    built = compiles(log)
    assert "build cached" not in first
    assert sorted(Path(c["source"]).name for c in built) == [
        "fa2_kernel.cpp",
        "fadsl_rt.cpp",  # the runtime library (prebuilt.py), made once per flags
        "main.cpp",
    ]
    assert all(c["pch"] == [] for c in built)  # made while this build ran
    assert_runtime_is_in_the_library(tmp_path / "cache")

    second = sim(tmp_path, env, "second", "--shape", OTHER)
    assert "build cached" in second
    assert compiles(log) == built  # no compiler ran

    # Other C++ (another block size), same flags: both units load the .gch, which a
    # process of its own makes after the first build (nothing waits for it).
    wait_for_the_gch(tmp_path / "cache")
    sim(tmp_path, env, "third", "--shape", SMALL, "--set", "block_kv=64")
    third = compiles(log)[len(built) :]
    assert sorted(Path(c["source"]).name for c in third) == [
        "fa2_kernel.cpp",
        "main.cpp",
    ]  # the runtime library is reused
    for c in third:
        assert len(c["pch"]) == 1 and c["pch"][0].startswith("! "), c
        assert c["pch"][0].endswith("fadsl_rt_pch.h.gch"), c


def defined_symbols(path: Path) -> str:
    nm = subprocess.run(
        ["nm", "-C", "--defined-only", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return nm.stdout


def assert_runtime_is_in_the_library(cache: Path) -> None:
    """The kernel's object calls the runtime's out-of-line functions, which only the
    prebuilt library defines (the kernel's unit does not compile them again)."""
    (kernel,) = cache.glob("fa2-*/build/CMakeFiles/*/fa2_kernel.cpp.o")
    (library,) = cache.glob("rtlib-*/libfadsl_rt.a")
    for fn in ("fadsl_rt::GmAccess(", "fadsl_rt::CheckRead("):
        assert fn not in defined_symbols(kernel), fn
        assert fn in defined_symbols(library), fn


def wait_for_the_gch(cache: Path, limit: float = 300.0) -> None:
    """Wait until the detached process has installed the precompiled header."""
    start = time.monotonic()
    while not list(cache.glob("pch-*/fadsl_rt_pch.h.gch")):
        assert time.monotonic() - start < limit, "no precompiled header was installed"
        time.sleep(0.2)
