"""Cube path (Nd2Nz -> LoadData -> Mmad -> Fixpipe) against a plain numpy matmul."""

import numpy as np
import pytest

from rtutil import assert_ok, run

pytestmark = pytest.mark.cpu_runtime


@pytest.fixture(scope="module")
def exe(program):
    return program("cube_matmul.cpp")


def _run(exe, tmp_path, case, a, b, out_dtype, out_shape):
    pa, pb, po = tmp_path / "a.bin", tmp_path / "b.bin", tmp_path / "o.bin"
    a.tofile(pa)
    b.tofile(pb)
    nbytes = int(np.prod(out_shape)) * np.dtype(out_dtype).itemsize
    assert_ok(run(exe, case, str(pa), str(pb), str(po), str(nbytes)))
    return np.fromfile(po, dtype=out_dtype).reshape(out_shape)


def _ints(rng, shape, dtype):
    # small integers: every product and partial sum is exact in fp32 and the result exact in fp16
    return rng.integers(-3, 4, size=shape).astype(dtype)


def test_matmul_basic_api_sample_exact(exe, tmp_path):
    rng = np.random.default_rng(0)
    a = _ints(rng, (256, 64), np.float16)
    b = _ints(rng, (64, 256), np.float16)
    c = _run(exe, tmp_path, "sample", a, b, np.float16, (256, 256))
    ref = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    np.testing.assert_array_equal(c, ref)


def test_matmul_basic_api_sample_random(exe, tmp_path):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((256, 64)).astype(np.float16)
    b = rng.standard_normal((64, 256)).astype(np.float16)
    c = _run(exe, tmp_path, "sample", a, b, np.float16, (256, 256))
    # exact fp64 accumulation rounded once to fp32 then RNE to fp16 (Fixpipe F322F16)
    ref = (
        (a.astype(np.float64) @ b.astype(np.float64))
        .astype(np.float32)
        .astype(np.float16)
    )
    np.testing.assert_array_equal(c, ref)


def test_q_times_k_transposed_half(exe, tmp_path):
    rng = np.random.default_rng(2)
    q = _ints(rng, (64, 128), np.float16)
    k = _ints(rng, (96, 128), np.float16)  # stored row-major [N, K]
    c = _run(exe, tmp_path, "qkt_half", q, k, np.float16, (64, 96))
    np.testing.assert_array_equal(
        c, (q.astype(np.float64) @ k.astype(np.float64).T).astype(np.float16)
    )


def test_fixpipe_nz_output(exe, tmp_path):
    rng = np.random.default_rng(5)
    q = _ints(rng, (64, 128), np.float16)
    k = _ints(rng, (96, 128), np.float16)
    c = _run(
        exe, tmp_path, "qkt_half_nz", q, k, np.float16, (96 // 16, 64, 16)
    )  # [N/16, M, 16]
    ref = (q.astype(np.float64) @ k.astype(np.float64).T).astype(np.float16)
    np.testing.assert_array_equal(c, ref.reshape(64, 6, 16).transpose(1, 0, 2))


def test_q_times_k_transposed_float(exe, tmp_path):
    rng = np.random.default_rng(3)
    q = rng.standard_normal((32, 48)).astype(np.float32)
    k = rng.standard_normal((64, 48)).astype(np.float32)
    c = _run(exe, tmp_path, "qkt_float", q, k, np.float32, (32, 64))
    np.testing.assert_array_equal(
        c, (q.astype(np.float64) @ k.astype(np.float64).T).astype(np.float32)
    )


def test_nonsquare_two_k_halves_accumulate(exe, tmp_path):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((48, 96)).astype(np.float16)
    b = rng.standard_normal((96, 32)).astype(np.float16)
    c = _run(exe, tmp_path, "nonsquare", a, b, np.float32, (48, 32))
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    half1 = (a64[:, :48] @ b64[:48]).astype(np.float32)
    ref = (half1.astype(np.float64) + a64[:, 48:] @ b64[48:]).astype(np.float32)
    np.testing.assert_array_equal(c, ref)
