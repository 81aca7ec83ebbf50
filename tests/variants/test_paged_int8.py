"""vLLM's paged attention test (``tests/kernels/attention/test_attention.py``,
``test_paged_attention``) with an int8 KV cache, through ``fd.interpret``.

Transcribed: 7 decode sequences (``NUM_GEN_SEQS``), heads (40, 40) and (64, 8)
(``NUM_HEADS``), block (page) sizes 16 and 32, fp16 and bf16 queries, query and cache
values uniform in (-s, s) with s = head_size ** -0.5 (``create_kv_caches_with_random``),
random lengths with the last one the longest, a random block table over ``NUM_BLOCKS``
pages; the check is vLLM's ``torch.testing.assert_close(output, ref_output, atol=1e-3,
rtol=1e-5)`` against ``ref_single_query_cached_kv_attention`` computed (here in
float64) on the dequantised cache. Departures, to keep the interpreter run short on a
shared machine: head sizes 64, 128 and 256 of vLLM's nine, at most 600 keys (vLLM:
up to its shared-memory limit), 64 pages. The cache is quantised per channel or per
token, with or without an offset (CANN's antiquant: ``(x + offset) * scale``), each
combination in several grid points. Then the errors: wrong scale shapes and dtypes.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import fadsl as fd
from fadsl.numerics import np_dtype
from fadsl.ir.types import DType

NUM_GEN_SEQS = 7
NUM_HEADS = [(40, 40), (64, 8)]
HEAD_SIZES = [64, 128, 256]
BLOCK_SIZES = [16, 32]
MAX_LEN = 600
NUM_BLOCKS = 64
QUANT = [("channel", False), ("token", True), ("channel", True), ("token", False)]
GRID = [
    (heads, d, page, ("fp16", "bf16")[i % 2], *QUANT[i % 4])
    for i, (heads, d, page) in enumerate(
        itertools.product(NUM_HEADS, HEAD_SIZES, BLOCK_SIZES)
    )
]


def quantise(
    x: np.ndarray, kv_scale: str, offset: bool, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """int8 x8 and fp32 scale (offset) with x ~ (x8 + offset) * scale: x [Pages, P,
    Nkv, D], scales over the channels [Nkv, D] or the tokens [Pages, P, Nkv]."""
    axes = (0, 1) if kv_scale == "channel" else (3,)
    top = np.abs(x).max(axis=axes)
    scale = (np.maximum(top, 1e-6) / 100.0).astype(np.float32)
    off = rng.uniform(-20.0, 20.0, scale.shape).astype(np.float32) if offset else None
    s = scale if kv_scale == "channel" else scale[..., None]
    o = 0.0 if off is None else (off if kv_scale == "channel" else off[..., None])
    x8 = np.clip(np.rint(x / s - o), -127, 127).astype(np.int8)
    return x8, scale, off


def dequantise(
    x8: np.ndarray, scale: np.ndarray, off: np.ndarray | None, kv_scale: str
) -> np.ndarray:
    s = scale.astype(np.float64)
    o = 0.0 if off is None else off.astype(np.float64)
    if kv_scale == "token":
        s = s[..., None]
        o = o if off is None else o[..., None]
    return (x8.astype(np.float64) + o) * s


def vllm_case(
    heads: tuple[int, int], d: int, page: int, kv_scale: str, offset: bool, seed: int
) -> tuple[dict[str, np.ndarray], dict[str, Any], list[int]]:
    rng = np.random.default_rng(seed)
    n, nkv = heads
    s = d**-0.5
    lens = list(rng.integers(1, MAX_LEN + 1, NUM_GEN_SEQS))
    lens[-1] = MAX_LEN
    max_pages = -(-MAX_LEN // page)
    pages = max(NUM_BLOCKS, NUM_GEN_SEQS * max_pages)
    table = rng.integers(0, pages, (NUM_GEN_SEQS, max_pages)).astype(np.int32)
    q = rng.uniform(-s, s, (NUM_GEN_SEQS, n, 1, d))
    inputs: dict[str, np.ndarray] = {
        "q": q,
        "block_table": table,
        "seqlens_kv": np.array(lens, np.int32),
    }
    for name in ("k", "v"):
        x = rng.uniform(-s, s, (pages, page, nkv, d))
        x8, scale, off = quantise(x, kv_scale, offset, rng)
        inputs[f"{name}_cache"], inputs[f"{name}_scale"] = x8, scale
        if off is not None:
            inputs[f"{name}_offset"] = off
    shape = dict(
        B=NUM_GEN_SEQS, N=n, Nkv=nkv, Sq=1, D=d, Pages=pages, MaxPages=max_pages
    )
    return inputs, shape, lens


def ref_paged(
    inputs: dict[str, np.ndarray], kv_scale: str, page: int, lens: list[int]
) -> np.ndarray:
    """vLLM's ref_single_query_cached_kv_attention on the dequantised cache, float64:
    gather each sequence's keys block by block, softmax(q k^T * scale) v per head."""
    q = inputs["q"].astype(np.float64)
    k = dequantise(
        inputs["k_cache"], inputs["k_scale"], inputs.get("k_offset"), kv_scale
    )
    v = dequantise(
        inputs["v_cache"], inputs["v_scale"], inputs.get("v_offset"), kv_scale
    )
    b, n, _, d = q.shape
    nkv = k.shape[2]
    out = np.zeros_like(q)
    for i in range(b):
        rows = [
            inputs["block_table"][i, j // page] * page + j % page
            for j in range(lens[i])
        ]
        keys = k.reshape(-1, nkv, d)[rows]
        vals = v.reshape(-1, nkv, d)[rows]
        for h in range(n):
            kh, vh = keys[:, h // (n // nkv)], vals[:, h // (n // nkv)]
            sc = kh @ q[i, h, 0] * d**-0.5
            p = np.exp(sc - sc.max())
            out[i, h, 0] = (p / p.sum()) @ vh
    return out


@pytest.mark.parametrize("heads,d,page,dtype,kv_scale,offset", GRID)
def test_vllm_paged_attention_int8_cache(
    heads: tuple[int, int], d: int, page: int, dtype: str, kv_scale: str, offset: bool
) -> None:
    inputs, shape, lens = vllm_case(heads, d, page, kv_scale, offset, seed=d + page)
    inputs["q"] = inputs["q"].astype(np_dtype(DType.parse(dtype)))
    kernel = fd.attention(
        name="vllm_int8",
        paged_kv=True,
        page_size=page,
        pack_gqa=False,
        kv_dtype="int8",
        kv_scale=kv_scale,
        kv_offset=offset,
    )
    out = fd.interpret(kernel, shape=shape, dtype=dtype, **inputs)["o"]
    ref = ref_paged(inputs, kv_scale, page, lens)
    got = out.astype(np.float64)
    assert np.isfinite(got).all()
    # torch.testing.assert_close(output, ref_output, atol=1e-3, rtol=1e-5)
    excess = np.abs(got - ref) - (1e-3 + 1e-5 * np.abs(ref))
    assert excess.max() <= 0, (float(np.abs(got - ref).max()), float(np.abs(ref).max()))
    # and the dequantisation matters: the raw int8 values give another output
    assert np.abs(ref).max() > 5e-3


def test_int8_cache_passes_fadsls_rule_with_packed_heads() -> None:
    """The fadsl tolerance rule (its float64 reference dequantises too), GQA packed."""
    inputs, shape, _ = vllm_case((64, 8), 128, 16, "token", True, seed=3)
    inputs["q"] = inputs["q"].astype(np.float16)
    kernel = fd.attention(
        name="vllm_int8",
        paged_kv=True,
        page_size=16,
        kv_dtype="int8",
        kv_scale="token",
        kv_offset=True,
        causal=True,
    )
    out = fd.interpret(kernel, shape=shape, **inputs)
    ref = kernel.reference(inputs, shape, {"scale": 128**-0.5})
    same = kernel.reference(inputs, shape, {"scale": 128**-0.5}, DType.F16)
    result = fd.verify(out["o"], ref["o"], "fp16", same_precision=same["o"])
    assert result.passed, result


def _small(kv_scale: str = "channel", offset: bool = False) -> tuple[Any, dict, dict]:
    inputs, shape, _ = vllm_case((8, 2), 64, 16, kv_scale, offset, seed=1)
    inputs["q"] = inputs["q"].astype(np.float16)
    kernel = fd.attention(
        name="q8",
        paged_kv=True,
        page_size=16,
        kv_dtype="int8",
        kv_scale=kv_scale,
        kv_offset=offset,
    )
    return kernel, inputs, shape


@pytest.mark.parametrize(
    "name,bad,words",
    [
        (
            "k_scale",
            lambda a: a[:, :32].copy(),
            "takes `k_scale` as [Nkv, D] = [2, 64]",
        ),
        ("v_scale", lambda a: a.astype(np.float16), "takes `v_scale` as float32"),
        ("k_cache", lambda a: a.astype(np.float16), "takes `k_cache` as int8"),
    ],
)
def test_wrong_scale_shapes_and_dtypes_are_refused(
    name: str, bad: Any, words: str
) -> None:
    kernel, inputs, shape = _small()
    inputs[name] = bad(inputs[name])
    with pytest.raises(fd.FadslError) as err:
        fd.interpret(kernel, shape=shape, **inputs)
    assert words in str(err.value), str(err.value)
    assert "test_paged_int8.py" in str(err.value)  # the user's call


def test_per_token_scale_of_the_channel_shape_is_refused() -> None:
    kernel, inputs, shape = _small("token", True)
    inputs["k_offset"] = np.zeros((2, 64), np.float32)  # per-channel shape
    with pytest.raises(fd.FadslError) as err:
        fd.interpret(kernel, shape=shape, **inputs)
    assert "[Pages, 16, Nkv]" in str(err.value) and "k_offset" in str(err.value)


@pytest.mark.parametrize(
    "kw,words",
    [
        (dict(kv_dtype="int4", kv_scale="channel"), "kv_dtype must be 'int8'"),
        (dict(kv_dtype="int8"), 'needs kv_scale="channel" or "token", got None'),
        (dict(kv_dtype="int8", kv_scale="head"), "got 'head'"),
        (dict(kv_scale="token"), 'without kv_dtype="int8"'),
        (
            dict(kv_dtype="int8", kv_scale="token", kv_offset=1),
            "kv_offset must be True or False",
        ),
    ],
)
def test_bad_keywords_are_refused_at_the_call(kw: dict[str, Any], words: str) -> None:
    with pytest.raises(fd.FadslError) as err:
        fd.attention(name="q8", paged_kv=True, **kw)
    assert words in str(err.value) and "E127" in str(err.value)
    assert "test_paged_int8.py" in str(err.value)  # names the user's line


@pytest.mark.parametrize("kw", [dict(layout="TND"), dict(shared_kv=True)])
def test_int8_needs_a_paged_cache_or_plain_k_and_v(kw: dict[str, Any]) -> None:
    with pytest.raises(fd.FadslError, match="an int8 cache is paged"):
        fd.attention(name="q8", kv_dtype="int8", kv_scale="channel", **kw)


def test_compiling_an_int8_cache_is_refused_not_miscompiled(tmp_path: Any) -> None:
    """Per-token scales of Nkv = 2 KV heads are rows of 8 bytes, not whole 32-byte
    blocks, which the vector code does not tile: compile says so (E128, and what runs
    it) rather than emitting code that would read the wrong UB addresses."""
    kernel, _, shape = _small("token", True)
    with pytest.raises(fd.FadslError) as err:
        fd.compile(kernel, shape=shape, out_dir=str(tmp_path / "gen"))
    text = str(err.value)
    assert "E128" in text and "rows of 8 bytes" in text, text
    assert "Nkv a multiple of 8" in text and "interpreter" in text


def test_compiling_an_int8_cache_per_channel(tmp_path: Any) -> None:
    """The same cache per channel compiles: the vector cores load and dequantise its
    pages (tests/variants/test_paged_int8_sim.py runs such kernels)."""
    kernel, _, shape = _small("channel", True)
    fd.compile(kernel, shape=shape, out_dir=str(tmp_path / "gen"))
    source = (tmp_path / "gen" / "q8_kernel.cpp").read_text()
    assert "AscendC::Cast(" in source and "int8_t" in source
    assert "k_cacheGm" in source and "block_tableGm.GetValue" in source


def test_int8_ir_round_trips_through_its_text() -> None:
    """The i8 dtype prints and parses back (the textual IR of an int8 kernel)."""
    from fadsl.ir.text.parser import parse_kernel
    from fadsl.ir.text.printer import print_kernel

    kernel, _, _ = _small("token", True)
    text = print_kernel(kernel.build())
    assert "i8[" in text
    assert print_kernel(parse_kernel(text)) == text


def test_per_token_scale_bursts_are_in_the_field_proof() -> None:
    """The vector cores copy a page's per-token scale rows ([P, Nkv] f32, contiguous)
    as one burst: its blockLen (rows x Nkv x 4 bytes) is one of the values the API
    field proof bounds (``fadsl check``'s "Ascend C fields")."""
    import argparse
    import tempfile
    from pathlib import Path

    from fadsl.commands import common
    from fadsl.driver.lower import lower
    from fadsl.target import resolve

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "q8t.py"
        src.write_text(
            "import fadsl as fd\n\nkernel = fd.attention(name='q8t', paged_kv=True, "
            "page_size=64, kv_dtype='int8', kv_scale='token')\n"
        )
        args = argparse.Namespace(
            file=str(src),
            kernel=None,
            sets=[],
            dtype=None,
            shape="B=2,N=16,Nkv=8,Sq=1,D=64,Pages=16,MaxPages=5",
        )
        binding = common.build(args, target=resolve("ascend910b2", None))
        uses = lower(binding).plan.fields
    bursts = [u for u in uses if "in one burst" in u.what]
    assert bursts, [u.what for u in uses]
    assert all(
        (u.field.call, u.field.name) == ("DataCopyExtParams", "blockLen")
        for u in bursts
    )
    assert str(bursts[0].value) == "2*Nkv*block_kv"  # block_kv / 2 rows x Nkv x 4 B
