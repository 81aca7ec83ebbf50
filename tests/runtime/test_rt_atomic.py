"""SetAtomicAdd / SetAtomicNone / DisableDmaAtomic: copies into GM add under the atomic mode,
the mode is per core and lasts until it is turned off, and types the SoC lacks are refused.
"""

import numpy as np
import pytest

from rtutil import assert_aborted, assert_ok, compile_cpp, run

pytestmark = pytest.mark.cpu_runtime

NB, N = 8, 64


@pytest.fixture(scope="module")
def exe(program):
    return program("atomic.cpp")


def _x() -> np.ndarray:
    return ((np.arange(NB * N) * 37) % 101 - 50).astype(np.float32).reshape(NB, N)


def _run(exe, case: str, tmp_path) -> tuple[np.ndarray, np.ndarray]:
    p1, p2 = tmp_path / "o1.bin", tmp_path / "o2.bin"
    assert "done" in assert_ok(run(exe, case, str(p1), str(p2)))
    return np.fromfile(p1, dtype=np.uint8), np.fromfile(p2, dtype=np.float32)


def test_datacopy_adds_from_every_core_and_the_mode_persists(exe, tmp_path):
    """8 vector cores each add their row twice (one SetAtomicAdd); after a barrier over all
    of them, block 0 reads the sum back. The values are small integers: every order of the
    f32 adds gives the same sum."""
    out, out2 = _run(exe, "sum_f32", tmp_path)
    want = 2 * _x().sum(axis=0)
    np.testing.assert_array_equal(out.view(np.float32), want)
    np.testing.assert_array_equal(out2[:N], want)


def test_datacopypad_adds_only_the_bytes_it_moves(exe, tmp_path):
    out, _ = _run(exe, "pad_half", tmp_path)
    got = out[:64].view(np.float16)
    xh = ((np.arange(NB * 32) * 13) % 17 - 8).astype(np.float16).reshape(NB, 32)
    np.testing.assert_array_equal(got[:20], xh[:, :20].sum(axis=0))
    np.testing.assert_array_equal(got[20:], np.full(12, 7, np.float16))


def test_setatomicnone_and_disabledmaatomic_restore_plain_copies_per_core(
    exe, tmp_path
):
    out, out2 = _run(exe, "reset", tmp_path)
    x = _x()
    np.testing.assert_array_equal(out.view(np.float32), x[0::2].sum(axis=0))
    # every row of out2 started at 100: after the mode is off (or never on) a copy overwrites
    np.testing.assert_array_equal(out2.reshape(NB, N), x)


def test_fixpipe_adds_cube_results_from_every_core(exe, tmp_path):
    """3 cube cores add q_b @ I into one f32 tile through Fixpipe (L0C -> GM)."""
    p = tmp_path / "acc.bin"
    assert "done" in assert_ok(run(exe, "fixpipe_add", str(p)))
    q = ((np.arange(3 * 256) * 7) % 11 - 5).astype(np.float32).reshape(3, 16, 16)
    np.testing.assert_array_equal(
        np.fromfile(p, dtype=np.float32).reshape(16, 16), q.sum(axis=0)
    )


def test_copy_of_another_type_than_the_atomic_type_is_refused(exe):
    assert_aborted(
        run(exe, "mismatch"),
        "DataCopy (UB->GM, count) on AIV 0",
        "SetAtomicAdd<float> is in effect",
        "moves half elements",
    )


def test_read_of_atomic_adds_before_waiting_is_refused(exe):
    assert_aborted(
        run(exe, "unwaited_read"),
        "GlobalTensor::GetValue on AIV 0",
        "read of vector-core output before waiting",
        "(atomic add) on AIV 1",
    )


KERNEL = """#include "tikicpulib.h"
extern "C" __global__ __aicore__ void k() { AscendC::SetAtomicAdd<%s>(); AscendC::SetAtomicNone(); }
int main() { return 0; }
"""


@pytest.mark.parametrize(
    "soc, dtype, ok",
    [
        ('"ascend910b1"', "float", True),
        ('"ascend910b1"', "bfloat16_t", True),
        ('"ascend910b1"', "int8_t", True),
        ('"ascend910b1"', "uint8_t", False),
        ('"ascend910b1"', "double", False),
        ('"ascend310p3"', "half", True),
        ('"ascend310p3"', "bfloat16_t", False),
        ('"ascend910a"', "float", True),
        ('"ascend910a"', "half", False),
    ],
)
def test_atomic_add_types_of_each_soc(build_dir, soc, dtype, ok):
    _, res = compile_cpp(
        KERNEL % dtype,
        build_dir,
        defines={"FADSL_SOC_VERSION": soc},
        check=False,
        syntax_only=True,
    )
    if ok:
        assert res.returncode == 0, res.stderr
    else:
        assert res.returncode != 0
        assert "is not an atomic-add type of this SoC" in res.stderr
