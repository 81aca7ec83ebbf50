"""fd.sin / fd.cos of tiles of positions in mods (issue 29, item 1): a vector-unit
sequence written by fadsl/frontend/tile_trig.py, against float64 numpy sin / cos."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from attkit import NEEDS_GXX, ROOT, assert_passes, run
from test_mod_scalar_math import ULP, read_bin

import fadsl as fd


def rotary_positions(score, b, h, q_idx, kv_idx):
    theta = fd.cos(q_idx * 0.37 - kv_idx * 0.21) + fd.sin(kv_idx * 0.05 + h)
    return score + 0.5 * theta


def pos_bias(s, h, qi, ki):
    return s + 0.5 * (np.cos(qi * 0.37 - ki * 0.21) + np.sin(ki * 0.05 + h))


def reference(x: dict[str, np.ndarray]) -> np.ndarray:
    q, k, v = (x[n].astype(np.float64) for n in ("q", "k", "v"))
    k, v = (np.repeat(t, q.shape[1] // t.shape[1], axis=1) for t in (k, v))
    s = q @ k.transpose(0, 1, 3, 2) * q.shape[-1] ** -0.5
    _, n, sq, skv = s.shape
    h = np.arange(n, dtype=np.float64)[None, :, None, None]
    qi, ki = np.arange(sq)[:, None], np.arange(skv)[None, :]
    s = pos_bias(s, h, qi, ki)
    s = np.where(ki <= qi + (skv - sq), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p @ v) / p.sum(axis=-1, keepdims=True)


KERNEL = fd.attention(name="rotary_positions", score_mod=rotary_positions, causal=True)
SHAPE = dict(B=1, N=4, Nkv=2, Sq=200, Skv=300, D=32)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_trig_of_position_tiles_matches_float64(dtype: str) -> None:
    r = run(KERNEL, SHAPE, dtype)
    assert_passes(r)
    atol = 4e-3 if dtype == "fp16" else 2.5e-2
    np.testing.assert_allclose(
        r.out["o"].astype(np.float64), reference(r.inputs), rtol=0, atol=atol
    )


def test_the_vector_sequence_is_within_its_documented_error() -> None:
    """tile_trig's sequence run on float32 numpy arrays (the same ops in f32): within
    1.3e-7 absolute and 2 ulp where |value| > 0.01, for |x| < 1e4."""
    from test_mod_scalar_math import ulps

    from fadsl.frontend.tile_trig import sin_cos

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-4, 4, 50000), rng.uniform(-1e4, 1e4, 50000)])
    x = x.astype(np.float32)
    for cos, fn in ((False, np.sin), (True, np.cos)):
        got = sin_cos(x, cos)
        assert got.dtype == np.float32
        want = fn(x.astype(np.float64))
        assert np.abs(got - want).max() <= 1.3e-7
        big = np.abs(want) > 0.01
        err = ulps(got.astype(np.float64), want.astype(np.float32).astype(np.float64))
        assert err[big].max() <= 2.0


SOURCE = """
import fadsl as fd


def rotary_positions(score, b, h, q_idx, kv_idx):
    theta = fd.cos(q_idx * 0.37 - kv_idx * 0.21) + fd.sin(kv_idx * 0.05 + h)
    return score + 0.5 * theta


kernel = fd.attention(name="rotary_positions", score_mod=rotary_positions, causal=True)
"""


@pytest.mark.cpu_runtime
@NEEDS_GXX
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_trig_of_position_tiles_in_the_cpu_runtime(dtype: str, tmp_path: Path) -> None:
    """One build per dtype: GQA, causal, tails in Sq and Skv (blocks of 64)."""
    src = tmp_path / "kernel.py"
    src.write_text(SOURCE)
    out = tmp_path / "sim"
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "-o", str(out), "--shape"]
    cmd += ["B=1,N=4,Nkv=2,Sq=100,Skv=150,D=32", "--dtype", dtype]
    cmd += ["--set", "block_q=64", "--set", "block_kv=64"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    assert meta["vs_interpreter"]["o"]["max_abs_diff"] <= 4 * ULP[dtype]
    dims = {"q": (1, 4, 100, 32), "k": (1, 2, 150, 32), "v": (1, 2, 150, 32)}
    data = {n: read_bin(out / f"{n}.bin", dtype, s) for n, s in dims.items()}
    o = read_bin(out / "o.bin", dtype, dims["q"])
    atol = 4e-3 if dtype == "fp16" else 2.5e-2
    np.testing.assert_allclose(o, reference(data), rtol=0, atol=atol)


shift = fd.tensor("shift", "N", init=lambda s, g: g.uniform(-2.0, 2.0, s),
                  requires_grad=True)  # fmt: skip


def wavy_score(score, b, h, q_idx, kv_idx):
    return score + 0.5 * fd.sin(score * 1.3) + fd.cos(kv_idx * 0.2 + shift[h])


def test_gradients_through_tile_trig_match_finite_differences() -> None:
    """dq, dk, dv through sin of the score and d shift through cos of positions plus a
    per-head tensor: the reduction's floors are constants to the backward, which
    differentiates the polynomial (float64 central differences, fp32 kernel)."""
    from test_tensor_grads import SHAPE as GSHAPE
    from test_tensor_grads import TILES, _finite_difference, _positions

    from fadsl.backends.interp import interpret
    from fadsl.io import runio
    from fadsl.passes import run_pipeline

    from attkit import bind

    kdef = fd.attention_backward(
        name="g_wavy", score_mod=wavy_score, causal=True, dtype="fp32"
    )
    b = bind(kdef, GSHAPE, "fp32", TILES)
    data = runio.make_inputs(b, 1)
    got = interpret(run_pipeline(b.kernel), b.env(), data).outputs
    x = {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in data.items()}
    rng = np.random.default_rng(0)
    for t in ("q", "k", "v", "shift"):
        at = _positions(x[t].shape, 12, rng)
        want = _finite_difference(kdef.spec, x, b.env(), t, at)
        have = np.array([got["d" + t][e] for e in at], np.float64)
        tol = 2e-4 * max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(have, want, rtol=0, atol=tol, err_msg=f"d{t}")
        assert np.abs(want).max() > 1e-3, f"d{t} is ~0: the test would not notice"


BACKWARD_SOURCE = """
import fadsl as fd


def wavy(score, b, h, q_idx, kv_idx):
    return score + 0.5 * fd.sin(score * 1.3) + fd.cos(kv_idx * 0.2 + h)


kernel = fd.attention_backward(name="wavy_bwd", score_mod=wavy, causal=True)
"""


@pytest.mark.cpu_runtime
@NEEDS_GXX
def test_backward_through_tile_sin_in_the_cpu_runtime(tmp_path: Path) -> None:
    """dq, dk, dv of sin(score) + cos(positions) through fadsl sim (fp16, GQA, causal,
    tails): the tolerance rule against float64 and the interpreter."""
    src = tmp_path / "kernel.py"
    src.write_text(BACKWARD_SOURCE)
    out = tmp_path / "sim"
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "-o", str(out), "--shape"]
    cmd += ["B=1,N=4,Nkv=2,Sq=100,Skv=130,D=32", "--dtype", "fp16"]
    cmd += ["--set", "block_q=64", "--set", "block_kv=64"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert set(meta["check"]) >= {"dq", "dk", "dv"}
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    for g in ("dq", "dk", "dv"):
        assert meta["vs_interpreter"][g]["max_abs_diff"] <= 4 * ULP["fp16"]
