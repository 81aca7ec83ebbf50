"""examples/fa2_bwd.py (the hand-written backward tile program) through
``fadsl run``: consistent seeded inputs, dq, dk, dv by the tolerance rule."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fadsl.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fa2_bwd.py"


@pytest.mark.parametrize(
    "shape, extra",
    [
        ("B=1,N=2,Sq=300,Skv=200,D=64", ("--set", "causal=True")),  # Sq > Skv, tails
        ("B=2,N=3,Sq=130,Skv=190,D=64", ("--dtype", "bf16")),
        (
            "B=1,N=1,Sq=100,Skv=160,D=128",
            ("--set", "causal=True", "--set", "block_q=64"),
        ),
    ],
)
def test_run_passes_the_rule(
    shape: str, extra: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "run"
    code = main(["run", str(EXAMPLE), "--shape", shape, *extra, "-o", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    for name in ("dq", "dk", "dv"):
        assert f"  {name}: max|err|" in text and "PASS" in text
    meta = json.loads((out / "meta.json").read_text())
    assert {"q", "k", "v", "o", "do", "lse", "dq", "dk", "dv"} <= set(meta["params"])


def test_seeded_o_and_lse_are_the_forward_of_q_k_v(tmp_path: Path) -> None:
    out = tmp_path / "run"
    shape = "B=1,N=2,Sq=70,Skv=90,D=64"
    assert main(["run", str(EXAMPLE), "--shape", shape, "-o", str(out)]) == 0
    q, k, v = (
        np.fromfile(out / f"{n}.bin", np.float16)
        .reshape(1, 2, -1, 64)
        .astype(np.float64)
        for n in "qkv"
    )
    s = np.einsum("bhqd,bhkd->bhqk", q, k) / 8.0
    lse = np.log(np.exp(s).sum(-1))
    o = np.einsum("bhqk,bhkd->bhqd", np.exp(s - lse[..., None]), v)
    got_lse = np.fromfile(out / "lse.bin", np.float32).reshape(1, 2, 70)
    got_o = np.fromfile(out / "o.bin", np.float16).reshape(1, 2, 70, 64)
    np.testing.assert_allclose(got_lse, lse, rtol=1e-6)
    np.testing.assert_allclose(got_o, o, atol=1e-3)
