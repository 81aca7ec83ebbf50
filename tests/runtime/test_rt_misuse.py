"""Misuse is refused with one clear `fadsl-cpu-runtime:` line naming the call, the core and what
was expected vs found, then abort(); plus core identities as on hardware."""

import pytest

from rtutil import assert_aborted, assert_ok, run

pytestmark = pytest.mark.cpu_runtime


@pytest.fixture(scope="module")
def exe(program):
    return program("misuse.cpp")


def test_ub_capacity_enforced_at_initbuffer(exe):
    msg = assert_aborted(run(exe, "ub_overflow"))
    assert msg == (
        "fadsl-cpu-runtime: InitBuffer on AIV 0 (block 0): UB overflow: 200704 B requested in total "
        "(this call 65536 B = 2 x 32768 B for TQue<VECIN>), capacity 196352 B on ascend910b1"
    )


def test_l0c_capacity_enforced_and_length_rounded_to_32(exe):
    assert_aborted(
        run(exe, "l0c_overflow"),
        "InitBuffer on AIC 0 (block 0)",
        "L0C overflow: 131104 B",
        "32 B for TBuf<CO1>",
        "capacity 131072 B",
    )


def test_ub_buffer_on_cube_core_refused(exe):
    assert_aborted(
        run(exe, "ub_on_aic"),
        "InitBuffer on AIC 0 (block 0)",
        "VECIN lives in UB, which an AIC does not have",
    )


@pytest.mark.parametrize(
    "case, fragments",
    [
        (
            "alloc_no_free",
            [
                "AllocTensor on AIV 0",
                "no free buffer in TQue<VECIN, 1>",
                "all 1 buffers",
            ],
        ),
        ("deque_empty", ["DeQue on AIV 0", "DeQue of an empty queue"]),
        (
            "enque_beyond_depth",
            [
                "EnQue on AIV 0",
                "beyond the queue depth",
                "already holds 1 tensor(s), depth is 1",
            ],
        ),
        (
            "free_foreign",
            [
                "FreeTensor on AIV 0",
                "TQue<VECIN> #0 buffer 1/1 does not belong to TQue<VECOUT, 1> #1",
            ],
        ),
        ("double_free", ["FreeTensor on AIV 0", "already freed"]),
        ("use_after_free", ["Adds on AIV 0", "after FreeTensor"]),
        ("oob_local", ["Add on AIV 0", "elements [0, 128)", "past the buffer's 256 B"]),
        ("oob_getvalue", ["LocalTensor::SetValue on AIV 0", "past the buffer's 64 B"]),
        ("misaligned", ["Duplicate on AIV 0", "is not 32-byte aligned"]),
        (
            "gm_oob",
            [
                "DataCopy (GM->local, count) on AIV 0",
                "outside the SetGlobalBuffer size (16 x 4 B)",
            ],
        ),
        (
            "set_twice",
            [
                "SetFlag<HardEvent::MTE2_V>(1) on AIV 0",
                "already set and not yet waited",
            ],
        ),
        (
            "wait_without_set",
            ["WaitFlag<HardEvent::V_MTE3>(1) on AIV 0", "no matching SetFlag"],
        ),
        (
            "set_never_waited",
            ["kernel end on AIV", "SetFlag<HardEvent::V_MTE3>(2) was never matched"],
        ),
        (
            "bad_event_id",
            ["SetFlag<HardEvent::V_MTE3>(8)", "eventID must be in [0, 7]"],
        ),
        (
            "reduce_small_work",
            [
                "ReduceMax on AIV 0",
                "sharedTmpBuffer has 160 elements",
                "needs at least 176",
            ],
        ),
        (
            "vec_on_l1",
            [
                "Adds on AIC 0 (block 0)",
                "dst must be in UB but is a tensor of TBuf<A1> #0 (L1)",
            ],
        ),
        (
            "fill_l0a_misaligned",
            ["Fill on AIC 0", "dst", "512"],
        ),
        (
            "tbuf_get_too_long",
            [
                "TBuf::Get on AIV 0",
                "33 elements of float exceed TBuf<VECCALC> #0 (128 B)",
            ],
        ),
    ],
)
def test_queue_bounds_and_flag_misuse(exe, case, fragments):
    res = run(exe, case)
    assert_aborted(res, *fragments)
    assert "done" not in res.stdout


def test_tensor_views(exe):
    out = assert_ok(run(exe, "views"))
    # 64 floats; as 128 halves, half #3 is the high half of float #1 (1.0f = 0x3f800000); view [8:] has 56
    assert "views 64 128 3f80 56 11" in out  # 11 = TPosition::VECCALC


def test_kernel_pointer_must_come_from_gmalloc(exe):
    assert_aborted(
        run(exe, "not_gmalloc"),
        "ICPU_RUN_KF(noop) on host: argument 0",
        "not returned by AscendC::GmAlloc",
    )


def test_gmfree_twice(exe):
    assert_aborted(
        run(exe, "double_gmfree"), "GmFree on host", "not returned by AscendC::GmAlloc"
    )


def test_launch_refuses_more_blocks_than_physical_cores(exe):
    assert_aborted(
        run(exe, "mix_too_many"),
        "numBlocks 25 is outside [1, 24]",
        "MIX_MODE",
        "1 AIC + 2 AIV",
    )
    assert_aborted(
        run(exe, "aiv_too_many"), "numBlocks 49 is outside [1, 48]", "AIV_MODE"
    )
    assert "done" in assert_ok(run(exe, "aiv_max"))


def _ids(out):
    return sorted(l for l in out.splitlines() if l.startswith("core"))


def test_core_identity_mix_1_2(exe):
    ids = _ids(assert_ok(run(exe, "ids_mix")))
    aic = [f"core AIC blk={b} num=3 sub=0 subnum=1 ratio=1" for b in range(3)]
    aiv = [f"core AIV blk={j} num=3 sub={j % 2} subnum=2 ratio=2" for j in range(6)]
    assert ids == sorted(aic + aiv)


def test_core_identity_aiv_only(exe):
    ids = _ids(assert_ok(run(exe, "ids_aiv")))
    assert ids == sorted(
        f"core AIV blk={j} num=3 sub=0 subnum=1 ratio=1" for j in range(3)
    )
