"""The TPipe's event-ID pool (AllocEventID / ReleaseEventID / FetchEventID) and the flags that
TQue's FreeTensor / AllocTensor / EnQue / DeQue set and wait with IDs from it (issue 12): a kernel
that sets an (event, ID) a queue holds, or waits for one nobody set, fails with both sides named.
"""

import pytest

from rtutil import assert_aborted, assert_ok, run

pytestmark = pytest.mark.cpu_runtime


@pytest.fixture(scope="module")
def exe(program):
    return program("event_pool.cpp")


def test_fa1_hard_coded_v_mte2_id_after_two_frees_is_caught(exe):
    """Regression (issue 12): fa1's vector code set V_MTE2 ID 1 by hand while a freed VECIN
    buffer held that ID; the runtime used to accept it."""
    msg = assert_aborted(run(exe, "fixed_id_after_free"))
    assert "SetFlag<HardEvent::V_MTE2>(1) on AIV 0 (block 0)" in msg
    assert "already set and not yet waited for" in msg
    assert "set by FreeTensor of TQue<VECIN> #0 buffer 2/2" in msg
    assert "AllocEventID/FetchEventID" in msg


def test_fetched_id_is_the_lowest_free_one_and_accepted(exe):
    out = assert_ok(run(exe, "fetched_id_after_free"))
    assert "used 2" in out


def test_ids_are_lowest_free_and_shared_with_queues(exe):
    out = assert_ok(run(exe, "ids"))
    # after one FreeTensor (ID 0): fetch 1, alloc 1, fetch 2; after the buffer is reused
    # (ID 0 released) fetch 0; after an EnQue (MTE2_V ID 0) fetch 1.
    assert "ids 1 1 2 0 1" in out


@pytest.mark.parametrize(
    "case, fragments",
    [
        (
            "steal_free_flag",
            [
                "WaitFlag<HardEvent::MTE3_V>(0) on AIV 0",
                "no matching SetFlag",
                "inside AllocTensor of TQue<VECOUT> #0 buffer 1/1",
            ],
        ),
        (
            "set_on_enque_id",
            [
                "SetFlag<HardEvent::MTE2_V>(0) on AIV 0",
                "set by EnQue of TQue<VECIN> #0 buffer 1/1",
            ],
        ),
        (
            "aic_m_mte1_reserved",
            [
                "SetFlag<HardEvent::M_MTE1>(0) on AIC 0",
                "set by TPipe::TPipe (M_MTE1 IDs 0-2 are reserved on an AIC)",
            ],
        ),
        (
            "pool_exhausted",
            ["AllocEventID on AIV 0", "all 8 IDs of HardEvent::V_S are allocated"],
        ),
        (
            "release_unallocated",
            [
                "ReleaseEventID on AIV 0",
                "event ID 3 of HardEvent::V_S is not allocated",
            ],
        ),
        ("no_pipe", ["GetTPipePtr on AIV 0", "no TPipe is alive on this core"]),
    ],
)
def test_event_id_misuse_is_refused(exe, case, fragments):
    res = run(exe, case)
    assert_aborted(res, *fragments)
    assert "done" not in res.stdout
