"""Commands import only what they need: compile and check never import numpy (about a
third of their start-up), and the compile cache gives the same files as a fresh run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_PROBE = """
import sys
from fadsl.cli import main
status = main(sys.argv[1:])
print("numpy imported:", "numpy" in sys.modules)
sys.exit(status)
"""


def _fadsl(*args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def test_compile_and_check_do_not_import_numpy(tmp_path: Path) -> None:
    out = _fadsl("compile", "examples/fa2.py", "--quiet", "-o", str(tmp_path / "p"))
    assert "numpy imported: False" in out
    out = _fadsl("check", "examples/fa2.py", "--shape", "B=1,N=2,Sq=256,Skv=256,D=64")
    assert "numpy imported: False" in out


def test_cached_compile_writes_the_same_files(tmp_path: Path) -> None:
    env = dict(os.environ, FADSL_CACHE_DIR=str(tmp_path / "cache"))
    for name in ("first", "second"):  # the second run reads the cache the first wrote
        _fadsl(
            "compile", "examples/fa2.py", "--quiet", "-o", str(tmp_path / name), env=env
        )
    assert any((tmp_path / "cache" / "clang-format").iterdir())
    fresh = dict(os.environ, FADSL_NO_CACHE="1")
    _fadsl(
        "compile",
        "examples/fa2.py",
        "--quiet",
        "-o",
        str(tmp_path / "fresh"),
        env=fresh,
    )
    for path in sorted((tmp_path / "fresh").rglob("*")):
        if path.is_file():
            rel = path.relative_to(tmp_path / "fresh")
            for name in ("first", "second"):
                assert (tmp_path / name / rel).read_bytes() == path.read_bytes(), rel
