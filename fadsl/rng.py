"""Counter-based random numbers (Philox4x32-10), the one definition fadsl draws from.

Dropout must be replayable and identical wherever it runs, so every random number is a
pure function of a key and a counter (Salmon et al., "Parallel random numbers: as easy
as 1, 2, 3", SC 2011; the generator of cuRAND and PyTorch's CUDA dropout). For an
element at row position ``row`` and column position ``col`` of a stream (fadsl: one
stream per batch x head), with a 64-bit seed (``seed0`` low word, ``seed1`` high word)
and an ``offset``:

    key     = (seed0, seed1)
    counter = (col // 4, row, stream, offset)
    bits    = Philox4x32_10(counter, key)[col % 4]
    u       = (bits >> 8) * 2**-24          # float32, exact, in [0, 1)

The interpreter computes this with numpy (below); generated kernels call
``fadsl::PhiloxUniform`` in fadsl_tile.h, a scalar loop with 64-bit products (the vector
unit has no 32 x 32 -> 64 multiply), which gives the same bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

M0 = np.uint64(0xD2511F53)
M1 = np.uint64(0xCD9E8D57)
W0 = np.uint32(0x9E3779B9)
W1 = np.uint32(0xBB67AE85)
ROUNDS = 10
_LOW = np.uint64(0xFFFFFFFF)
_SHIFT = np.uint64(32)


def _u32(x: Any) -> np.ndarray:
    """Two's-complement wrap of any integers (int32 seeds included) to uint32."""
    return np.asarray(np.asarray(x, dtype=np.int64) & 0xFFFFFFFF, dtype=np.uint32)


def philox4x32(
    counter: tuple[Any, Any, Any, Any], key: tuple[Any, Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Philox4x32-10 of broadcastable uint32 arrays: four output words."""
    c0, c1, c2, c3 = (_u32(c) for c in counter)
    k0, k1 = (_u32(k) for k in key)
    with np.errstate(over="ignore"):
        for r in range(ROUNDS):
            if r:
                k0 = (k0 + W0).astype(np.uint32)
                k1 = (k1 + W1).astype(np.uint32)
            p0 = M0 * c0.astype(np.uint64)
            p1 = M1 * c2.astype(np.uint64)
            hi0, lo0 = (p0 >> _SHIFT).astype(np.uint32), (p0 & _LOW).astype(np.uint32)
            hi1, lo1 = (p1 >> _SHIFT).astype(np.uint32), (p1 & _LOW).astype(np.uint32)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def philox_uniform(
    seed0: Any, seed1: Any, offset: Any, stream: Any, row: Any, col: Any
) -> np.ndarray:
    """Uniform float32 numbers in [0, 1) for broadcastable integer positions."""
    col = np.asarray(col, dtype=np.int64)
    words = philox4x32((col >> 2, row, stream, offset), (seed0, seed1))
    lane = col & 3
    bits = np.select([lane == 0, lane == 1, lane == 2], words[:3], words[3])
    return ((bits >> np.uint32(8)).astype(np.float32) * np.float32(2.0**-24)).astype(
        np.float32
    )


def dropout_keep(u: np.ndarray, p: float) -> np.ndarray:
    """The keep mask of dropout with drop probability ``p``: ``u >= p`` in float32."""
    return u >= np.float32(p)
