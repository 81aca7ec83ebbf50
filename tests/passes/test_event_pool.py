"""The TPipe's event-ID pools are part of the resource proof (fadsl/plan/sync/event_pool.py).

fa3 with double-buffered K/V loads passed ``fadsl check`` and compiled, but its cube core
has 11 L1 queue buffers that each hold an MTE1->MTE2 event ID once freed, and a pool has
8: the CPU runtime stopped it ("all 8 IDs of HardEvent::MTE1_MTE2 are allocated"), and on
an NPU it is undefined behaviour.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fadsl.cli import main
from fadsl.plan.sync.event_pool import FREE_EVENT, que_max_event

ROOT = Path(__file__).resolve().parents[2]
FA3 = str(ROOT / "examples" / "fa3.py")
FA2 = str(ROOT / "examples" / "fa2.py")


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["check", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_fa3_double_buffered_exhausts_the_mte1_mte2_pool(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = _check(capsys, FA3, "--set", "stages=2")
    assert rc == 1
    assert "DOES NOT FIT" in out
    # 10: its two P tiles (t_9_1, t_25_1) share one L1 queue (plan/memory/l1_share.py)
    assert "can hold 10 IDs of HardEvent::MTE1_MTE2 at once, and the TPipe has 8" in err
    assert "kTQ (B1, 2 buffers, fa3.py:" in err
    assert "stages=1" in err


def test_fa3_single_buffered_and_fa2_fit(capsys: pytest.CaptureFixture[str]) -> None:
    assert _check(capsys, FA3)[0] == 0
    assert _check(capsys, FA2)[0] == 0


def test_the_pool_sizes_are_the_headers() -> None:
    # QUE_MAX_EVENT: 8 on __NPU_ARCH__ 2002/2201, 4 elsewhere (kernel_macros.h)
    assert (que_max_event(2201), que_max_event(2002), que_max_event(1001)) == (8, 8, 4)
    assert FREE_EVENT["VECIN"] == "V_MTE2" and FREE_EVENT["B1"] == "MTE1_MTE2"
