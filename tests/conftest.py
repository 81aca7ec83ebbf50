"""Suite-wide test setup: golden-file snapshots with ``--update-golden`` (Exo style).

``golden(text, ext)`` compares ``text`` with the file
``tests/golden/<test_module>/<test_name>.<ext>``: ``tests/ir/test_printer.py::test_fa2``
maps to ``tests/golden/test_printer/test_fa2.fir``; parametrized ids are kept
(``test_err[missing_type]`` -> ``test_err-missing_type.err``). A test that snapshots
several texts passes ``variant="name"`` (``test_x.name.err``). On a difference the
test fails with a unified diff; ``pytest --update-golden`` rewrites the files instead
(creating folders as needed) and lists them at the end of the run.

The suite also sets ``FADSL_VERIFY=1`` so that ``run_pipeline`` verifies the IR between
passes (house style 3.3), ``FADSL_SANITIZE=1`` so that every sim runs under the CPU
runtime's sanitizer, and puts the checkout first on ``PYTHONPATH`` for subprocesses.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("FADSL_VERIFY", "1")
# The suite's sim kernels run for milliseconds and each build is ~9 s of g++: -O0 builds
# them faster than sim's default -O1 (tests/variants/test_examples_sim.py, 12 builds, cold
# cache, 2 CPUs: 200 -> 159 s of CPU, 2026-12-05). `fadsl sim` itself keeps -O1 (its default,
# tests/backends/test_sim_opt.py), which the README's main job and bench/sim.py build.
os.environ.setdefault("FADSL_SIM_OPT", "-O0")
# Every sim of the suite runs under the CPU runtime's sanitizer (issue 28): cross-pipe races,
# reads of never-written local memory and unpaired flags fail the test that built the kernel.
# CPU time of one fa2 sim with its build cached, without -> with: 2.6 -> 2.8-3.1 s (B=1,N=2,
# Sq=300,Skv=200,D=64), 4.8-5.2 -> 5.2-5.5 s (B=2,N=4,Sq=Skv=1024,D=64); the ~20 s build is the
# same. The runtime's own C++ tests (tests/runtime) set it per case instead (rtutil.run).
os.environ.setdefault("FADSL_SANITIZE", "1")
# Subprocesses (``python -m fadsl`` from a temporary folder) import the checkout under
# test, not whatever fadsl happens to be installed, and work without an install at all.
_ROOT = str(Path(__file__).resolve().parents[1])
os.environ["PYTHONPATH"] = os.pathsep.join(
    [_ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
)

GOLDEN_DIR = Path(__file__).parent / "golden"
_UPDATED = pytest.StashKey[list]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden files under tests/golden/ from the current output",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_UPDATED] = []


def pytest_terminal_summary(
    terminalreporter: Any, exitstatus: int, config: pytest.Config
) -> None:
    updated = config.stash.get(_UPDATED, [])
    if updated:
        terminalreporter.section("golden files updated")
        for path in updated:
            terminalreporter.line(str(path))


class Golden:
    """Compares texts with the golden files of one test (see the module docstring)."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self.request = request
        self.update = bool(request.config.getoption("--update-golden"))

    def path(self, ext: str, variant: str | None = None) -> Path:
        module = Path(str(self.request.node.fspath)).stem
        name = _file_name(self.request.node.name)
        if variant:
            name += "." + _file_name(variant)
        return GOLDEN_DIR / module / f"{name}.{ext.lstrip('.')}"

    def __call__(self, text: str, ext: str, variant: str | None = None) -> None:
        path = self.path(ext, variant)
        if self.update:
            self._write(path, text)
            return
        rel = path.relative_to(GOLDEN_DIR.parent.parent)
        if not path.exists():
            pytest.fail(
                f"golden file {rel} does not exist; run `python -m pytest "
                f"{self.request.node.nodeid} --update-golden` to create it.\n"
                f"Current output:\n{text}",
                pytrace=False,
            )
        expected = path.read_text(encoding="utf-8")
        if expected != text:
            diff = "".join(
                difflib.unified_diff(
                    expected.splitlines(keepends=True),
                    text.splitlines(keepends=True),
                    fromfile=f"{rel} (golden)",
                    tofile="current output",
                )
            )
            pytest.fail(
                f"output differs from {rel}:\n{diff}\nIf the change is intended, run "
                f"`python -m pytest {self.request.node.nodeid} --update-golden` and "
                "review the golden diff like code.",
                pytrace=False,
            )

    def _write(self, path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.read_text(encoding="utf-8") == text:
            return
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        self.request.config.stash[_UPDATED].append(path)


def _file_name(name: str) -> str:
    """A test id as a file name: ``test_x[a-b]`` -> ``test_x-a-b``."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "-", name).strip("-")


@pytest.fixture
def golden(request: pytest.FixtureRequest) -> Golden:
    """``golden(text, ext, variant=None)``: compare ``text`` with its golden file."""
    return Golden(request)


SLOW_LIST = Path(__file__).with_name("slow_tests.txt")


def _slow_ids() -> set[str]:
    lines = SLOW_LIST.read_text(encoding="utf-8").splitlines()
    return {s for s in (line.strip() for line in lines) if s and not s.startswith("#")}


@pytest.hookimpl(
    tryfirst=True
)  # before -m / -k deselect: `-m "not slow"` sees the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[Any]) -> None:
    """Marks the tests tests/slow_tests.txt lists ``slow`` (the README's test command
    leaves them out). A listed test that its module, collected whole, does not hold is a
    usage error, so that the list cannot drift from the suite unseen."""
    slow = _slow_ids()
    seen = set()
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
            seen.add(item.nodeid)
    modules = {item.nodeid.split("::")[0] for item in items}
    picked = {Path(a.split("::")[0]).as_posix() for a in config.args if "::" in a}
    stale = sorted(
        s
        for s in slow - seen
        if s.split("::")[0] in modules and not any(s.startswith(p) for p in picked)
    )
    if stale:
        raise pytest.UsageError(
            f"tests/{SLOW_LIST.name} names tests that were not collected: "
            f"{', '.join(stale)}; remove or rename them there"
        )
