"""A built (non-editable) wheel holds every file fadsl needs, and works from outside the repo.

The editable install that CI uses imports straight from the checkout, so a package
folder missing from the wheel (``fadsl.lib`` was, and ``fd.attention`` failed with
ModuleNotFoundError) is only seen by building a wheel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("fadsl", "codegen_templates")
SOURCE = ("pyproject.toml", "setup.py", "README.md", "docs", *SHIPPED)
DOCS = ("docs/errors.md",)
"""Pages of docs/ the package reads (``fadsl explain``): in the wheel as fadsl/docs/."""


def _tracked(folder: str) -> list[str]:
    if (ROOT / ".git").exists() and shutil.which("git"):
        out = subprocess.run(
            ["git", "ls-files", folder], cwd=ROOT, capture_output=True, text=True
        ).stdout.split()
        if out:
            return out
    return [
        str(p.relative_to(ROOT))
        for p in (ROOT / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ]


def _in_wheel(path: str) -> str:
    """Where a tracked file lands in the wheel (codegen_templates/ and docs/ are
    fadsl's)."""
    if path.startswith(("codegen_templates/", "docs/")):
        return "fadsl/" + path
    return path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Builds the wheel from a copy of the sources, so the checkout gets no build/."""
    src = tmp_path_factory.mktemp("src")
    for name in SOURCE:
        path = ROOT / name
        if not path.exists():
            continue
        if path.is_dir():
            shutil.copytree(
                path, src / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(path, src / name)
    out = tmp_path_factory.mktemp("wheel")
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), "."]
    proc = subprocess.run(cmd, cwd=src, capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"pip wheel failed:\n{proc.stdout}\n{proc.stderr}")
    (whl,) = out.glob("fadsl-*.whl")
    return whl


def test_the_wheel_holds_every_tracked_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = [p for folder in SHIPPED for p in _tracked(folder)] + list(DOCS)
    missing = [p for p in shipped if _in_wheel(p) not in names]
    assert not missing, f"files missing from the wheel: {missing[:10]}"


@pytest.mark.slow
def test_the_wheel_compiles_kernels_outside_the_repo(
    wheel: Path, tmp_path: Path
) -> None:
    """Installed into a fresh venv (dependencies from this environment), not the checkout."""
    # No PYTHONPATH anywhere below (the suite's conftest points it at the checkout): pip
    # would see the checkout's fadsl.egg-info as fadsl already installed and skip the
    # wheel, and the import would then come from the checkout.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
        check=True,
        env=env,
    )
    py = venv / "bin" / "python"
    # with the extra, as docs/pytorch.md installs it (--no-deps: torch is not fetched)
    pip = [str(py), "-m", "pip", "install", "-q", "--no-deps", f"{wheel}[torch]"]
    subprocess.run(pip, check=True, env=env)
    work = tmp_path / "work"
    work.mkdir()
    for name in ("fa2.py", "causal.py"):
        shutil.copy2(ROOT / "examples" / name, work / name)
    where = subprocess.run(
        [str(py), "-c", "import fadsl; print(fadsl.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert str(venv) in where, f"fadsl imported from {where}, not from the wheel"
    fadsl = str(venv / "bin" / "fadsl")
    for example in (
        "fa2.py",
        "causal.py",
    ):  # a tile program and an fd.attention variant
        proc = subprocess.run(
            [fadsl, "compile", example, "-o", f"out_{example[:-3]}"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr
    assert (work / "out_causal" / "causal_kernel.cpp").is_file()
    explain = subprocess.run(
        [fadsl, "explain", "E03"], cwd=work, env=env, capture_output=True, text=True
    )
    assert explain.returncode == 0, explain.stderr
    assert explain.stdout.startswith("## E03 "), explain.stdout
