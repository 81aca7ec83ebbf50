"""Every example (but fa2, which tests/backends/ascendc/test_sim.py covers) built with the CPU
runtime and run on one small shape with tails: it passes the tolerance rule against its
float64 reference and agrees with the interpreter to a few units in the last place; and
the dropout mask of the generated code is the interpreter's, element for element.

One build per example (cached by content under $FADSL_CACHE_DIR or ~/.cache/fadsl/sim).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
ULP = {"fp16": 2.0**-10, "bf16": 2.0**-7}

pytestmark = [
    pytest.mark.cpu_runtime,
    pytest.mark.skipif(
        shutil.which("g++") is None or shutil.which("cmake") is None,
        reason="needs g++ and cmake",
    ),
]

# example -> (shape, extra arguments); default tile constants, so the build is the one of
# the checked-in generated/<kernel>/ project
CASES = {
    "causal": ("B=1,N=2,Sq=300,Skv=200,D=128", []),
    "sliding_window": ("B=1,N=2,Sq=640,Skv=700,D=128", []),
    "alibi": ("B=1,N=4,Sq=200,Skv=330,D=128", []),
    "softcap": ("B=2,N=2,Sq=150,Skv=260,D=128", []),
    "gqa": ("B=1,N=4,Nkv=2,Sq=200,Skv=190,D=128", []),
    "document_mask": ("B=1,N=2,Sq=700,Skv=700,D=128", []),
    "varlen": ("B=3,N=2,Sq=500,Skv=620,D=128", []),
    "dropout": ("B=1,N=2,Sq=260,Skv=300,D=128", []),
    "fa1": ("B=1,N=2,Sq=300,Skv=200,D=128", ["--set", "causal=true"]),
    "fa3": ("B=1,N=2,Sq=200,Skv=450,D=128", ["--set", "causal=true"]),
}


def _sim(example: str | Path, shape: str, out: Path, *extra: str) -> dict:
    """``fadsl sim`` of an example by name, or of a kernel file."""
    src = example if isinstance(example, Path) else ROOT / "examples" / f"{example}.py"
    cmd = [
        sys.executable,
        "-m",
        "fadsl",
        "sim",
        str(src),
        "--shape",
        shape,
        "-o",
        str(out),
        *extra,
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((out / "meta.json").read_text())


@pytest.mark.parametrize("example", sorted(CASES))
def test_example_in_the_cpu_runtime(example: str, tmp_path: Path) -> None:
    shape, extra = CASES[example]
    meta = _sim(example, shape, tmp_path / "sim", *extra)
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    for name, agree in meta["vs_interpreter"].items():
        assert agree["nonfinite_mismatch"] == 0, name
        dtype = "fp16" if name == "o" else None
        bound = 4 * ULP[dtype] * max(agree["max_abs"], 1.0) if dtype else 1e-5
        print(f"{example} {name}: max|sim - interpreter| = {agree['max_abs_diff']:.3e}")
        assert agree["max_abs_diff"] <= bound, (name, agree)


def test_dropout_masks_are_the_interpreter_s(tmp_path: Path) -> None:
    """q = 0 makes the probabilities uniform and V = I reads them back: o != 0 is exactly
    the keep mask, which must be the same in the CPU runtime and the interpreter."""
    n = 128
    shape = f"B=1,N=4,Sq={n},Skv={n},D={n}"
    run = [
        sys.executable,
        "-m",
        "fadsl",
        "run",
        str(ROOT / "examples" / "dropout.py"),
        "--shape",
        shape,
        "-o",
        str(tmp_path / "seeded"),
    ]
    assert subprocess.run(run, cwd=ROOT, capture_output=True).returncode == 0
    inputs = tmp_path / "seeded"
    np.zeros((1, 4, n, n), np.float16).tofile(inputs / "q.bin")
    np.broadcast_to(np.eye(n, dtype=np.float16), (1, 4, n, n)).tofile(inputs / "v.bin")
    meta = _sim("dropout", shape, tmp_path / "sim", "--inputs", str(inputs))
    assert meta["vs_interpreter"]["o"]["max_abs_diff"] == 0.0
    o = np.fromfile(tmp_path / "sim" / "o.bin", np.float16).reshape(1, 4, n, n)
    from fadsl.rng import dropout_keep, philox_uniform

    seed = np.fromfile(inputs / "seed.bin", np.int32)
    offset = int(np.fromfile(inputs / "offset.bin", np.int32)[0])
    rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
    u = philox_uniform(
        int(seed[0]), int(seed[1]), offset, np.arange(4)[:, None, None], rows, cols
    )
    keep = dropout_keep(u, 0.1) & (cols <= rows)  # the example is causal
    np.testing.assert_array_equal(o[0] != 0, keep)


ROW_MASK = """import fadsl as fd


def late_rows(b, h, q_idx, kv_idx):
    return ((q_idx >= 40) | (kv_idx < 0)) & ((q_idx // 48) >= (kv_idx // 48))


def stripes(score, b, h, q_idx, kv_idx):
    return score + 0.25 * ((kv_idx % 7) - 3)


kernel = fd.attention(name="late_rows", mask_mod=late_rows, score_mod=stripes,
                      return_lse=True)
"""


def test_row_conditions_integer_division_and_empty_rows_in_the_cpu_runtime(
    tmp_path: Path,
) -> None:
    """A per-row condition ([block_q, 1] against a scalar) and integer // and % on
    positions lower to vector code; rows 0..39 keep no key, so the generated code must
    give them output 0 and LSE -inf."""
    src = tmp_path / "late_rows.py"
    src.write_text(ROW_MASK)
    cmd = [
        sys.executable,
        "-m",
        "fadsl",
        "sim",
        str(src),
        "--shape",
        "B=1,N=2,Sq=200,Skv=150,D=64",
        "--set",
        "block_q=64",
        "--set",
        "block_kv=64",
        "-o",
        str(tmp_path / "sim"),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((tmp_path / "sim" / "meta.json").read_text())
    assert all(v["passed"] for v in meta["check"].values())
    assert meta["vs_interpreter"]["o"]["max_abs_diff"] <= 4 * ULP["fp16"]
    o = np.fromfile(tmp_path / "sim" / "o.bin", np.float16).reshape(1, 2, 200, 64)
    lse = np.fromfile(tmp_path / "sim" / "lse.bin", np.float32).reshape(1, 2, 200)
    assert (o[:, :, :40] == 0).all() and np.isneginf(lse[:, :, :40]).all()
    assert np.isfinite(lse[:, :, 40:]).all()


SIGMOID_GATE = """import fadsl as fd


def gate(score, b, h, q_idx, kv_idx):
    return score + fd.sigmoid(score) - 4.0 * fd.sigmoid((q_idx - kv_idx - 64) * 0.125)


kernel = fd.attention(name="sigmoid_gate", score_mod=gate, causal=True, return_lse=True)
"""


def test_a_score_mod_with_sigmoid_in_the_cpu_runtime(tmp_path: Path) -> None:
    """fd.sigmoid lowers to Muls/Duplicate/Exp/Adds/Div; the generated code passes the
    tolerance rule and agrees with the interpreter, which rounds the same steps."""
    src = tmp_path / "sigmoid_gate.py"
    src.write_text(SIGMOID_GATE)
    meta = _sim(src, "B=1,N=2,Sq=200,Skv=260,D=64", tmp_path / "sim")
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    assert meta["vs_interpreter"]["o"]["nonfinite_mismatch"] == 0
    assert meta["vs_interpreter"]["o"]["max_abs_diff"] <= 4 * ULP["fp16"]
    assert meta["vs_interpreter"]["lse"]["max_abs_diff"] <= 1e-5
