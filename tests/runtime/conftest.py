"""pytest wiring for the CPU-runtime tests (see rtutil.py for the helpers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtutil import compile_cpp


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "cpu_runtime: builds and runs C++ against fadsl's CPU runtime (needs g++)"
    )


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cpu_runtime_build")


@pytest.fixture(scope="session")
def build(build_dir):
    """build(source, **kw) -> path of the compiled program (cached per session)."""

    def _build(source: str, **kw) -> Path:
        exe, _ = compile_cpp(source, build_dir, **kw)
        return exe

    return _build


