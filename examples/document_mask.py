"""Document masking (packed documents) as a FlexAttention mask_mod with a block mask.

Several documents share one sequence; ``doc[p]`` is the document of position p and a
query attends only to keys of its own document, causally. The mask_mod reads the extra
input ``doc`` at the tile's positions (a block load of ``doc[q_idx]`` and ``doc[kv_idx]``).
Ahead of the kernel, fadsl evaluates the masks per block, like FlexAttention's
``create_block_mask``: blocks with nothing kept are never computed, wholly kept blocks
skip mask evaluation, and only the partly kept ones evaluate the mask.

    fadsl run examples/document_mask.py --shape B=1,N=4,Sq=2048,Skv=2048,D=128 -o out/doc
"""

import numpy as np

import fadsl as fd


def documents(shape: tuple, rng) -> np.ndarray:
    """Documents of random lengths (about 300 positions each), ids in order."""
    cuts = np.sort(
        rng.choice(np.arange(1, shape[0]), size=max(1, shape[0] // 300), replace=False)
    )
    return np.searchsorted(cuts, np.arange(shape[0]), side="right").astype(np.int32)


doc = fd.tensor("doc", "Skv", dtype="i32", init=documents)


def same_document(b, h, q_idx, kv_idx):
    return doc[q_idx] == doc[kv_idx]


kernel = fd.attention(name="document_mask", mask_mod=same_document, causal=True)


def reference(inputs: dict, shape: dict, consts: dict, dtype=None) -> dict:
    """Plain attention keeping same-document, causal scores."""
    acc = np.float64 if dtype is None else np.float32
    q, k, v = (inputs[n].astype(acc) for n in ("q", "k", "v"))
    k, v = (np.repeat(x, q.shape[1] // x.shape[1], axis=1) for x in (k, v))  # GQA
    sq, skv = q.shape[2], k.shape[2]
    d = inputs["doc"]
    keep = (d[:sq, None] == d[None, :skv]) & (
        np.arange(skv)[None, :] <= np.arange(sq)[:, None] + (skv - sq)
    )
    s = np.einsum("bhqd,bhkd->bhqk", q, k) * acc(
        consts.get("scale") or q.shape[3] ** -0.5
    )
    s = np.where(keep, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isinf(m), 0.0, m))
    l = p.sum(axis=-1, keepdims=True)
    if dtype is not None:
        p = fd.numerics.quantize(p, dtype).astype(acc)
    o = np.einsum("bhqk,bhkd->bhqd", p, v) / np.where(l == 0, 1.0, l)
    if dtype is not None:
        o = fd.numerics.quantize(o, dtype)
    return {"o": o.astype(np.float64)}


kernel.reference = reference
