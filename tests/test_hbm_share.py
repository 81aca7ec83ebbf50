"""The chip's HBM shared by the cores of a launch (fadsl/perf/hbm_share.py) and the
paged decode that reads V on the vector cores (fadsl/lib/paged.py ``relayed``)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from fadsl.perf.hbm_share import capped_time, shared_finish

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "decode_paged.py"


def test_cores_below_the_chip_rate_finish_at_start_plus_work() -> None:
    starts = np.arange(4) * 1.0
    work = np.full(4, 10.0)
    demand = np.full(4, 10.0)  # 1 byte/s each, 4 at most at once
    assert np.allclose(shared_finish(starts, work, demand, 4.0), starts + work)


def test_two_cores_over_the_chip_rate_share_it() -> None:
    # each asks 2 B/s for 10 s; the chip gives 2 B/s: 40 bytes take 20 s
    f = shared_finish(np.zeros(2), np.full(2, 10.0), np.full(2, 20.0), 2.0)
    assert np.allclose(f, [20.0, 20.0])


def test_a_late_core_finds_the_chip_shared() -> None:
    # core 0 alone from 0 to 5 at full speed (half its work), then both at half
    # speed until core 0 ends at 15, then core 1 alone at full speed: 40 bytes at
    # the chip's 2 B/s all along
    f = shared_finish(np.array([0.0, 5.0]), np.full(2, 10.0), np.full(2, 20.0), 2.0)
    assert np.allclose(f, [15.0, 20.0])
    assert np.isclose(capped_time(1.0, 5.0, np.full(2, 10.0), np.full(2, 20.0), 2.0), 21.0)


def _decode_seconds(b: int, sets: list[str]) -> float:
    from fadsl.commands import common
    from fadsl.perf.kernel import KernelModel
    from fadsl.target import get

    t = get("ascend910b2")
    args = argparse.Namespace(
        file=str(EXAMPLE),
        kernel=None,
        sets=["kv_splits=3", "block_kv=384"] + sets,
        dtype=None,
        shape=f"B={b},N=32,Nkv=8,Sq=1,D=128,Pages={256 * b},MaxPages=256",
    )
    binding = common.build(args, target=t)
    return float(KernelModel(binding.kernel, t).estimate(binding.model_env()).time_s)


def test_decode_never_moves_more_than_the_chip_rate() -> None:
    """V on the vector cores: each AI core reads on three engines, but the K and V
    bytes still take at least their time at the chip's HBM rate, launch included
    (without the sharing the model gave 116 us at B=1: 1.16x the chip's rate)."""
    hbm, launch = 1382.4e9, 20156 / 1.8e9
    for b in (1, 8):
        nbytes = 2 * b * 32768 * 8 * 128 * 2
        relayed = _decode_seconds(b, ["v_cores=2"])
        assert relayed >= nbytes / hbm + launch
        assert relayed < _decode_seconds(b, ["v_cores=1"])
