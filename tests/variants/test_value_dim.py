"""A value head dim ``Dv`` other than the query/key head dim ``D`` (docs/variants.md; MLA).

``v`` / ``v_cache`` and ``o`` end in ``Dv``, which defaults to ``D``. In the interpreter:
contiguous layouts (BNSD, BSND, BSH, TND) and a paged decode (GQA heads packed, split-KV)
with D=192, Dv=128 against a float64 reference written here (plain numpy, one sequence
and head at a time) and against the tolerance rule; ``--shape`` without Dv still gives
D-wide values. One ``fadsl sim`` build: causal GQA with Q and KV tails.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from attkit import NEEDS_GXX, ROOT, assert_passes, run, symbol_values

import fadsl as fd
from fadsl.backends.interp import interpret
from fadsl.driver.binding import Binding
from fadsl.io import runio
from fadsl.ir.types import DType
from fadsl.passes import run_pipeline

MLA_LIKE = dict(B=2, N=4, Nkv=2, Sq=100, Skv=150, D=192, Dv=128)


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """float64 softmax(q k^T / sqrt(D)) v for one head: q [Sq, D], k [Skv, D], v [Skv, Dv]."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = q @ k.T / np.sqrt(q.shape[-1])
    if causal:
        sq, skv = s.shape
        s = np.where(
            np.arange(skv)[None, :] <= np.arange(sq)[:, None] + skv - sq, s, -np.inf
        )
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isinf(m), 0.0, m))  # a row that sees no key: output 0
    l = p.sum(axis=-1, keepdims=True)
    return (p / np.where(l == 0.0, 1.0, l)) @ v


def _heads(x: np.ndarray, layout: str, b: int, n: int) -> np.ndarray:
    """[n, S, d] of sequence b of a tensor in ``layout`` (not TND)."""
    if layout == "BNSD":
        return x[b]
    if layout == "BSND":
        return x[b].transpose(1, 0, 2)
    return x[b].reshape(x.shape[1], n, -1).transpose(1, 0, 2)  # BSH


@pytest.mark.parametrize("layout", ["BNSD", "BSND", "BSH"])
def test_value_dim_in_every_fixed_length_layout(layout: str) -> None:
    kdef = fd.attention(name="mla_like", causal=True, layout=layout)
    r = run(kdef, MLA_LIKE)
    assert_passes(r)
    o, inp = r.out["o"], r.inputs
    assert inp["v"].shape[-1] == (2 * 128 if layout == "BSH" else 128)
    assert o.shape[-1] == (4 * 128 if layout == "BSH" else 128)
    assert o.shape[:-1] == inp["q"].shape[:-1]
    group = MLA_LIKE["N"] // MLA_LIKE["Nkv"]
    for b in range(MLA_LIKE["B"]):
        q, k, v = (
            _heads(inp[n], layout, b, MLA_LIKE[h])
            for n, h in (("q", "N"), ("k", "Nkv"), ("v", "Nkv"))
        )
        out = _heads(o, layout, b, MLA_LIKE["N"])
        for h in range(MLA_LIKE["N"]):
            want = attend(q[h], k[h // group], v[h // group], causal=True)
            np.testing.assert_allclose(out[h].astype(np.float64), want, atol=4e-3)


def test_value_dim_with_packed_sequences() -> None:
    kdef = fd.attention(name="mla_varlen", layout="TND", return_lse=True)
    r = run(kdef, dict(MLA_LIKE, B=3, Sq=160, Skv=200))
    assert_passes(r)
    assert r.out["o"].shape == (160, 4, 128)


def test_dv_defaults_to_d() -> None:
    kdef = fd.attention(name="dv_default", layout="BSH")
    kernel = kdef.build({"block_q": 64, "block_kv": 64})
    types = {p.name: str(p.type) for p in kernel.params}
    assert types["v"] == "f16[B, Skv, Dv*Nkv]" and types["o"] == "f16[B, Sq, Dv*N]"
    from fadsl.commands.flags import parse_shape

    values = parse_shape("B=1,N=2,Sq=8,Skv=8,D=64", kernel.shape_syms)
    assert values["Dv"] == 64 and values["Nkv"] == 2
    values = parse_shape("B=1,N=2,Sq=8,Skv=8,D=64,Dv=32", kernel.shape_syms)
    assert values["Dv"] == 32


PAGED = dict(B=3, N=16, Nkv=2, Sq=2, D=192, Dv=128, Pages=24, MaxPages=4)
LENGTHS = np.array([300, 1, 429], np.int32)


def _paged_run(pack_gqa: bool, splits: int) -> tuple[Any, dict, dict]:
    kdef = fd.attention(
        name="mla_decode", paged_kv=True, page_size=128, causal=True, pack_gqa=pack_gqa
    )
    kernel = kdef.build({"block_q": 16, "kv_splits": splits}, DType.F16)
    b = Binding(kernel, symbol_values(kernel, PAGED), {"scale": 192**-0.5}, kdef)
    data = runio.make_inputs(b, 0)
    rng = np.random.default_rng(1)
    data["block_table"] = rng.permutation(24)[:12].reshape(3, 4).astype(np.int32)
    data["seqlens_kv"] = LENGTHS.copy()
    out = interpret(run_pipeline(kernel), b.env(), data).outputs
    return b, data, out


@pytest.mark.parametrize("pack_gqa, splits", [(True, 1), (True, 3), (False, 2)])
def test_paged_decode_with_value_dim(pack_gqa: bool, splits: int) -> None:
    b, data, out = _paged_run(pack_gqa, splits)
    check = runio.check_outputs(b, data, out)
    assert check.passed, [v.line() for v in check.verdicts if not v.passed]
    assert data["v_cache"].shape == (24, 128, 2, 128) and out["o"].shape == (
        3,
        16,
        2,
        128,
    )
    group = PAGED["N"] // PAGED["Nkv"]
    for s in range(PAGED["B"]):
        n = int(LENGTHS[s])
        pages = data["block_table"][s]
        k, v = (
            np.concatenate([data[c][p] for p in pages])[:n]
            for c in ("k_cache", "v_cache")
        )
        for h in range(PAGED["N"]):
            want = attend(data["q"][s, h], k[:, h // group], v[:, h // group], True)
            got = out["o"][s, h].astype(np.float64)
            np.testing.assert_allclose(got, want, atol=4e-3)


SIM_SOURCE = """import fadsl as fd

kernel = fd.attention(name="dv_gqa", causal=True, return_lse=True)
"""
SIM_SHAPE = "B=1,N=4,Nkv=2,Sq=200,Skv=333,D=192,Dv=128"


@pytest.mark.cpu_runtime
@NEEDS_GXX
def test_value_dim_in_the_cpu_runtime(tmp_path: Path) -> None:
    """Causal GQA with Q and KV tails (200 and 333 rows in blocks of 64): the generated
    Ascend C's P @ V and output tiles are Dv wide."""
    src = tmp_path / "dv_gqa.py"
    src.write_text(SIM_SOURCE)
    out = tmp_path / "sim"
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "--shape", SIM_SHAPE]
    cmd += ["--set", "block_q=64", "--set", "block_kv=64", "-o", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    assert meta["vs_interpreter"]["o"]["max_abs_diff"] <= 4 * 2.0**-10
    q, k, v, o = (
        np.fromfile(out / f"{n}.bin", np.float16).reshape(1, h, s, d)
        for n, h, s, d in (
            ("q", 4, 200, 192),
            ("k", 2, 333, 192),
            ("v", 2, 333, 128),
            ("o", 4, 200, 128),
        )
    )
    for h in range(4):
        want = attend(q[0, h], k[0, h // 2], v[0, h // 2], causal=True)
        np.testing.assert_allclose(o[0, h].astype(np.float64), want, atol=4e-3)


BWD_SOURCE = """import fadsl as fd

kernel = fd.attention_backward(name="dv_bwd", causal=True)
"""


@pytest.mark.cpu_runtime
@NEEDS_GXX
def test_value_dim_backward_in_the_cpu_runtime(tmp_path: Path) -> None:
    """The backward with Dv != D at bf16 (the forward above is fp16): causal GQA with
    Q and KV tails; dq, dk (D wide) and dv (Dv wide) from the generated Ascend C equal
    the interpreter's and pass the tolerance rule against the float64 reference."""
    src = tmp_path / "dv_bwd.py"
    src.write_text(BWD_SOURCE)
    out = tmp_path / "sim"
    shape = "B=1,N=4,Nkv=2,Sq=100,Skv=130,D=64,Dv=32"
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "--shape", shape]
    cmd += ["--dtype", "bf16", "--set", "block_q=64", "--set", "block_kv=64"]
    proc = subprocess.run(
        cmd + ["-o", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert set(meta["check"]) == {"dq", "dk", "dv"}
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    assert all(v["max_abs_diff"] <= 2.0**-7 for v in meta["vs_interpreter"].values())


MLA = dict(B=2, N=16, Nkv=1, Sq=1, D=576, Dv=512, Pages=160, MaxPages=64)
MLA_SOURCE = """import fadsl as fd

kernel = fd.attention(name="mla", paged_kv=True, page_size=64, layout="BSND")
"""


def test_mla_decode_shape_in_the_interpreter() -> None:
    """DeepSeek-style MLA decode (issue 30 item 3's shape): one latent KV head,
    D = 576 (512 latent + 64 rotary), Dv = 512, 16 query heads packed into one tile,
    pages of 64 and 4K keys, split-KV over 4 parts; V is its own cache here (the MLA
    kernel proper reads it as the first 512 columns of K)."""
    kdef = fd.attention(name="mla", paged_kv=True, page_size=64, layout="BSND")
    kernel = kdef.build({"block_q": 16, "kv_splits": 4}, DType.F16)
    b = Binding(kernel, symbol_values(kernel, MLA), {"scale": 576**-0.5}, kdef)
    data = runio.make_inputs(b, 0)
    rng = np.random.default_rng(2)
    data["block_table"] = rng.permutation(160)[:128].reshape(2, 64).astype(np.int32)
    lengths = np.array([4096, 1777], np.int32)
    data["seqlens_kv"] = lengths.copy()
    out = interpret(run_pipeline(kernel), b.env(), data).outputs
    assert out["o"].shape == (2, 1, 16, 512)
    for s in range(2):
        pages = data["block_table"][s]
        k, v = (
            np.concatenate([data[c][p] for p in pages])[: lengths[s], 0]
            for c in ("k_cache", "v_cache")
        )
        want = np.stack([attend(data["q"][s, 0, h], k, v, False) for h in range(16)])
        np.testing.assert_allclose(out["o"][s, 0].astype(np.float64), want, atol=2e-3)


@pytest.mark.parametrize("target", ["ascend910b2", "ascend910_9392"])
def test_mla_decode_fits_910b2_and_a3(target: str, tmp_path: Path) -> None:
    src = tmp_path / "mla.py"
    src.write_text(MLA_SOURCE)
    shape = ",".join(f"{k}={v}" for k, v in dict(MLA, B=8, Pages=512).items())
    cmd = [sys.executable, "-m", "fadsl", "check", str(src), "--shape", shape]
    proc = subprocess.run(
        cmd + ["--target", target], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"mla fits on {target}" in proc.stdout


@pytest.mark.cpu_runtime
@NEEDS_GXX
def test_mla_decode_in_the_cpu_runtime(tmp_path: Path) -> None:
    """The MLA decode shape through ``fadsl sim`` (a table of 4K keys; the seeded
    lengths are 1091 keys, 18 pages, and 1; split-KV over 4 parts): the generated
    kernel passes the tolerance rule and agrees with the interpreter (the interpreter
    test above runs a full 4096-key sequence)."""
    src = tmp_path / "mla.py"
    src.write_text(MLA_SOURCE)
    out = tmp_path / "sim"
    shape = ",".join(f"{k}={v}" for k, v in MLA.items())
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "--shape", shape]
    cmd += ["--set", "kv_splits=4", "-o", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    assert meta["vs_interpreter"]["o"]["max_abs_diff"] <= 4 * 2.0**-10
    lengths = np.fromfile(out / "seqlens_kv.bin", np.int32)
    assert lengths.max() > 1024 and lengths[-1] == 1, lengths
