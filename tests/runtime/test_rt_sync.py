"""Cross-core flags between an AIC and its two AIVs (threads, several blocks), the cross-core GM
visibility checker, deadlock detection, and intra-core pipe hazards on UB/L1."""

import numpy as np
import pytest

from rtutil import assert_aborted, assert_ok, run

pytestmark = pytest.mark.cpu_runtime


@pytest.fixture(scope="module")
def exe(program):
    return program("sync.cpp")


def test_aic_two_aiv_handshake_over_several_blocks(exe, tmp_path):
    po = tmp_path / "o.bin"
    assert "done" in assert_ok(run(exe, "handshake", str(po)))
    out = np.fromfile(po, dtype=np.float32).reshape(3, 4, 16, 16)
    q = ((np.arange(3 * 256) * 7) % 11 - 5).astype(np.float32).reshape(3, 16, 16)
    for b in range(3):
        for i in range(4):
            np.testing.assert_array_equal(out[b, i], 2 * (i + 1) * q[b] + i)


def test_vector_core_reading_cube_result_before_waiting(exe):
    assert_aborted(
        run(exe, "read_before_wait"),
        "GlobalTensor::GetValue on AIV",
        "read of a cube result before waiting",
        "written by Fixpipe (L0C->GM, FixpipeParamsV220) on AIC",
        "has not waited (CrossCoreWaitFlag, or a SyncAll)",
    )


def test_two_slot_ring_with_release_flags_passes(exe, tmp_path):
    po = tmp_path / "o.bin"
    assert "done" in assert_ok(run(exe, "ring_ok", str(po)))
    out = np.fromfile(po, dtype=np.float32).reshape(3, 4, 16, 16)[0]
    q = ((np.arange(256) * 7) % 11 - 5).astype(np.float32).reshape(16, 16)
    for i in range(4):
        np.testing.assert_array_equal(out[i], 2 * (i + 1) * q + i)


def test_ring_slot_reused_before_its_consumer_released_it(exe):
    """A one-slot ring with the cube one iteration ahead: the cube overwrites S_i before
    the vector cores released it (or before they even read it); either order fails."""
    assert_aborted(
        run(exe, "ring_too_shallow"),
        "a workspace slot overwritten before its consumer released it",
    )


def test_ring_slot_overwritten_after_the_read_without_a_release(exe):
    """The vector cores have read the slot (the cube pauses first) but set no flag after
    the read that the cube waited for: the cube's Fixpipe is the failing call."""
    assert_aborted(
        run(exe, "ring_war"),
        "Fixpipe",
        "on AIC 0 (block 0)",
        "a workspace slot overwritten before its consumer released it",
        "were read by AIV",
    )


def test_cube_core_reading_vector_output_before_waiting(exe):
    assert_aborted(
        run(exe, "aic_reads_early"),
        "GlobalTensor::GetValue on AIC 0 (block 0)",
        "read of vector-core output before waiting",
        "written by DataCopy (UB->GM, count) on AIV 0 (block 0, sub-block 0)",
    )


def test_deadlock_is_detected_and_lists_waiters(exe):
    msg = assert_aborted(
        run(exe, "deadlock", env={"FADSL_DEADLOCK_SECONDS": "1"}),
        "deadlock: all 6 running cores",
    )
    assert "[AIC 1 (block 1) waits in CrossCoreWaitFlag(flagId=5) (counter 0)]" in msg
    assert (
        "[AIV 3 (block 1, sub-block 1) waits in CrossCoreWaitFlag(flagId=6) (counter 0)]"
        in msg
    )


def test_deadlock_of_a_core_left_waiting_after_others_finished(exe):
    msg = assert_aborted(
        run(exe, "deadlock_after_exit", env={"FADSL_DEADLOCK_SECONDS": "1"})
    )
    assert "AIV 1 (block 0, sub-block 1) waits in CrossCoreWaitFlag(flagId=7)" in msg
    assert "finished cores: AIC 0 (block 0), AIV 0 (block 0, sub-block 0)" in msg


@pytest.mark.parametrize(
    "case, fragments",
    [
        (
            "unconsumed",
            ["at kernel end", "flagId 4", "never consumed by a CrossCoreWaitFlag"],
        ),
        (
            "partial_group",
            ["at kernel end", "CrossCoreSetFlag<2>(4) was set by only some cores"],
        ),
        (
            "flag_too_big",
            [
                "CrossCoreSetFlag<2, PIPE_FIX>(16) on AIC 0 (block 0)",
                "flagId must be in [0, 15]",
            ],
        ),
        (
            "too_many_sets",
            [
                "CrossCoreSetFlag<2, PIPE_FIX>(1) on AIC 0",
                "would exceed 15 outstanding",
            ],
        ),
        (
            "mode2_in_aiv_only",
            ["CrossCoreSetFlag<2, PIPE_MTE3>(1) on AIV", "needs a MIX launch"],
        ),
    ],
)
def test_cross_core_flag_misuse(exe, case, fragments):
    assert_aborted(run(exe, case), *fragments)


def test_modes_0_and_1(exe):
    assert "done" in assert_ok(run(exe, "mode1_and_mode0"))


@pytest.mark.parametrize("case", ["hz_flag", "hz_barrier_all"])
def test_synchronised_mte2_to_v_is_accepted(exe, case):
    assert "done" in assert_ok(run(exe, case))


@pytest.mark.parametrize(
    "case", ["hz_none", "hz_wrong_event", "hz_set_too_early", "hz_barrier_v"]
)
def test_vector_read_of_unsynchronised_mte2_copy(exe, case):
    assert_aborted(
        run(exe, case),
        "Muls on AIV 0 (block 0): reads UB bytes [0, 256) of TBuf<VECCALC> #0",
        "DataCopy (GM->local, count) (PIPE_MTE2) wrote",
        "SetFlag/WaitFlag<HardEvent::MTE2_V>",
    )


def test_mte3_read_of_unsynchronised_vector_result(exe):
    assert_aborted(
        run(exe, "hz_v_mte3"),
        "DataCopy (UB->GM, count) on AIV 0",
        "SetFlag/WaitFlag<HardEvent::V_MTE3>",
        "Muls (PIPE_V) wrote",
    )


def test_cube_load_of_unsynchronised_l1_copy(exe):
    assert_aborted(
        run(exe, "hz_cube"),
        "LoadData (L1->L0, LoadData2DParams) on AIC 0",
        "HardEvent::MTE2_MTE1",
    )
