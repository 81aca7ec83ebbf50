"""Golden-output tests of a fadsl kernel in pytest, through the Python API.

The kernel is imported from its file (pytest puts this folder on ``sys.path``), run in
fadsl's numpy interpreter with ``fd.interpret``, and checked against its float64
reference by the tolerance rule with ``fd.verify`` (docs/api.md). Run with

    python3 -m pytest examples/test_golden_api.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fa2 import fa2  # examples/fa2.py

import fadsl as fd

HERE = Path(__file__).resolve().parent
SHAPE = dict(B=1, N=2, Sq=200, Skv=256, D=64)


def make_inputs(seed: int = 0) -> dict[str, np.ndarray]:
    """q, k, v in the kernel's dtype (fp16), layout BNSD."""
    rng = np.random.default_rng(seed)
    b, n, sq, skv, d = SHAPE.values()
    return {
        "q": rng.standard_normal((b, n, sq, d)).astype(np.float16),
        "k": rng.standard_normal((b, n, skv, d)).astype(np.float16),
        "v": rng.standard_normal((b, n, skv, d)).astype(np.float16),
    }


def check_against_reference(out: np.ndarray, inputs: dict, causal: bool) -> None:
    consts = {"causal": causal, "scale": SHAPE["D"] ** -0.5}
    expected = fa2.reference(inputs, SHAPE, consts)["o"]  # float64
    same = fa2.reference(inputs, SHAPE, consts, fd.f16)["o"]  # plain, in fp16
    result = fd.verify(out, expected, "fp16", same_precision=same)
    assert result.passed, result.line()


@pytest.mark.parametrize("causal", [False, True])
def test_fa2_matches_its_float64_reference(causal: bool) -> None:
    inputs = make_inputs()
    out = fd.interpret(fa2, consts={"causal": causal}, **inputs)  # shape from q, k, v
    assert out["o"].shape == inputs["q"].shape and out["o"].dtype == np.float16
    check_against_reference(out["o"], inputs, causal)


def test_fa2_takes_torch_tensors() -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed")
    inputs = make_inputs()
    tensors = {name: torch.from_numpy(a) for name, a in inputs.items()}
    out = fd.interpret(fa2, **tensors)
    assert np.array_equal(out["o"], fd.interpret(fa2, **inputs)["o"])
    check_against_reference(out["o"], inputs, causal=False)


def test_the_same_numbers_as_fadsl_run(tmp_path: Path) -> None:
    """Without inputs, fd.interpret seeds them as `fadsl run --seed` does."""
    shape = ",".join(f"{k}={v}" for k, v in SHAPE.items())
    command = ["run", str(HERE / "fa2.py"), "--shape", shape, "--seed", "7"]
    site = str(Path(fd.__file__).resolve().parents[1])  # the fadsl this test imports
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([site, os.environ.get("PYTHONPATH", "")])
    )
    subprocess.run(
        [sys.executable, "-m", "fadsl", *command, "-o", str(tmp_path / "run")],
        env=env,
        check=True,
        capture_output=True,
    )
    out = fd.interpret(fa2, shape=SHAPE, seed=7)["o"]
    run = np.fromfile(tmp_path / "run" / "o.bin", dtype=np.float16)
    assert np.array_equal(out, run.reshape(out.shape))
