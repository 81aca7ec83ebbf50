"""Block sparsity and dropout of ``fd.attention`` kernels, counted and checked exactly.

Causal / window bounds must compute exactly the KV blocks the diagonal band touches; a
mask_mod's block mask must list exactly the partly and wholly kept blocks, and the
kernel must run the partial ones with masks and the full ones without; dropout must keep
1 - p of the probabilities, with the mask of ``fadsl.rng`` at every position.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from attkit import assert_passes, run

import fadsl as fd
from fadsl.frontend.attention_inputs import classify_blocks
from fadsl.rng import dropout_keep, philox_uniform

ROOT = Path(__file__).resolve().parents[2]


def _band_blocks(sq: int, skv: int, bq: int, bk: int, left: int, right: int) -> int:
    """KV blocks with at least one kept score, by brute force over positions."""
    r, c = np.arange(sq)[:, None], np.arange(skv)[None, :]
    shift = skv - sq
    keep = np.ones((sq, skv), bool)
    if left >= 0:
        keep &= c >= r + shift - left
    if right >= 0:
        keep &= c <= r + shift + right
    part, full = classify_blocks(keep, bq, bk)
    return int(part.sum() + full.sum())


@pytest.mark.parametrize(
    "kw,left,right",
    [
        (dict(causal=True), -1, 0),
        (dict(window=(100, 30)), 100, 30),
        (dict(window=(64, -1), causal=True), 64, 0),
        (dict(window=(-1, 5)), -1, 5),
    ],
)
@pytest.mark.parametrize("sq,skv", [(300, 300), (130, 400), (400, 130)])
def test_band_bounds_compute_exactly_the_touched_blocks(
    kw: dict, left: int, right: int, sq: int, skv: int
) -> None:
    k = fd.attention(name="band", **kw)
    r = run(k, dict(B=1, N=1, Sq=sq, Skv=skv, D=64))
    assert_passes(r)
    done, total = k.kv_blocks(
        r.binding.shape, r.binding.consts, r.inputs, r.result.loop_stats
    )
    assert total == -(-sq // 64) * -(-skv // 64)
    assert done == _band_blocks(sq, skv, 64, 64, left, right)


def local(b, h, q_idx, kv_idx):
    return ((q_idx - kv_idx) < 150) & ((kv_idx - q_idx) < 150)


def test_block_mask_lists_partial_and_full_blocks() -> None:
    k = fd.attention(name="local", mask_mod=local, return_lse=True)
    shape = dict(B=1, N=2, Sq=520, Skv=520, D=64)
    r = run(k, shape)
    assert_passes(r)
    part, full = classify_blocks(
        (np.abs(np.arange(520)[:, None] - np.arange(520)[None, :]) < 150), 64, 64
    )
    assert part.sum() and full.sum()
    np.testing.assert_array_equal(r.inputs["kv_num_blocks"][0, 0], part.sum(axis=1))
    np.testing.assert_array_equal(
        r.inputs["full_kv_num_blocks"][0, 0], full.sum(axis=1)
    )
    for i in range(part.shape[0]):
        n = part[i].sum()
        np.testing.assert_array_equal(
            r.inputs["kv_indices"][0, 0, i, :n], np.flatnonzero(part[i])
        )
    # the partial loop computes the partial blocks, the unmasked loop the full ones
    assert r.result.loop_stats["jp"][0] == 2 * part.sum()
    assert r.result.loop_stats["jf"][0] == 2 * full.sum()
    done, total = k.kv_blocks(
        r.binding.shape, r.binding.consts, r.inputs, r.result.loop_stats
    )
    assert (done, total) == (2 * (part.sum() + full.sum()), 2 * 9 * 9)
    assert done < total


def test_full_blocks_skip_mask_evaluation() -> None:
    """A block mask that wrongly calls a block full is visible: its scores stay."""
    k = fd.attention(name="local2", mask_mod=local)
    r = run(k, dict(B=1, N=1, Sq=256, Skv=256, D=64))
    assert_passes(r)
    lied = dict(r.inputs)
    lied["full_kv_num_blocks"] = (
        r.inputs["full_kv_num_blocks"] + r.inputs["kv_num_blocks"]
    )
    idx = r.inputs["full_kv_indices"].copy()
    for i in range(4):
        nf, npart = (
            r.inputs["full_kv_num_blocks"][0, 0, i],
            r.inputs["kv_num_blocks"][0, 0, i],
        )
        idx[0, 0, i, nf : nf + npart] = r.inputs["kv_indices"][0, 0, i, :npart]
    lied["full_kv_indices"] = idx
    lied["kv_num_blocks"] = np.zeros_like(r.inputs["kv_num_blocks"])
    wrong = run(k, dict(B=1, N=1, Sq=256, Skv=256, D=64), inputs=lied)
    assert not wrong.check.passed


def test_dropout_keeps_one_minus_p_with_the_rule_s_mask() -> None:
    """1e6 probabilities: q = 0 makes P uniform, V = I reads P (times 1/(1-p)) back."""
    p, n = 0.3, 128
    k = fd.attention(name="drop", dropout_p=p)
    shape = dict(B=4, N=16, Sq=n, Skv=n, D=n)
    first = run(k, shape)
    eye = np.broadcast_to(np.eye(n, dtype=np.float16), (4, 16, n, n)).copy()
    inputs = dict(first.inputs, q=np.zeros_like(first.inputs["q"]), v=eye)
    r = run(k, shape, inputs=inputs)
    kept = r.out["o"] != 0
    assert kept.size == 4 * 16 * n * n >= 10**6
    assert abs(kept.mean() - (1 - p)) < 0.01
    seed, off = r.inputs["seed"], int(r.inputs["offset"][0])
    b, h = np.arange(4)[:, None, None, None], np.arange(16)[None, :, None, None]
    rows, cols = np.arange(n)[:, None], np.arange(n)[None, :]
    u = philox_uniform(int(seed[0]), int(seed[1]), off, b * 16 + h, rows, cols)
    np.testing.assert_array_equal(kept, dropout_keep(u, p))
    np.testing.assert_allclose(
        r.out["o"][kept].astype(np.float32), 1 / n / (1 - p), rtol=1e-3
    )


def test_fadsl_run_reports_skipped_blocks_and_computes_missing_block_masks(
    tmp_path: Path,
) -> None:
    src = tmp_path / "local.py"
    src.write_text(
        "import fadsl as fd\n\n\ndef local(b, h, q_idx, kv_idx):\n"
        "    return (q_idx - kv_idx) < 100\n\n\n"
        "kernel = fd.attention(name='loc', mask_mod=local, causal=True)\n"
    )
    shape = "B=1,N=2,Sq=384,Skv=384,D=64"
    cmd = [
        sys.executable,
        "-m",
        "fadsl",
        "run",
        str(src),
        "--shape",
        shape,
        "--set",
        "block_q=64",
        "--set",
        "block_kv=64",
    ]
    first = subprocess.run(
        cmd + ["-o", str(tmp_path / "a")], capture_output=True, text=True, cwd=ROOT
    )
    assert first.returncode == 0, first.stderr
    assert "KV blocks: 30 of 72 computed (58.3% skipped)" in first.stdout  # 15 per head
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    assert meta["kv_blocks"] == {"computed": 30, "total": 72}
    for name in (
        "kv_num_blocks",
        "kv_indices",
        "full_kv_num_blocks",
        "full_kv_indices",
    ):
        (tmp_path / "a" / f"{name}.bin").unlink()
    again = subprocess.run(
        cmd + ["--inputs", str(tmp_path / "a"), "-o", str(tmp_path / "b")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "a" / "o.bin").read_bytes() == (
        tmp_path / "b" / "o.bin"
    ).read_bytes()
