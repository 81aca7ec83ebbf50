"""An int8 paged KV cache through the generated Ascend C (``fadsl sim``, issue 30).

The vector cores load the int8 pages (one ``DataCopyPad`` per page, the page read from
the block table), dequantise them (``Cast`` int8 -> half -> float, ``(x + offset) *
scale``, ``Cast`` to half) and hand them to the cube through a GM workspace, as the
P tile of the softmax goes; the cube runs Q K^T and P V on them (docs/decode.md, "An
int8 cache on the chip"). Two builds, one per scale granularity, each GQA with pages
dealt in a shuffled order and lengths that end inside a page:

* per channel, layout BSND (GQA heads packed), no offset, G = 4;
* per token with offsets, layout BNSD ((s, g) packing), Sq = 2, Nkv = 8 (the
  per-token scale rows [P, Nkv] f32 are whole 32-byte blocks only for Nkv a multiple
  of 8: E128 otherwise), KV blocks of two pages.

Unused block-table columns are -1 (no page) and every cache row past a sequence's
length is poisoned (int8 -128 and, per token, NaN scales), so a kernel that read one
would fail. The check: fadsl's tolerance rule against its float64 reference, agreement
with the interpreter, and vLLM's ``assert_close(atol=1e-3, rtol=1e-5)`` against a
dequantise-then-attend float64 reference written here (decode, Sq = 1 case).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.variants.test_paged_int8 import dequantise, quantise
from tests.variants.test_paged_sim import (
    ROOT,
    pytestmark,  # noqa: F401  (needs g++ and cmake)
)

PAGE = 64
KERNEL = """import fadsl as fd

kernel = fd.attention(name="{name}", paged_kv=True, page_size={page}, causal=True,
                      layout="{layout}", kv_dtype="int8", kv_scale="{kv_scale}",
                      kv_offset={offset})
"""


def _inputs(
    shape: dict[str, int], lengths: list[int], kv_scale: str, offset: bool
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    b, n, nkv, sq, d = (shape[k] for k in ("B", "N", "Nkv", "Sq", "D"))
    pages, mp = shape["Pages"], shape["MaxPages"]
    s = d**-0.5
    table = rng.permutation(pages)[: b * mp].reshape(b, mp)
    used = np.arange(mp)[None, :] < -(-np.array(lengths)[:, None] // PAGE)
    out: dict[str, np.ndarray] = {
        "q": rng.uniform(-1, 1, (b, sq, n, d)).astype(np.float16),
        "block_table": np.where(used, table, -1).astype(np.int32),
        "seqlens_kv": np.array(lengths, np.int32),
    }
    stale = np.ones((pages, PAGE), bool)  # rows no sequence uses
    for i, length in enumerate(lengths):
        for j in range(length):
            stale[table[i, j // PAGE], j % PAGE] = False
    for name in ("k", "v"):
        x8, scale, off = quantise(
            rng.uniform(-s, s, (pages, PAGE, nkv, d)), kv_scale, offset, rng
        )
        x8[stale] = -128
        if kv_scale == "token":
            scale[stale] = np.nan
        out[f"{name}_cache"], out[f"{name}_scale"] = x8, scale
        if off is not None:
            out[f"{name}_offset"] = off
    return out


def _sim(
    tmp: Path,
    layout: str,
    kv_scale: str,
    offset: bool,
    shape: dict[str, int],
    lengths: list[int],
    sets: tuple[str, ...] = (),
) -> tuple[dict, dict[str, np.ndarray], np.ndarray]:
    name = f"q8_{kv_scale}"
    source = tmp / f"{name}.py"
    source.write_text(
        KERNEL.format(
            name=name, page=PAGE, layout=layout, kv_scale=kv_scale, offset=offset
        )
    )
    data = _inputs(shape, lengths, kv_scale, offset)
    if layout == "BNSD":
        data["q"] = np.ascontiguousarray(data["q"].transpose(0, 2, 1, 3))
    (tmp / "in").mkdir()
    for k, arr in data.items():
        arr.tofile(tmp / "in" / f"{k}.bin")
    text = ",".join(f"{k}={v}" for k, v in shape.items())
    cmd = [sys.executable, "-m", "fadsl", "sim", str(source), "--shape", text]
    cmd += [x for a in sets for x in ("--set", a)]
    cmd += ["--inputs", str(tmp / "in"), "-o", str(tmp / "out")]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((tmp / "out" / "meta.json").read_text())
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    for out_name, agree in meta["vs_interpreter"].items():
        assert agree["nonfinite_mismatch"] == 0, out_name
        assert agree["max_abs_diff"] <= 4 * 2.0**-10, agree
    o = np.fromfile(tmp / "out" / "o.bin", np.float16)
    return meta, data, o


def _reference(data: dict[str, np.ndarray], kv_scale: str) -> np.ndarray:
    """Dequantise-then-attend in float64, decode (Sq = 1), BSND: [B, 1, N, D]."""
    k = dequantise(data["k_cache"], data["k_scale"], data.get("k_offset"), kv_scale)
    v = dequantise(data["v_cache"], data["v_scale"], data.get("v_offset"), kv_scale)
    q = data["q"].astype(np.float64)
    b, _, n, d = q.shape
    nkv = k.shape[2]
    out = np.zeros_like(q)
    for i in range(b):
        length = int(data["seqlens_kv"][i])
        rows = [
            data["block_table"][i, j // PAGE] * PAGE + j % PAGE for j in range(length)
        ]
        keys, vals = k.reshape(-1, nkv, d)[rows], v.reshape(-1, nkv, d)[rows]
        for h in range(n):
            kh, vh = keys[:, h // (n // nkv)], vals[:, h // (n // nkv)]
            sc = kh @ q[i, 0, h] * d**-0.5
            p = np.exp(sc - sc.max())
            out[i, 0, h] = (p / p.sum()) @ vh
    return out


def test_per_channel_decode_on_the_chip(tmp_path: Path) -> None:
    """Per-channel scales, BSND, GQA 16 / 4, pages of 64 split 32 + 32 rows between
    the two vector cores: lengths 150 (a 22-row tail), 64 (one whole page), 1 and 200.
    """
    shape = dict(B=4, N=16, Nkv=4, Sq=1, D=64, Pages=16, MaxPages=4)
    lengths = [150, 64, 1, 200]
    _, data, o = _sim(tmp_path, "BSND", "channel", False, shape, lengths)
    ref = _reference(data, "channel")
    got = o.astype(np.float64).reshape(ref.shape)
    excess = np.abs(got - ref) - (1e-3 + 1e-5 * np.abs(ref))
    assert excess.max() <= 0, float(np.abs(got - ref).max())


def test_per_token_with_offsets_on_the_chip(tmp_path: Path) -> None:
    """Per-token scales and offsets (NaN scales in every unused row), BNSD (s, g)
    packing with Sq = 2 (causal: the first query row sees one key fewer), GQA 16 / 8,
    KV blocks of two pages (block_kv=128: vector core 0 loads the first page, core 1
    the second), lengths 100 and 37: the 37-key sequence's second page is past its end
    (its block-table column is -1), so core 1 neither looks it up nor copies it."""
    shape = dict(B=2, N=16, Nkv=8, Sq=2, D=64, Pages=8, MaxPages=2)
    meta, _, o = _sim(
        tmp_path, "BNSD", "token", True, shape, [100, 37], ("block_kv=128",)
    )
    assert np.isfinite(o).all()
    assert meta["check"]["o"]["passed"]


def test_a_bad_page_stops_the_vector_cores_at_their_guard(tmp_path: Path) -> None:
    """A used block-table column naming a page the cache does not have: the vector
    cores read the table now (they load the int8 pages), and their guard stops the
    kernel (``AscendC::Trap()``) instead of reading past the cache."""
    import argparse

    import fadsl as fd
    from fadsl.backends.sim import run as sim_run
    from fadsl.commands import common
    from fadsl.driver.lower import lower
    from fadsl.target import resolve

    source = tmp_path / "q8_channel.py"
    source.write_text(
        KERNEL.format(
            name="q8_channel",
            page=PAGE,
            layout="BSND",
            kv_scale="channel",
            offset=False,
        )
    )
    shape = dict(B=4, N=16, Nkv=4, Sq=1, D=64, Pages=16, MaxPages=4)
    args = argparse.Namespace(
        file=str(source),
        kernel=None,
        sets=[],
        dtype=None,
        shape=",".join(f"{k}={v}" for k, v in shape.items()),
    )
    binding = common.build(args, target=resolve("ascend910b1", None))
    inputs = _inputs(shape, [150, 64, 1, 200], "channel", False)
    inputs["block_table"][0, 1] = shape["Pages"] + 3
    binary, _ = sim_run.build(lower(binding), str(source))
    with pytest.raises(fd.FadslError, match="Trap on AIV .*index out of range"):
        sim_run.run_binary(binary, binding, inputs, 120.0)


def test_contiguous_int8_per_token_on_the_chip(tmp_path: Path) -> None:
    """Without a page table (``fadsl/lib/flash.py``'s KV step): int8 k / v with
    per-token scales and offsets [B, Nkv, Skv], causal, Sq = 70 and Skv = 200 (tails
    in both), GQA 4 / 2, fadsl's seeded inputs. This built C++ the CPU runtime
    rejects before (an int8 Duplicate, an int8 -> float Cast)."""
    source = tmp_path / "dense_q8.py"
    source.write_text(
        "import fadsl as fd\n\n"
        'kernel = fd.attention(name="dense_q8", causal=True, layout="BNSD", '
        'kv_dtype="int8", kv_scale="token", kv_offset=True)\n'
    )
    cmd = [sys.executable, "-m", "fadsl", "sim", str(source), "--shape"]
    cmd += ["B=2,N=4,Nkv=2,Sq=70,Skv=200,D=64", "-o", str(tmp_path / "out")]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())
    assert meta["check"]["o"]["passed"], meta["check"]
    agree = meta["vs_interpreter"]["o"]
    assert agree["nonfinite_mismatch"] == 0 and agree["max_abs_diff"] <= 2.0**-10, agree
