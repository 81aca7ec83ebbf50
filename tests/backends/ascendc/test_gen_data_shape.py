"""The generated project's scripts/gen_data.py -s: inputs for another runtime shape."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _gen_data(project: Path, *args: str) -> subprocess.CompletedProcess:
    # run outside the repository so that fadsl is not importable: inputs only
    return subprocess.run(
        [sys.executable, str(project / "scripts" / "gen_data.py"), *args],
        cwd=project,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )


def test_gen_data_takes_a_runtime_shape(tmp_path: Path) -> None:
    project = tmp_path / "gqa"
    shutil.copytree(ROOT / "generated" / "gqa", project)
    proc = _gen_data(project, "-s", "B=2,N=4,Nkv=2,Sq=100,Skv=64")
    assert proc.returncode == 0, proc.stderr
    shape = (project / "input" / "shape.txt").read_text().splitlines()
    assert sorted(shape[:5]) == sorted(["B 2", "N 4", "Nkv 2", "Sq 100", "Skv 64"])
    q = (project / "input" / "q.bin").stat().st_size
    k = (project / "input" / "k.bin").stat().st_size
    assert (q, k) == (2 * 4 * 100 * 128 * 2, 2 * 2 * 64 * 128 * 2)


def test_gen_data_refuses_a_compile_time_or_unknown_symbol(tmp_path: Path) -> None:
    project = tmp_path / "fa2"
    shutil.copytree(ROOT / "generated" / "fa2", project)
    fixed = _gen_data(project, "-s", "D=64")
    assert fixed.returncode != 0 and "D is fixed at 128" in fixed.stderr
    unknown = _gen_data(project, "-s", "X=1")
    assert unknown.returncode != 0 and "no shape symbol 'X'" in unknown.stderr
    assert "Traceback" not in fixed.stderr + unknown.stderr
