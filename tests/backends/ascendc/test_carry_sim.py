"""The ring carried across tasks (plan/schedule/carry.py): the cube issues the next
task's Q load and first S dots during the last iterations of the task before, with
ring slots counted over each core's stream of iterations. Run by the CPU runtime on a
2-core chip (several tasks a core) against the interpreter: tails, Sq = 1, causal
(tasks that see no key, the longest-first snake), GQA and a sliding window (a loop
that does not start at 0); and the executed record shows the preload."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from fadsl import cli

ROOT = Path(__file__).resolve().parents[3]

pytestmark = [
    pytest.mark.cpu_runtime,
    pytest.mark.skipif(
        shutil.which("g++") is None or shutil.which("cmake") is None,
        reason="needs g++ and cmake",
    ),
]


def _two_cores(tmp_path: Path) -> Path:
    spec = json.loads((ROOT / "fadsl" / "targets" / "ascend910b1.json").read_text())
    spec.update(aic_cores=2, aiv_cores=4)
    path = tmp_path / "two_cores.json"
    path.write_text(json.dumps(spec))
    return path


def _sim(tmp_path: Path, example: str, shape: str, sets: tuple[str, ...], *extra: str) -> int:
    args = ["sim", str(ROOT / "examples" / f"{example}.py"), "--shape", shape]
    args += ["--target-file", str(_two_cores(tmp_path)), *extra]
    for s in sets:
        args += ["--set", s]
    return cli.main(args + ["-o", str(tmp_path / "sim")])


@pytest.mark.parametrize(
    "example, shape, sets",
    [
        ("fa2", "B=1,N=2,Sq=300,Skv=700,D=64", ("block_kv=128", "stages=1")),  # tails
        ("fa2", "B=2,N=2,Sq=1,Skv=900,D=64", ("block_kv=128", "stages=1")),  # Sq = 1
        ("fa2", "B=1,N=3,Sq=700,Skv=300,D=64", ("causal=True", "block_kv=128", "stages=1")),
        ("fa2", "B=1,N=2,Sq=300,Skv=200,D=64", ("causal=True", "stages=1")),  # 1 < lead
        ("gqa", "B=1,N=4,Nkv=2,Sq=300,Skv=500,D=64", ("stages=1", "block_kv=128")),
        (
            "sliding_window",
            "B=1,N=2,Sq=600,Skv=700,D=64",
            ("stages=1", "block_kv=128"),
        ),
    ],
)
def test_carried_ring_matches_the_interpreter(
    tmp_path: Path,
    example: str,
    shape: str,
    sets: tuple[str, ...],
) -> None:
    assert cli.main(
        ["compile", str(ROOT / "examples" / f"{example}.py"), "--quiet", "--shape", shape,
         *[x for s in sets for x in ("--set", s)], "-o", str(tmp_path / "gen")]
    ) == 0  # fmt: skip
    code = next((tmp_path / "gen").glob("*_kernel.cpp")).read_text()
    assert "carried across tasks" in code
    assert _sim(tmp_path, example, shape, sets, "--sanitize") == 0


def test_the_cube_writes_the_next_tasks_s_before_the_last_p_v(
    tmp_path: Path,
) -> None:
    """4 tasks of 2 KV iterations on each core: core 0's cube sets the S flags of its
    second task before it sets the P V flag of its first task's last iteration (so
    more than 2 S flags precede the second P V flag). Before the carried ring the cube
    started a task's S only after the task before ended: exactly 2."""
    shape = "B=1,N=2,Sq=512,Skv=1024,D=128"
    assert _sim(tmp_path, "fa2", shape, (), "--profile", "--no-check") == 0
    record = (tmp_path / "sim" / "record.tsv").read_text().splitlines()
    header = next(x for x in record if x.startswith("core\t")).split("\t")
    rows = [dict(zip(header, x.split("\t"))) for x in record if x.startswith("AIC0\t")]
    sets = [int(r["flag"]) for r in rows if r["api"] == "CrossCoreSetFlag"]
    gen = tmp_path / "gen"
    assert cli.main(["compile", str(ROOT / "examples" / "fa2.py"), "--quiet", "-o", str(gen)]) == 0
    text = next(gen.glob("*_kernel.cpp")).read_text()
    s_flag = int(re.search(r"FLAG_DOT\s*=\s*(\d+)", text).group(1))  # type: ignore[union-attr]
    pv_flag = int(re.search(r"FLAG_DOT1\s*=\s*(\d+)", text).group(1))  # type: ignore[union-attr]
    is_s = [s_flag <= f < s_flag + 3 for f in sets]
    is_pv = [pv_flag <= f < pv_flag + 3 for f in sets]
    second_pv = [i for i, x in enumerate(is_pv) if x][1]
    assert sum(is_s[:second_pv]) == 4, sets
