"""Decode over a paged KV cache (``paged_kv=True``), GQA heads packed into one Q tile.

The cache holds ``Pages`` pages of ``page_size`` = 128 rows: ``k_cache`` and
``v_cache`` are [Pages, 128, Nkv, D] (v_cache and o end in Dv when the shape gives a
value head dim other than D). Sequence b owns the pages ``block_table[b, 0]``,
``block_table[b, 1]``, ... (i32 [B, MaxPages]) in order and has ``seqlens_kv[b]`` keys
(i32 [B]), as in FlashAttention's ``flash_attn_with_kvcache``; q and o are BSND
[B, Sq, N, D] (Sq = 1 for decode, a few for speculative decoding). Causal is
bottom-right aligned to each sequence's own length. Each step of the kernel's KV loop
reads one page with one copy; the query heads that share a KV head are the rows of one
Q tile, so each page is read once per head group and query position (BSND; with q
and o in BNSD a tile packs every position of the group too: docs/decode.md).

    fadsl run examples/decode_paged.py --shape B=4,N=32,Nkv=8,Sq=1,D=128,Pages=64,MaxPages=16 -o out/decode
"""

import numpy as np

import fadsl as fd

kernel = fd.attention(
    name="decode_paged", paged_kv=True, page_size=128, causal=True, layout="BSND"
)


def reference(inputs: dict, shape: dict, consts: dict, dtype=None) -> dict:
    """Each sequence on its own: gather its pages, then plain causal attention."""
    acc = np.float64 if dtype is None else np.float32
    group = shape["N"] // shape["Nkv"]
    scale = acc(consts.get("scale") or shape["D"] ** -0.5)
    o = np.zeros(inputs["q"].shape[:-1] + inputs["v_cache"].shape[-1:])  # Dv wide
    for b in range(shape["B"]):
        length = int(inputs["seqlens_kv"][b])
        rows = [
            (inputs["block_table"][b, key // 128], key % 128) for key in range(length)
        ]
        k, v = (
            np.repeat(
                np.array([inputs[c][p, r] for p, r in rows], acc).reshape(
                    length, shape["Nkv"], -1  # D for k, Dv for v
                ),
                group,
                axis=1,
            ).transpose(1, 0, 2)
            for c in ("k_cache", "v_cache")
        )
        q = inputs["q"][b].astype(acc).transpose(1, 0, 2)  # [N, Sq, D]
        sq = q.shape[1]
        s = np.where(
            np.arange(length)[None, :] <= np.arange(sq)[:, None] + (length - sq),
            np.einsum("hqd,hkd->hqk", q, k) * scale,
            -np.inf,
        )
        m = s.max(axis=-1, keepdims=True, initial=-np.inf)
        p = np.exp(s - np.where(np.isinf(m), 0.0, m))
        l = p.sum(axis=-1, keepdims=True)
        if dtype is not None:
            p = fd.numerics.quantize(p, dtype).astype(acc)
        ob = np.einsum("hqk,hkd->hqd", p, v) / np.where(l == 0, 1.0, l)
        if dtype is not None:
            ob = fd.numerics.quantize(ob, dtype)
        o[b] = ob.transpose(1, 0, 2)
    return {"o": o}


kernel.reference = reference
