"""half/bfloat16_t storage types and Cast rounding modes (RNE ties, directed, away, odd)."""

import math
from fractions import Fraction
import ml_dtypes
import numpy as np
import pytest

from rtutil import assert_aborted, assert_ok, run

pytestmark = pytest.mark.cpu_runtime
BF16 = ml_dtypes.bfloat16


@pytest.fixture(scope="module")
def exe(program):
    return program("cast_types.cpp")


def _bits(v, dt):
    with np.errstate(over="ignore"):
        return int(np.array([v], dtype=dt).view(np.uint16)[0])


def expected_bits(v: float, dt, mode: str) -> int:
    """Round the exact value v to dt (float16 or bfloat16) with a Cast RoundMode."""
    if mode in ("RINT", "NONE"):
        return (
            _bits(np.float64(v), dt) if dt == np.float16 else _bits(np.float32(v), dt)
        )
    r = (
        np.array([v], dtype=np.float64).astype(dt)
        if dt == np.float16
        else np.array([np.float32(v)]).astype(dt)
    )
    if Fraction(float(r[0])) == Fraction(v):
        return int(r.view(np.uint16)[0])
    sign = 0x8000 if v < 0 else 0
    mag = abs(v)
    rb = int(r.view(np.uint16)[0]) & 0x7FFF
    t = (
        rb
        if Fraction(float(np.array([rb], np.uint16).view(dt)[0])) < Fraction(mag)
        else rb - 1
    )
    lo, hi = t, t + 1  # magnitudes just below / above
    up = {"FLOOR": v < 0, "CEIL": v > 0, "TRUNC": False}.get(mode)
    if mode == "ROUND":
        vlo = Fraction(float(np.array([lo], np.uint16).view(dt)[0]))
        vhi = Fraction(float(np.array([hi], np.uint16).view(dt)[0]))
        up = Fraction(mag) - vlo >= vhi - Fraction(mag)
    if mode == "ODD":
        up = bool(hi & 1)
    return sign | (hi if up else lo)


def expected_int(v: float, mode: str) -> int:
    return {
        "RINT": int(np.rint(v)),
        "FLOOR": math.floor(v),
        "CEIL": math.ceil(v),
        "ROUND": int(math.copysign(math.floor(abs(v) + 0.5), v)),
        "TRUNC": int(v),
    }[mode]


def test_cast_all_modes(exe, tmp_path):
    rng = np.random.default_rng(3)
    ties = [
        1 + 2.0**-11,
        1 + 3 * 2.0**-11,
        -(1 + 2.0**-11),
        2.5,
        -2.5,
        3.5,
        0.5,
        -0.5,
        1 + 2.0**-8,
        -(1 + 3 * 2.0**-8),
    ]
    x = np.concatenate([np.array(ties), rng.uniform(-1000, 1000, 246)]).astype(
        np.float32
    )
    px, po = tmp_path / "x.bin", tmp_path / "o.bin"
    x.tofile(px)
    assert_ok(run(exe, "cast", str(px), str(po)))
    out = np.fromfile(po, dtype=np.uint32).reshape(20, 256)
    xs = [float(v) for v in x]
    for k, mode in enumerate(
        ["NONE", "RINT", "FLOOR", "CEIL", "ROUND", "TRUNC", "ODD"]
    ):
        assert [int(b) for b in out[k]] == [
            expected_bits(v, np.float16, mode) for v in xs
        ], mode
    for k, mode in enumerate(["RINT", "FLOOR", "CEIL", "ROUND", "TRUNC"]):
        assert [int(b) for b in out[7 + k]] == [
            expected_bits(v, BF16, mode) for v in xs
        ], ("bf16 " + mode)
        got = out[12 + k].view(np.int32)
        assert [int(g) for g in got] == [expected_int(v, mode) for v in xs], (
            "int32 " + mode
        )
    np.testing.assert_array_equal(
        out[17].view(np.float32), x.astype(np.float16).astype(np.float32)
    )
    np.testing.assert_array_equal(
        out[18].view(np.float32), x.astype(BF16).astype(np.float32)
    )
    np.testing.assert_array_equal(
        out[19].view(np.float32), np.trunc(x).astype(np.int32).astype(np.float32)
    )
    # the ties really are ties: RNE picks the even neighbour
    assert out[1][0] == 0x3C00 and out[1][1] == 0x3C02 and out[4][0] == 0x3C01


def test_scalar_half_bf16_conversions(exe):
    out = assert_ok(run(exe, "types")).splitlines()
    vals = [
        1 + 2.0**-11,
        1 + 3 * 2.0**-11,
        65519.0,
        65520.0,
        -65520.0,
        2.0**-25,
        3 * 2.0**-25,
        0.1,
        -2.5,
        1e-8,
        1.00390625,
        1.01171875,
        3.0e38,
        -0.0,
    ]
    for line, v in zip(out, vals):
        hb, bb, hf, bf = line.split()
        assert int(hb, 16) == _bits(np.float64(v), np.float16), (v, line)
        assert int(bb, 16) == _bits(np.float32(v), BF16), (v, line)
    assert out[-1] == "3.75 1"


def test_cast_rejects_float_to_bf16_cast_none(exe):
    msg = assert_aborted(
        run(exe, "bad_bf16_none"),
        "Cast<bfloat16_t, float>(CAST_NONE)",
        "AIV 0 (block 0)",
        "not allowed",
    )
    assert "CAST_RINT/CAST_FLOOR/CAST_CEIL/CAST_ROUND/CAST_TRUNC" in msg


def test_cast_rejects_half_to_float_with_rint(exe):
    assert_aborted(
        run(exe, "bad_half_float_rint"),
        "Cast<float, half>(CAST_RINT)",
        "allowed: CAST_NONE",
    )
