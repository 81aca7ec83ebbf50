"""The sanitizer's seeded mutants (issue 28): each defect re-introduced on purpose in one small
kernel (tests/runtime/cpp/sanitize.cpp, one build) must be caught with a report naming both
calls and their lines; the kernel without a defect runs clean under the sanitizer."""

import pytest

from rtutil import assert_aborted, assert_ok, run

pytestmark = pytest.mark.cpu_runtime

SANITIZE = {"FADSL_SANITIZE": "1"}

# defect -> fragments of the first report line
MUTANTS = {
    "drop_v_mte2_wait": (
        "sanitize: write-after-read",
        "DataCopy (GM->local, count) (PIPE_MTE2) writes UB bytes [0, 128) of TBuf<VECCALC> #0",
        # the other call's API name (a run-time string) must survive until the report
        "that Cast<half, float>(CAST_RINT) (PIPE_V) read at ",
        "SetFlag/WaitFlag<HardEvent::V_MTE2>",
    ),
    "drop_mte2_v_wait": (
        "sanitize: read-after-write",
        "Cast<half, float>(CAST_RINT) (PIPE_V) reads UB bytes [0, 128)",
        "that DataCopy (GM->local, count) (PIPE_MTE2) wrote at ",
        "HardEvent::MTE2_V",
    ),
    "drop_tque_free": (
        "sanitize: write-after-read",
        "Duplicate (PIPE_V) writes UB bytes [0, 64) of TQue<VECOUT>",
        "that DataCopy (UB->GM, count) (PIPE_MTE3) read at ",
        "HardEvent::MTE3_V",
    ),
    "drop_dup_v_mte2": (
        "sanitize: write-after-write",
        "DataCopy (GM->local, count) (PIPE_MTE2) writes UB bytes [0, 128) of TQue<VECIN>",
        "that Duplicate (PIPE_V) wrote at ",
    ),
    "drop_pad_zero": (
        "sanitize: uninitialised read",
        "CompareScalar reads UB bytes [128, 256) of TBuf<VECCALC> #1 that nothing wrote",
    ),
    "set_never_waited": (
        "kernel end on AIV 0",
        "SetFlag<HardEvent::V_MTE3>(1) was never matched by a WaitFlag",
    ),
    "gm_oob": ("DataCopy (GM->local, count)", "outside the SetGlobalBuffer size"),
}


@pytest.fixture(scope="module")
def exe(program):
    return program("sanitize.cpp")


def test_the_kernel_without_a_defect_runs_clean(exe):
    res = run(exe, env=SANITIZE)
    assert assert_ok(res).strip() == "done"
    assert "sanitize" not in res.stderr, res.stderr


@pytest.mark.parametrize("defect", sorted(MUTANTS))
def test_each_seeded_defect_is_caught(exe, defect):
    msg = assert_aborted(run(exe, defect, env=SANITIZE), *MUTANTS[defect])
    assert "sanitize.cpp:" in msg or "prog_" in msg, msg  # names the kernel line


def test_races_need_the_sanitizer(exe):
    """Without FADSL_SANITIZE a write-after-read goes unseen: why the suite turns it on."""
    assert (
        assert_ok(run(exe, "drop_v_mte2_wait", env={"FADSL_SANITIZE": "0"})).strip()
        == "done"
    )
