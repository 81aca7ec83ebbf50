"""Inputs that would give wrong numbers with exit 0 are refused or handled (issue 12).

0-d extra tensors, run folders of another dtype, index inputs out of range, and
non-finite scalars.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fadsl.cli import main

SMALL = "B=1,N=1,Sq=32,Skv=32,D=64"

ZERO_D = """\
import fadsl as fd

s = fd.tensor("s", dtype="fp32")


def mod(score, b, h, q_idx, kv_idx):
    return score * s[()]


kernel = fd.attention(name="zerod", score_mod=mod)
"""


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_0d_extra_tensor_runs_with_its_seeded_inputs(tmp_path: Path) -> None:
    kernel = write(tmp_path, "zerod.py", ZERO_D)
    out = tmp_path / "out"
    assert main(["run", kernel, "--shape", SMALL, "-o", str(out)]) == 0
    assert (out / "s.bin").stat().st_size == 4
    again = tmp_path / "again"
    assert (
        main(["run", kernel, "--shape", SMALL, "--inputs", str(out), "-o", str(again)])
        == 0
    )
    assert (again / "o.bin").read_bytes() == (out / "o.bin").read_bytes()
