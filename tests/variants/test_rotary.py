"""The DSL's rotary embedding (fadsl/lib/rotary.py) against an independent numpy
``apply_rotary_emb`` (both pair layouts, rotary fractions 0.5 and 1, position offsets),
in the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import fadsl as fd
from attkit import NEEDS_GXX
from fadsl.lib.rotary import rotate
from tests.variants.kvcache_ref import apply_rotary


@fd.kernel(dtype="fp16", default_shape=dict(B=2, S=40, N=3, D=64, MaxPos=96, R=16))
def rope(
    x: fd.In("B", "S", "N", "D"),
    cos: fd.In("MaxPos", "R", dtype=fd.f32),
    sin: fd.In("MaxPos", "R", dtype=fd.f32),
    offsets: fd.In("B", dtype=fd.i32),
    o: fd.Out("B", "S", "N", "D"),
    interleaved: bool = False,
    block: int = 16,
):
    B, S, N, D = x.shape
    R = cos.shape[1]
    for b, h, y in fd.grid(B, N, fd.cdiv(S, block)):
        rows = fd.ds(y * block, block)
        first = fd.load_scalar(offsets[b]) + y * block
        xt = fd.load(x[b, rows, h, :], pad=0)
        ct = fd.load(cos[fd.ds(first, block), :], pad=0)
        st = fd.load(sin[fd.ds(first, block), :], pad=0)
        out = rotate(xt, ct, st, D, 2 * R, interleaved)
        fd.store(o[b, rows, h, :], fd.cast(out, o.dtype))


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("d,fraction", [(64, 0.5), (64, 1.0), (128, 0.5)])
def test_rotary_matches_apply_rotary_emb(
    interleaved: bool, d: int, fraction: float
) -> None:
    rng = np.random.default_rng(7)
    rotary_dim = int(fraction * d) // 16 * 16  # Dao: a multiple of 16, <= d
    b, s, n, max_pos = 2, 40, 3, 96
    x = rng.standard_normal((b, s, n, d)).astype(np.float16)
    angle = rng.random((max_pos, rotary_dim // 2)) * 2 * np.pi
    cos, sin = np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)
    offsets = np.array([0, 37], np.int32)  # the second ends at 76 < MaxPos
    got = fd.interpret(
        rope,
        consts=dict(interleaved=interleaved),
        x=x,
        cos=cos,
        sin=sin,
        offsets=offsets,
    )["o"]
    want = apply_rotary(
        x.astype(np.float64),
        cos.astype(np.float64),
        sin.astype(np.float64),
        offsets,
        interleaved,
    )
    verdict = fd.verify(got, want, "fp16")
    assert verdict.passed, verdict
    # the columns past rotary_dim pass through bit for bit
    np.testing.assert_array_equal(got[..., rotary_dim:], x[..., rotary_dim:])


@NEEDS_GXX
@pytest.mark.parametrize("interleaved", [False, True])
def test_rotary_through_sim(interleaved: bool) -> None:
    """The generated Ascend C in the CPU runtime: the column maps are Gathers from UB,
    one per row of each vector core's half of the tile (no cube)."""
    rng = np.random.default_rng(7)
    d, rotary_dim = 64, 32
    x = rng.standard_normal((2, 40, 3, d)).astype(np.float16)
    angle = rng.random((96, rotary_dim // 2)) * 2 * np.pi
    cos, sin = np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)
    offsets = np.array([0, 37], np.int32)
    got = fd.sim(
        rope,
        consts=dict(interleaved=interleaved),
        x=x,
        cos=cos,
        sin=sin,
        offsets=offsets,
    )["o"]
    want = apply_rotary(
        x.astype(np.float64),
        cos.astype(np.float64),
        sin.astype(np.float64),
        offsets,
        interleaved,
    )
    verdict = fd.verify(got, want, "fp16")
    assert verdict.passed, verdict
