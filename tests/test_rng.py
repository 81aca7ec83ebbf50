"""fadsl.rng: Philox4x32-10 against the Random123 known-answer vectors, and the uniform
numbers drawn from it (range, exactness, independence of tiling)."""

from __future__ import annotations

import numpy as np
import pytest

from fadsl.rng import dropout_keep, philox4x32, philox_uniform

# Random123 kat_vectors: philox4x32 with 10 rounds
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    (
        (0xFFFFFFFF,) * 4,
        (0xFFFFFFFF,) * 2,
        (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD),
    ),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize("counter,key,want", KAT)
def test_philox_known_answers(counter: tuple, key: tuple, want: tuple) -> None:
    assert tuple(int(x) for x in philox4x32(counter, key)) == want


def test_negative_seeds_are_their_two_s_complement_words() -> None:
    a = philox4x32((1, 2, 3, 4), (-1, -2))
    b = philox4x32((1, 2, 3, 4), (0xFFFFFFFF, 0xFFFFFFFE))
    assert [int(x) for x in a] == [int(x) for x in b]


def test_uniform_uses_each_counter_s_four_words_in_column_order() -> None:
    words = philox4x32((5, 9, 2, 7), (11, 13))
    u = philox_uniform(11, 13, 7, 2, 9, np.arange(20, 24))
    np.testing.assert_array_equal(u, [float(int(w) >> 8) * 2.0**-24 for w in words])


def test_uniform_range_and_keep_fraction() -> None:
    rows, cols = np.arange(1000)[:, None], np.arange(1000)[None, :]
    u = philox_uniform(1234, 5678, 3, 0, rows, cols)
    assert u.dtype == np.float32 and u.min() >= 0.0 and u.max() < 1.0
    for p in (0.1, 0.5, 0.9):
        assert abs(dropout_keep(u, p).mean() - (1 - p)) < 0.01
