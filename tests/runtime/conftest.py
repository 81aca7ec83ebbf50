"""pytest wiring for the CPU-runtime tests (see rtutil.py for the helpers)."""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from rtutil import PROGRAMS, build_program, compile_cpp


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "cpu_runtime: builds and runs C++ against fadsl's CPU runtime (needs g++)",
    )


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory) -> Path:
    """One folder for the run: under xdist each worker's base temp is a sub-folder of the
    run's, so the workers share their builds (rtutil.compile_cpp locks each program)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    path = root / "cpu_runtime_build"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def build(build_dir):
    """build(source, **kw) -> path of the compiled program (cached per session)."""

    def _build(source: str, **kw) -> Path:
        exe, _ = compile_cpp(source, build_dir, **kw)
        return exe

    return _build


@pytest.fixture(scope="session")
def program(build_dir, request):
    """program(name) -> compiled tests/runtime/cpp/<name>. On first use, every program needed by
    the collected tests is compiled in parallel (one g++ per CPU)."""
    if shutil.which("g++") is None:
        pytest.skip("g++ not available")
    wanted = {Path(str(item.fspath)).name for item in request.session.items}
    names = [n for n, (mod, _) in PROGRAMS.items() if mod in wanted]
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        list(pool.map(lambda n: build_program(n, build_dir), names))
    return lambda name: build_program(name, build_dir)
