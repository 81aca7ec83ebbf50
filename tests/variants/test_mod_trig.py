"""sin, cos, tanh and sigmoid of per-task scalars in mods (issue 29, item 1).

A rotary-like ``cos(h * theta)`` head bias and ALiBi-like slopes through sin / tanh /
sigmoid of the head and a shape symbol: ``scalar_def``s computed once per task by the
scalar unit (fadsl_tile.h's ScalarSin ...). Checked against float64 attention written
out here in numpy, in the interpreter and through ``fadsl sim``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from attkit import NEEDS_GXX, ROOT, assert_passes, bind, run
from test_mod_scalar_math import ULP, read_bin

import fadsl as fd


def rotary_head(score, b, h, q_idx, kv_idx):
    theta = fd.cos(h * 0.9 + 0.25) + fd.sin(fd.shape.N * 0.3 - h)
    return score + theta * (kv_idx - q_idx) * 0.05


def squashed_slopes(score, b, h, q_idx, kv_idx):
    slope = fd.tanh(h * 0.6 - 1.0) + fd.sigmoid(2.0 - h * 1.5)
    return score * (1.0 + 0.25 * fd.sin(h * 2.0)) + slope * (kv_idx - q_idx) * 0.03


def bias(name: str, s, h, qi, ki, n):
    rel = ki - qi
    if name == "rotary_head":
        return s + (np.cos(h * 0.9 + 0.25) + np.sin(n * 0.3 - h)) * rel * 0.05
    slope = np.tanh(h * 0.6 - 1.0) + 1.0 / (1.0 + np.exp(-(2.0 - h * 1.5)))
    return s * (1.0 + 0.25 * np.sin(h * 2.0)) + slope * rel * 0.03


def reference(name: str, x: dict[str, np.ndarray], causal: bool) -> np.ndarray:
    q, k, v = (x[n].astype(np.float64) for n in ("q", "k", "v"))
    k, v = (np.repeat(t, q.shape[1] // t.shape[1], axis=1) for t in (k, v))
    s = q @ k.transpose(0, 1, 3, 2) * q.shape[-1] ** -0.5
    _, n, sq, skv = s.shape
    h = np.arange(n, dtype=np.float64)[None, :, None, None]
    qi, ki = np.arange(sq)[:, None], np.arange(skv)[None, :]
    s = bias(name, s, h, qi, ki, n)
    if causal:
        s = np.where(ki <= qi + (skv - sq), s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - m)
    return (p @ v) / p.sum(axis=-1, keepdims=True)


KERNELS = {
    "rotary_head": fd.attention(name="rotary_head", score_mod=rotary_head, causal=True),
    "squashed_slopes": fd.attention(name="squashed_slopes", score_mod=squashed_slopes),
}
SHAPE = dict(B=1, N=4, Nkv=2, Sq=200, Skv=300, D=32)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_trig_of_scalars_in_mods_matches_float64(name: str, dtype: str) -> None:
    r = run(KERNELS[name], SHAPE, dtype)
    assert_passes(r)
    ref = reference(name, r.inputs, causal=KERNELS[name].spec.causal)
    atol = 4e-3 if dtype == "fp16" else 2.5e-2
    np.testing.assert_allclose(r.out["o"].astype(np.float64), ref, rtol=0, atol=atol)


ROTARY_SOURCE = """
import fadsl as fd


def rotary_head(score, b, h, q_idx, kv_idx):
    theta = fd.cos(h * 0.9 + 0.25) + fd.sin(fd.shape.N * 0.3 - h)
    return score + theta * (kv_idx - q_idx) * 0.05


kernel = fd.attention(name="rotary_head", score_mod=rotary_head, causal=True)
"""


SQUASHED_SOURCE = """
import fadsl as fd


def squashed_slopes(score, b, h, q_idx, kv_idx):
    slope = fd.tanh(h * 0.6 - 1.0) + fd.sigmoid(2.0 - h * 1.5)
    return score * (1.0 + 0.25 * fd.sin(h * 2.0)) + slope * (kv_idx - q_idx) * 0.03


kernel = fd.attention(name="squashed_slopes", score_mod=squashed_slopes)
"""
SIMS = {"rotary_head": (ROTARY_SOURCE, "fp16"), "squashed_slopes": (SQUASHED_SOURCE, "bf16")}


@pytest.mark.cpu_runtime
@NEEDS_GXX
@pytest.mark.parametrize("name", sorted(SIMS))
def test_scalar_trig_in_the_cpu_runtime(name: str, tmp_path: Path) -> None:
    """One build each (cos + sin at fp16; tanh + sigmoid + sin at bf16): GQA, tails
    in Sq and Skv (blocks of 64)."""
    source, dtype = SIMS[name]
    src = tmp_path / "kernel.py"
    src.write_text(source)
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
    ref = reference(name, data, causal=KERNELS[name].spec.causal)
    atol = 4e-3 if dtype == "fp16" else 2.5e-2
    np.testing.assert_allclose(o, ref, rtol=0, atol=atol)


def test_scalar_trig_is_a_per_task_scalar_unit_call(tmp_path: Path) -> None:
    """The generated kernel computes cos / sin of the head once per task (before the
    KV loop), with fadsl_tile.h's ScalarCos / ScalarSin."""
    src = tmp_path / "kernel.py"
    src.write_text(ROTARY_SOURCE)
    cmd = [sys.executable, "-m", "fadsl", "compile", str(src), "-o", str(tmp_path / "g")]
    cmd += ["--set", "block_q=64", "--set", "block_kv=64", "--quiet"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (tmp_path / "g" / "rotary_head_kernel.cpp").read_text()
    assert "fadsl::ScalarCos((0.25f + (0.9f * h)))" in text
    assert "fadsl::ScalarSin(" in text


phase = fd.tensor("phase", "N", init=lambda s, g: g.uniform(-2.0, 2.0, s),
                  requires_grad=True)  # fmt: skip
tilt = fd.tensor("tilt", "N", init=lambda s, g: g.uniform(-1.0, 1.0, s),
                 requires_grad=True)  # fmt: skip


def trig_of_tensors(score, b, h, q_idx, kv_idx):
    gain = 1.0 + 0.5 * fd.sin(phase[h]) + 0.25 * fd.sigmoid(tilt[h])
    return score * gain + (fd.tanh(tilt[h]) + fd.cos(phase[h])) * (kv_idx - q_idx) * 0.1


def test_gradients_of_tensors_through_scalar_trig_match_finite_differences() -> None:
    """d phase / d tilt through sin, cos, tanh and sigmoid of per-head values
    (mod_tensor_grad's rules), against float64 central differences."""
    from test_tensor_grads import SHAPE as GSHAPE
    from test_tensor_grads import TILES, _finite_difference

    from fadsl.backends.interp import interpret
    from fadsl.io import runio
    from fadsl.passes import run_pipeline

    kdef = fd.attention_backward(
        name="g_trig", score_mod=trig_of_tensors, causal=True, dtype="fp32"
    )
    b = bind(kdef, GSHAPE, "fp32", TILES)
    data = runio.make_inputs(b, 1)
    got = interpret(run_pipeline(b.kernel), b.env(), data).outputs
    x = {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in data.items()}
    for t in ("phase", "tilt"):
        at = list(np.ndindex(x[t].shape))
        want = _finite_difference(kdef.spec, x, b.env(), t, at)
        have = np.array([got["d" + t][e] for e in at], np.float64)
        tol = 2e-4 * max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(have, want, rtol=0, atol=tol, err_msg=f"d{t}")
        assert np.abs(want).max() > 1e-3, f"d{t} is ~0: the test would not notice"


LOADED_SOURCE = """
import fadsl as fd

phase = fd.tensor("phase", "N", init=lambda s, g: g.uniform(-3.0, 3.0, s))


def loaded_phase(score, b, h, q_idx, kv_idx):
    p = phase[h]
    return score + (fd.sin(p) + fd.cos(p * 2.0) * fd.tanh(p)) * (kv_idx - q_idx) * 0.05


kernel = fd.attention(name="loaded_phase", score_mod=loaded_phase, causal=True)
"""


@pytest.mark.cpu_runtime
@NEEDS_GXX
def test_trig_of_a_loaded_scalar_in_the_cpu_runtime(tmp_path: Path) -> None:
    """sin / cos / tanh of a value read from a per-head tensor (fp16, GQA, causal,
    tails): the tolerance rule against float64 and 4 fp16 units of the interpreter."""
    src = tmp_path / "kernel.py"
    src.write_text(LOADED_SOURCE)
    out = tmp_path / "sim"
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "-o", str(out), "--shape"]
    cmd += ["B=1,N=4,Nkv=2,Sq=100,Skv=150,D=32", "--dtype", "fp16"]
    cmd += ["--set", "block_q=64", "--set", "block_kv=64"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    assert meta["vs_interpreter"]["o"]["max_abs_diff"] <= 4 * ULP["fp16"]
