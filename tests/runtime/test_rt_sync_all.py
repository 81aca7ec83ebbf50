"""SyncAll, the hardware all-core barrier, in the CPU runtime: every core sees every core's GM
writes after it (an all-gather through GM), and its misuses are refused with what to do.
"""

import numpy as np
import pytest

from rtutil import assert_aborted, assert_ok, run

pytestmark = pytest.mark.cpu_runtime
CORES, SLICE = 6, 8


@pytest.fixture(scope="module")
def exe(program):
    return program("sync_all.cpp")


def gathered(path) -> np.ndarray:
    return np.fromfile(path, dtype=np.float32).reshape(CORES, CORES, SLICE)


@pytest.mark.parametrize("case", ["mix_gather", "aiv_gather"])
def test_every_core_reads_every_core_s_slice_after_the_barrier(exe, tmp_path, case):
    out = tmp_path / "o.bin"
    assert "done" in assert_ok(run(exe, case, str(out)))
    want = np.repeat(np.arange(1, CORES + 1, dtype=np.float32), SLICE).reshape(
        CORES, SLICE
    )
    for v in range(CORES):
        np.testing.assert_array_equal(gathered(out)[v], want)


def test_without_the_barrier_the_read_of_another_core_s_slice_is_a_race(exe):
    assert_aborted(
        run(exe, "mix_no_barrier"),
        "DataCopy (GM->local, count) on AIV",
        "read of vector-core output before waiting",
        "has not waited (CrossCoreWaitFlag, or a SyncAll)",
    )


def test_a_core_that_never_reaches_the_barrier_is_a_deadlock_naming_the_step(exe):
    assert_aborted(
        run(exe, "one_core_absent", env={"FADSL_DEADLOCK_SECONDS": "1"}),
        "deadlock",
        "SyncAll<false>() (the AIC waits for its two AIVs to arrive)",
        "SyncAll<false>() (the AIC waits for every AIC of the launch)",
    )


def test_hard_sync_of_aics_and_aivs_outside_a_mix_launch_is_refused(exe):
    assert_aborted(
        run(exe, "aiv_false"),
        "SyncAll<false>() on AIV",
        "synchronises the AICs with the AIVs of a MIX launch",
        "use SyncAll<true>()",
    )


def test_a_kernel_flag_on_an_id_syncall_reserves_is_refused(exe):
    assert_aborted(
        run(exe, "reserved_flag"),
        "uses cross-core flag IDs 11-14",
        "Take the kernel's own flag IDs from 0-10 and 15",
    )
