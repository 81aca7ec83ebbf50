"""The cube runs ahead through a ring of GM workspace slots (plan/schedule/ring.py); the CPU runtime
stops a kernel whose ring is too shallow for how far the cube runs ahead.

The planner gives a ring ``lead + 1`` slots. Here it is made to give ``lead`` slots (one)
while the cube still runs one iteration ahead: the cube then writes S_{j+1} into the slot
that still holds S_j, and the CPU runtime must report the slot overwritten before its
consumer released it (fadsl/runtime/cpu/README.md, "Race and hazard detection").
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from fadsl import cli
from fadsl.plan.schedule import ring

ROOT = Path(__file__).resolve().parents[3]

pytestmark = [
    pytest.mark.cpu_runtime,
    pytest.mark.skipif(
        shutil.which("g++") is None or shutil.which("cmake") is None,
        reason="needs g++ and cmake",
    ),
]


def test_a_ring_one_slot_too_shallow_fails_in_the_cpu_runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    chosen = ring.choose

    def shallow(*args, **kwargs):  # type: ignore[no-untyped-def]
        rings = chosen(*args, **kwargs)
        assert rings and all(
            r.depth == ring.DEFAULT_DEPTH and r.lead == r.depth - 1
            for r in rings.values()
        )
        return {k: dataclasses.replace(r, depth=r.lead) for k, r in rings.items()}

    monkeypatch.setattr(ring, "choose", shallow)
    code = cli.main(
        [
            "sim",
            str(ROOT / "examples" / "fa2.py"),
            "--shape",
            "B=1,N=1,Sq=128,Skv=512,D=64",
            *("--set", "block_kv=128"),  # four KV iterations (512 would make one)
            "-o",
            str(tmp_path / "sim"),
        ]
    )
    err = capsys.readouterr().err
    assert code != 0, err
    assert "a workspace slot overwritten before its consumer released it" in err, err
