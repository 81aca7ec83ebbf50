"""The baseline of bench/interp.py: a plain numpy fp32 attention on a run folder's inputs.

Reads ``q.bin``, ``k.bin`` and ``v.bin`` (shapes and dtypes from the folder's
``meta.json``, as ``fadsl run`` writes them), computes ``softmax(q k^T * D**-0.5) v`` in
float32 with whole-tensor numpy calls (batched matmuls, in-place softmax), and writes
``o.bin`` in the inputs' dtype into OUT_DIR. Optional ``--causal`` masks like fa2.py
(Sq == Skv). It imports numpy only (plus ml_dtypes for bf16 inputs), so its process
time is the fair counterpart of ``fadsl run`` on the same inputs.

    python3 bench/numpy_attention.py RUN_DIR OUT_DIR [--causal]
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np


def load(folder: str, name: str, meta: dict) -> np.ndarray:
    info = meta["params"][name]
    raw = np.fromfile(os.path.join(folder, info["file"]), dtype=np.dtype(info["dtype"]))
    return raw.reshape(info["shape"]).astype(np.float32)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    s = q @ k.swapaxes(-1, -2)
    s *= np.float32(q.shape[-1] ** -0.5)
    if causal:
        sq, skv = s.shape[-2:]
        above = np.arange(skv)[None, :] > np.arange(sq)[:, None] + (skv - sq)
        s[..., above] = -np.inf
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s @ v


def main(argv: list[str]) -> int:
    folder, out = argv[0], argv[1]
    with open(os.path.join(folder, "meta.json")) as f:
        meta = json.load(f)
    q, k, v = (load(folder, n, meta) for n in ("q", "k", "v"))
    o = attention(q, k, v, "--causal" in argv[2:])
    os.makedirs(out, exist_ok=True)
    o.astype(np.dtype(meta["params"]["q"]["dtype"])).tofile(os.path.join(out, "o.bin"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
