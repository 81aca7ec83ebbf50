"""fadsl compile: the checked-in generated/fa2 equals a fresh compile; output is deterministic."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FA2 = ROOT / "examples" / "fa2.py"


def _compile(out: Path, *extra: str, env: dict | None = None) -> None:
    cmd = [sys.executable, "-m", "fadsl", "compile", str(FA2), "-o", str(out), "--quiet", *extra]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr


def _files(folder: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            out[str(path.relative_to(folder))] = path.read_bytes()
    return out


def test_checked_in_snapshot_matches_a_fresh_compile(tmp_path: Path) -> None:
    # Compiled beside generated/ so the relative source path in gen_data.py is the same.
    out = ROOT / "generated" / ".test-fresh-fa2"
    try:
        _compile(out)
        fresh, kept = _files(out), _files(ROOT / "generated" / "fa2")
    finally:
        subprocess.run(["rm", "-rf", str(out)])
    stale = sorted(k for k in set(fresh) | set(kept) if fresh.get(k) != kept.get(k))
    assert not stale, (
        f"generated/fa2 differs from a fresh compile in {stale}; run "
        "`fadsl compile examples/fa2.py` and review the diff")


def test_output_is_identical_across_runs_and_hash_seeds(tmp_path: Path) -> None:
    outs = []
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = tmp_path / f"seed{seed}"
        _compile(out, "--set", "causal=true", "--dtype", "bf16", env=env)
        outs.append(_files(out))
    assert outs[0] == outs[1]


def test_every_statement_group_names_a_source_line() -> None:
    kernel = (ROOT / "generated" / "fa2" / "fa2_kernel.cpp").read_text()
    assert "// fa2.py:" in kernel
    body = kernel[kernel.index("__aicore__ inline void Process()"):]
    calls = [ln for ln in body.splitlines() if "AscendC::" in ln and "(" in ln]
    assert calls, "no calls found"


def test_generated_python_scripts_are_black_formatted() -> None:
    black = pytest.importorskip("black")
    for name in ("gen_data.py", "verify_result.py"):
        text = (ROOT / "generated" / "fa2" / "scripts" / name).read_text()
        assert black.format_str(text, mode=black.Mode()) == text, name


def test_coupled_chip_is_refused_clearly(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "fadsl", "compile", str(FA2), "--target", "ascend910a",
           "-o", str(tmp_path / "x")]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1
    assert "code generation for ascend910a is not supported yet" in proc.stderr
    assert not (tmp_path / "x").exists()
