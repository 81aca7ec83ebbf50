"""MLA decode (issue 30 item 3): ``fd.attention(paged_kv=True, v_from_k=True)``.

DeepSeek-style multi-head latent attention: one latent KV head, D = 576 (512 latent +
64 rotary), Dv = 512, 16-128 query heads packed into the cube's M dimension, pages of
64, split-KV. With ``v_from_k`` there is no ``v_cache``: V is the first Dv columns of
``k_cache``. Checked against a float64 reference written here (V sliced with numpy),
against the two-cache kernel fed ``v_cache = k_cache[..., :Dv]``, through ``fadsl
sim`` with a full 4096-key sequence, and ``fadsl check`` on 910B2 and A3 against a
footprint counted here from the tiles the kernel holds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from attkit import NEEDS_GXX, ROOT, symbol_values

import fadsl as fd
from fadsl.backends.interp import interpret
from fadsl.driver.binding import Binding
from fadsl.errors import UsageError
from fadsl.io import runio
from fadsl.ir.types import DType
from fadsl.passes import run_pipeline

MLA = dict(B=2, N=16, Nkv=1, Sq=1, D=576, Dv=512, Pages=160, MaxPages=64)
LENGTHS = np.array([4096, 1777], np.int32)  # 4K keys (64 pages of 64), and a tail
SOURCE = """import fadsl as fd

kernel = fd.attention(name="mla", paged_kv=True, page_size=64, layout="BSND", v_from_k=True)
"""


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """float64 softmax(q k^T / sqrt(D)) v: q [N, D], k [S, D], v [S, Dv]."""
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = q @ k.T / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def want(q: np.ndarray, k_cache: np.ndarray, table: np.ndarray) -> np.ndarray:
    """[B, N, Dv]: each sequence's pages gathered here, V = K's first 512 columns."""
    out = []
    for b, n in enumerate(LENGTHS):
        k = np.concatenate([k_cache[p] for p in table[b]])[: int(n), 0]
        out.append(attend(q[b, 0], k, k[:, :512]))
    return np.stack(out)


def seeded(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "q": rng.standard_normal((2, 1, 16, 576)).astype(np.float16),
        "k_cache": rng.standard_normal((160, 64, 1, 576)).astype(np.float16),
        "block_table": rng.permutation(160)[:128].reshape(2, 64).astype(np.int32),
        "seqlens_kv": LENGTHS.copy(),
    }


def interp(v_from_k: bool, data: dict[str, np.ndarray]) -> tuple[Any, dict]:
    kdef = fd.attention(
        name="mla", paged_kv=True, page_size=64, layout="BSND", v_from_k=v_from_k
    )
    kernel = kdef.build({"block_q": 16, "kv_splits": 4}, DType.F16)
    b = Binding(kernel, symbol_values(kernel, MLA), {"scale": 576**-0.5}, kdef)
    return b, interpret(run_pipeline(kernel), b.env(), data).outputs


def test_v_from_k_reads_v_from_the_latent() -> None:
    data = seeded(np.random.default_rng(3))
    b, out = interp(True, data)
    assert [p.name for p in b.kernel.params if p.kind.value == "in"] == [
        "q",
        "k_cache",
        "block_table",
        "seqlens_kv",
    ]
    got = out["o"][:, 0].astype(np.float64)
    np.testing.assert_allclose(
        got, want(data["q"], data["k_cache"], data["block_table"]), atol=2e-3
    )
    check = runio.check_outputs(b, data, out)  # the library's own reference agrees
    assert check.passed, [v.line() for v in check.verdicts]
    two = dict(data, v_cache=np.ascontiguousarray(data["k_cache"][..., :512]))
    _, out2 = interp(False, two)
    np.testing.assert_array_equal(out["o"], out2["o"])  # the same computation


def test_v_from_k_needs_a_paged_cache() -> None:
    with pytest.raises(UsageError, match="v_from_k=True without paged_kv=True") as e:
        fd.attention(name="mla", v_from_k=True)
    assert "[E120]" in str(e.value) and e.value.loc.file == __file__


def test_v_from_k_needs_dv_at_most_d() -> None:
    kdef = fd.attention(name="mla", paged_kv=True, page_size=64, v_from_k=True)
    with pytest.raises(UsageError, match="Dv must be at most D") as e:
        kdef.check_shape({"D": 64, "Dv": 128})
    assert "[E121]" in str(e.value) and e.value.loc.file == __file__
    kdef.check_shape({"D": 576, "Dv": 512})


def test_v_from_k_needs_dv_given(tmp_path: Path) -> None:
    """Left out, Dv would default to D and V silently be the whole 576-wide row:
    refused (E134) from the command line and from Python; Dv=D written out is legal."""
    src = tmp_path / "mla.py"
    src.write_text(SOURCE)
    shape = "B=1,N=16,Nkv=1,Sq=1,D=576,Pages=8,MaxPages=4"
    cmd = [sys.executable, "-m", "fadsl", "check", str(src), "--shape", shape]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode != 0 and "[E134]" in proc.stderr, proc.stdout + proc.stderr
    assert "does not give Dv" in proc.stderr and "mla.py:3" in proc.stderr
    cmd[-1] = shape + ",Dv=576"
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kdef = fd.attention(name="mla", paged_kv=True, page_size=64, v_from_k=True)
    rng = np.random.default_rng(1)
    data = {
        "q": rng.standard_normal((1, 1, 16, 576)).astype(np.float16),
        "k_cache": rng.standard_normal((8, 64, 1, 576)).astype(np.float16),
        "block_table": np.arange(4, dtype=np.int32).reshape(1, 4),
        "seqlens_kv": np.array([100], np.int32),
    }
    with pytest.raises(UsageError, match="does not give Dv") as e:
        fd.interpret(kdef, consts={"kv_splits": 2}, **data)
    assert "[E134]" in str(e.value) and e.value.loc.file == __file__
    out = fd.interpret(kdef, consts={"kv_splits": 2}, shape={"Dv": 512}, **data)
    assert out["o"].shape == (1, 1, 16, 512)


def footprint(block_q: int, block_kv: int, d: int, dv: int) -> dict[str, int]:
    """The cube's bytes counted from the tiles the kernel holds (fp16 operands, f32
    results): K [block_kv, D] and V [block_kv, Dv] double-buffered in L1 with Q
    [block_q, D] and P [block_q, block_kv]; Q resident in L0A with two P tiles; L0B
    the larger of a K sub-dot (32 keys x D; a [64, 576] K does not fit 64 KiB) and a V
    [block_kv, Dv]; L0C two f32 results, the larger being P @ V [block_q, Dv]."""
    return {
        "L1": 2 * 2 * block_kv * d
        + 2 * 2 * block_kv * dv
        + 2 * block_q * d
        + 2 * block_q * block_kv,
        "L0A": 2 * block_q * d + 2 * 2 * block_q * block_kv,
        "L0B": 2 * max(32 * d, block_kv * dv),
        "L0C": 2 * 4 * block_q * max(32, dv),
    }


@pytest.mark.parametrize("n", [16, 128])
@pytest.mark.parametrize("target", ["ascend910b2", "ascend910_9392"])
def test_mla_decode_fits_910b2_and_a3(target: str, n: int, tmp_path: Path) -> None:
    src = tmp_path / "mla.py"
    src.write_text(SOURCE)
    shape = ",".join(f"{k}={v}" for k, v in dict(MLA, B=8, N=n, Pages=512).items())
    cmd = [sys.executable, "-m", "fadsl", "check", str(src), "--shape", shape]
    cmd += ["--target", target, "--json", "--set", "kv_splits=4"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["fits"] is True
    chip = json.loads((ROOT / "fadsl" / "targets" / f"{target}.json").read_text())
    used = {s["space"]: s for s in report["spaces"]}
    for space, count in footprint(16, 64, 576, 512).items():
        assert used[space]["used"] == count, (space, used[space])
        assert used[space]["capacity"] == chip[f"{space.lower()}_bytes"] >= count
    assert used["UB"]["used"] <= chip["ub_bytes"]
    assert {b["name"]: b["shape_values"] for b in report["buffers"]}["qtL0"] == [
        16,
        576,
    ]  # heads packed into M: 16 query heads of the latent KV head in one Q tile
    assert report["cores"]["tasks"] == 8 * 4 * (n // 16)  # B * kv_splits * N / 16


@pytest.mark.cpu_runtime
@NEEDS_GXX
def test_mla_decode_4k_keys_through_fadsl_sim(tmp_path: Path) -> None:
    """The generated Ascend C on the CPU runtime, a full 4096-key sequence and one of
    1777 (a page tail), split-KV over 4 parts, against float64."""
    src = tmp_path / "mla.py"
    src.write_text(SOURCE)
    data = seeded(np.random.default_rng(7))
    inputs = tmp_path / "in"
    inputs.mkdir()
    for name, arr in data.items():
        arr.tofile(inputs / f"{name}.bin")
    out = tmp_path / "sim"
    shape = ",".join(f"{k}={v}" for k, v in MLA.items())
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "--shape", shape]
    cmd += ["--set", "kv_splits=4", "--inputs", str(inputs), "-o", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    o = np.fromfile(out / "o.bin", np.float16).reshape(2, 1, 16, 512)
    ref = want(data["q"], data["k_cache"], data["block_table"])
    np.testing.assert_allclose(o[:, 0].astype(np.float64), ref, atol=2e-3)


def test_modelled_mla_bandwidth_row() -> None:
    """bench/mla_model.py's rows (MODELLED): split-KV chosen by the model, the 16 heads
    of the latent head one task per part; 'moved' counts V's second read of K's rows."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from mla_model import mla_rows
    finally:
        sys.path.remove(str(ROOT / "bench"))
    short, long = mla_rows(((8, 16, 4096), (8, 16, 32768)))
    for r in (short, long):
        assert r.block_q == 16 and r.tasks == r.b * r.splits * (r.n // 16)
        assert 0 < r.latent < r.moved <= 1
        assert r.moved == pytest.approx(r.latent * (576 + 512) / 576)
    assert long.latent > short.latent  # a longer cache spreads the launch and merge


SMALL = dict(B=2, N=8, Nkv=2, Sq=3, D=192, Dv=128, Pages=12, MaxPages=4)


@pytest.mark.parametrize(
    "layout, pack_gqa, splits",
    [("BNSD", True, 2), ("BSND", True, 1), ("BNSD", False, 3)],
)
def test_v_from_k_with_gqa_causal_lse(layout: str, pack_gqa: bool, splits: int) -> None:
    """Every packing (the (s, g) pairs in BNSD, one position in BSND, unpacked) with
    two latent heads, Sq=3 causal rows and the LSE: float64 with V = K[..., :Dv]."""
    kdef = fd.attention(
        name="mla_small",
        paged_kv=True,
        page_size=64,
        layout=layout,
        causal=True,
        return_lse=True,
        pack_gqa=pack_gqa,
        v_from_k=True,
    )
    kernel = kdef.build({"block_q": 16, "kv_splits": splits}, DType.F16)
    b = Binding(kernel, symbol_values(kernel, SMALL), {"scale": 192**-0.5}, kdef)
    data = runio.make_inputs(b, 0)
    data["block_table"] = np.random.default_rng(4).permutation(12)[:8].reshape(2, 4)
    data["block_table"] = data["block_table"].astype(np.int32)
    data["seqlens_kv"] = np.array([200, 3], np.int32)
    out = interpret(run_pipeline(kernel), b.env(), data).outputs
    assert "v_cache" not in data and out["o"].shape[-1] == 128
    for s, n in enumerate(data["seqlens_kv"]):
        k = np.concatenate([data["k_cache"][p] for p in data["block_table"][s]])[:n]
        for h in range(8):
            q = data["q"][s, h] if layout == "BNSD" else data["q"][s, :, h]
            o = out["o"][s, h] if layout == "BNSD" else out["o"][s, :, h]
            kh = k[:, h // 4].astype(np.float64)
            sc = q.astype(np.float64) @ kh.T * 192**-0.5
            keep = np.arange(n)[None, :] <= np.arange(3)[:, None] + n - 3
            sc = np.where(keep, sc, -np.inf)
            p = np.exp(sc - sc.max(axis=-1, keepdims=True))
            np.testing.assert_allclose(
                o.astype(np.float64),
                p / p.sum(-1, keepdims=True) @ kh[:, :128],
                atol=2e-3,
            )
            lse = np.log(p.sum(-1)) + sc.max(axis=-1)
            np.testing.assert_allclose(out["lse"][s, h], lse, atol=1e-3)


@pytest.mark.parametrize("target", ["ascend910b2", "ascend910_9392"])
def test_128_heads_in_tasks_of_64(target: str, tmp_path: Path) -> None:
    """N=128 with 64 heads a Q tile (no split-KV): Q K^T as sub-dots over D."""
    src = tmp_path / "mla.py"
    src.write_text(SOURCE)
    shape = ",".join(f"{k}={v}" for k, v in dict(MLA, B=8, N=128, Pages=512).items())
    cmd = [sys.executable, "-m", "fadsl", "check", str(src), "--shape", shape]
    cmd += ["--target", target, "--json", "--set", "block_q=64"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["fits"] is True and report["cores"]["tasks"] == 8 * 2
    l1 = {s["space"]: s["used"] for s in report["spaces"]}["L1"]
    assert l1 == footprint(64, 64, 576, 512)["L1"]
    dot = next(d for d in report["sub_dots"] if d["dot"] == "dot")  # Q K^T
    assert (dot["m"], dot["k"], dot["counts"]) == (64, 192, [1, 1, 3])  # 3 x 192 = D
