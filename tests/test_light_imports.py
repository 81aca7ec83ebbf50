"""Commands import only what they need: compile and check never import numpy (about a
third of their start-up), ``import fadsl`` and reading a kernel file's ``@fd.kernel``
import neither sympy nor numpy (issue 32: sympy alone is 0.7 s of a start-up), and the
compile cache gives the same files as a fresh run."""

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
print("ml_dtypes imported:", "ml_dtypes" in sys.modules)
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


HEAVY = ("sympy", "mpmath", "numpy", "ml_dtypes", "lark", "jinja2")
"""Packages that ``import fadsl`` must not import (each costs 0.05-0.7 s)."""

_IMPORTED = """
import sys
{body}
heavy = sorted({{m.split(".")[0] for m in sys.modules}} & set({heavy!r}))
print("heavy:", ",".join(heavy))
"""


def _heavy_after(body: str) -> str:
    code = _IMPORTED.format(body=body, heavy=HEAVY)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_import_fadsl_is_light() -> None:
    assert _heavy_after("import fadsl as fd") == "heavy:"


def test_reading_a_kernel_file_is_light() -> None:
    """Executing examples/fa2.py (``@fd.kernel``, ``fd.In``, ``fd.Scalar``) imports
    nothing heavy: the kernel's body is read only when it is built."""
    body = (
        "import runpy\n"
        "ns = runpy.run_path('examples/fa2.py')\n"
        "assert type(ns['fa2']).__name__ == 'KernelDef'"
    )
    assert _heavy_after(body) == "heavy:"


def test_the_lazy_names_are_the_ops() -> None:
    """``fd.<name>`` loads its module on first use and is the op itself."""
    body = (
        "import fadsl as fd\n"
        "from fadsl.frontend import tile_ops, attention, ops\n"
        "assert fd.dot is tile_ops.dot and fd.attention is attention.attention\n"
        "assert fd.ds is ops.ds and fd.f16 is ops.f16 and fd.inf == ops.inf\n"
        "assert {'dot', 'attention', 'interpret', 'numerics'} <= set(dir(fd))\n"
        "assert all(hasattr(fd, n) for n in fd.__all__)"
    )
    assert _heavy_after(body).startswith("heavy:")


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


def test_an_fp16_run_does_not_import_ml_dtypes(tmp_path: Path) -> None:
    """ml_dtypes 0.7 takes 1.4 s of CPU to import (it registers its casts): only bf16
    and fp8 need it (issue 32: half of `fadsl run`'s excess over numpy)."""
    shape = "B=1,N=2,Sq=64,Skv=64,D=32"
    args = ("run", "examples/fa2.py", "--shape", shape, "-o", str(tmp_path / "r"))
    assert "ml_dtypes imported: False" in _fadsl(*args)
    assert "ml_dtypes imported: False" in _fadsl(
        "verify", str(tmp_path / "r"), str(tmp_path / "r")
    )
