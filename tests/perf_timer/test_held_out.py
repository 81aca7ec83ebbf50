"""The held-out native points with ranges (issue 26, bench/kernel_model.py part 1):
``calibration.held_out_errors`` gives the held-out points' errors in ``POINTS`` order,
then the other published points', for any moved table."""

from __future__ import annotations

import pytest

from fadsl.perf import calibration


def test_held_out_errors_follow_the_calibration_rows_then_the_other_points() -> None:
    values = calibration.fit()
    got = calibration.held_out_errors(values)
    rows = [r for r in calibration.calibration(values) if not r.fitted]
    assert len(got) == len(rows) + len(calibration.OTHER)
    assert got[: len(rows)] == pytest.approx([r.error for r in rows])
    (t, shape, pub), *_ = calibration.OTHER
    want = 100 * (calibration.model_tflops(t, shape, values) / pub - 1)
    assert got[len(rows)] == pytest.approx(want)


def test_a_moved_table_moves_the_held_out_errors() -> None:
    factors = {"block_dispatch_cycles": 0.5}
    moved = calibration.held_out_errors(calibration.fit(factors), factors)
    central = calibration.held_out_errors(calibration.fit())
    assert moved != pytest.approx(central, abs=1e-6)
    assert calibration.reproduces(calibration.fit(factors), factors)
