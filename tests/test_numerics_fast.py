"""Fast paths are exact: ``to_float16`` gives ``astype(float16)``'s bits, and the
non-finite input report (which tests exponent bits first) finds every inf and NaN."""

from __future__ import annotations

import numpy as np

import ml_dtypes
import pytest

from fadsl.numerics import to_float16
from fadsl.io.runio import nonfinite_report


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint16)


def test_to_float16_matches_astype_on_random_bit_patterns() -> None:
    rng = np.random.default_rng(11)
    bits = rng.integers(0, 2**32, size=1_000_000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32).reshape(1000, 1000)
    with np.errstate(all="ignore"):
        want = x.astype(np.float16)
        got = to_float16(x)
    assert got.shape == x.shape
    assert np.array_equal(_bits(got), _bits(want))


def test_to_float16_matches_astype_at_every_tie_and_neighbour() -> None:
    halves = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = halves[np.isfinite(halves)].astype(np.float32).view(np.uint32)
    offsets = (0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF)
    near = np.concatenate([finite + np.uint32(d) for d in offsets])
    x = near.view(np.float32)
    x = x[np.isfinite(x) & (np.abs(x) < 65504)]  # no inf: the fast path itself
    x = x[: x.size - x.size % 2]
    assert np.array_equal(_bits(to_float16(x)), _bits(x.astype(np.float16)))


def test_to_float16_odd_sizes_and_other_dtypes_fall_back() -> None:
    x = np.array([1.0, 2.5, 3.25], np.float32)
    assert np.array_equal(to_float16(x), x.astype(np.float16))
    y = np.array([1.0, 65536.0], np.float64)
    with np.errstate(all="ignore"):
        assert np.array_equal(_bits(to_float16(y)), _bits(y.astype(np.float16)))


@pytest.mark.parametrize(
    "dtype", [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]
)
def test_nonfinite_report_finds_every_nan_and_inf(dtype: type) -> None:
    clean = np.linspace(-3, 3, 64).astype(dtype)
    assert nonfinite_report({"q": clean}) == []
    dirty = clean.copy()
    dirty[[3, 9]] = np.nan
    dirty[20] = -np.inf
    (line,) = nonfinite_report({"q": dirty})
    assert "2 NaN and 1 Inf" in line
