"""DataCopy/DataCopyPad units: element counts rounded down to 32 B (with a warning), 32 B
blocks in DataCopyParams, bytes (GM side) vs 32 B blocks (UB side) in DataCopyPad, padding.
"""

import numpy as np
import pytest

from rtutil import assert_ok, run

pytestmark = pytest.mark.cpu_runtime
POISON16 = np.uint16(0xFFFF)


@pytest.fixture(scope="module")
def exe(program):
    return program("datacopy.cpp")


def _run(exe, tmp_path, case):
    po = tmp_path / f"{case}.bin"
    res = run(exe, case, str(po))
    assert_ok(res)
    return np.fromfile(po, dtype=np.uint8), res


def test_count_not_multiple_of_32_bytes_is_rounded_down_with_one_warning(exe, tmp_path):
    raw, res = _run(exe, tmp_path, "round_down")
    out = raw.view(np.float32)[:16]
    np.testing.assert_array_equal(out[:8], np.arange(1, 9, dtype=np.float32))
    assert np.all(raw.view(np.uint32)[8:16] == 0xFFFFFFFF)  # UB poison: never copied
    warns = [l for l in res.stderr.splitlines() if "warning:" in l]
    assert len(warns) == 1, res.stderr
    assert (
        "DataCopy (GM->local): count 13 x 4 B = 52 B is not a multiple of 32 B"
        in warns[0]
    )
    assert "rounds the transfer down to 32 B" in warns[0]


def test_datacopy_params_blocks_and_gaps(exe, tmp_path):
    raw, _ = _run(exe, tmp_path, "params")
    out = raw.view(np.float32)[:64].reshape(4, 16)
    x = np.arange(1, 97, dtype=np.float32).reshape(
        4, 24
    )  # GM row pitch: 2 blocks + 1 gap block = 24 floats
    np.testing.assert_array_equal(out, x[:, :16])


def test_datacopy_ub_to_ub(exe, tmp_path):
    raw, _ = _run(exe, tmp_path, "ub_to_ub")
    out = raw.view(np.float32)[:64]
    x = np.arange(1, 65, dtype=np.float32)
    e = np.zeros(64, np.float32)
    e[:16] = x[:16]
    e[32:40] = x[16:24]  # first block of ta[16:]
    e[40:48] = x[32:40]  # srcGap 1 block -> third block
    np.testing.assert_array_equal(out, e)


def _halves(raw, n):
    return raw.view(np.uint16)[:n]


def _h(v):
    return np.array(v, dtype=np.float16).view(np.uint16)


def test_datacopy_pad_gm_to_ub_padding_values(exe, tmp_path):
    raw, _ = _run(exe, tmp_path, "pad_in_values")
    ub = _halves(raw, 96).reshape(3, 32)  # slot 32 B (16 halves) + dstStride 1 block
    for r in range(3):
        data = _h(np.arange(1, 11) + 16 * r)  # GM pitch = 20 B + 12 B = 16 halves
        np.testing.assert_array_equal(
            ub[r, :16], np.concatenate([_h([7, 7]), data, _h([7, 7, 7, 7])])
        )
        assert np.all(ub[r, 16:] == POISON16), "dstStride gap must stay untouched"


def test_datacopy_pad_dummy_is_first_element_without_padding(exe, tmp_path):
    raw, _ = _run(exe, tmp_path, "pad_in_dummy")
    ub = _halves(raw, 96).reshape(3, 32)
    for r in range(3):
        data = _h(np.arange(1, 11) + 16 * r)
        np.testing.assert_array_equal(
            ub[r, :16], np.concatenate([data, np.repeat(data[:1], 6)])
        )


def test_datacopy_pad_without_ispad_leaves_unspecified_padding(exe, tmp_path):
    raw, _ = _run(
        exe, tmp_path, "pad_in_nopad"
    )  # DataCopyParams + DataCopyPadParams overload
    ub = _halves(raw, 96).reshape(3, 32)
    for r in range(3):
        assert ub[r, 0] == POISON16  # "random" left padding is modelled as poison
        np.testing.assert_array_equal(ub[r, 1:11], _h(np.arange(1, 11) + 16 * r))
        assert np.all(ub[r, 11:16] == POISON16)


@pytest.mark.parametrize("case", ["pad_out_ext", "pad_out_params"])
def test_datacopy_pad_ub_to_gm(exe, tmp_path, case):
    raw, _ = _run(exe, tmp_path, case)
    gm = _halves(raw, 36).reshape(3, 12)
    for r in range(3):
        np.testing.assert_array_equal(
            gm[r, :10], _h(np.arange(1, 11) + 32 * r)
        )  # UB pitch: 2 blocks
        assert np.all(gm[r, 10:] == POISON16)  # 4 B GM gap untouched
