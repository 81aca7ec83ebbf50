"""Level-2 / level-0 vector ops, reductions, Compare/Select and logic ops, element-exact against
numpy (results are correctly rounded to the element type; sums follow the documented tree).
"""

import numpy as np
import pytest

from rtutil import assert_ok, run

pytestmark = pytest.mark.cpu_runtime
DT = {"float": np.float32, "half": np.float16}


@pytest.fixture(scope="module")
def exe(program):
    return program("vector_ops.cpp")


def _run(exe, tmp_path, case, dtype, count, x, y):
    px, py, po = tmp_path / "x.bin", tmp_path / "y.bin", tmp_path / "o.bin"
    x.tofile(px)
    y.tofile(py)
    res = run(exe, case, dtype, str(count), str(px), str(py), str(po))
    assert_ok(res)
    return np.fromfile(po, dtype=np.uint8), res


def rnd(v, dt):
    return np.asarray(v, dtype=np.float64).astype(dt)


def tree_sum(vals, dt):
    """Pairwise adjacent tree with rounding to dt after each add (ReduceDataBlock.md)."""
    v = [np.float64(a) for a in vals]
    while len(v) > 1:
        v = [
            np.float64(rnd(v[i] + v[i + 1], dt)) if i + 1 < len(v) else v[i]
            for i in range(0, len(v), 2)
        ]
    return v[0]


def reduce_sum(x, dt):
    per = 256 // np.dtype(dt).itemsize
    acc = None
    for r in range(0, len(x), per):
        s = tree_sum(x[r : r + per], dt)
        acc = s if acc is None else np.float64(rnd(acc + s, dt))
    return rnd(acc, dt)


@pytest.mark.parametrize("dtype", ["float", "half"])
@pytest.mark.parametrize("count", [64, 200, 1000])
def test_level2_ops(exe, tmp_path, dtype, count):
    dt = DT[dtype]
    rng = np.random.default_rng(count)
    npad = (count + 31) // 32 * 32
    x = rng.uniform(-3, 3, npad).astype(dt)
    y = rng.uniform(0.5, 4, npad).astype(dt)
    x[5] = x[7] = (
        x.max() + 1 if count > 7 else x[5]
    )  # a tie for ReduceMax: smallest index wins
    raw, _ = _run(exe, tmp_path, "l2", dtype, count, x, y)
    out = raw.view(dt)[: npad * 20].reshape(20, npad)
    x64, y64 = x[:count].astype(np.float64), y[:count].astype(np.float64)
    n = count
    expect = [
        rnd(x64 + y64, dt),
        rnd(x64 - y64, dt),
        rnd(x64 * y64, dt),
        rnd(x64 / y64, dt),
        rnd(np.maximum(x64, y64), dt),
        rnd(np.minimum(x64, y64), dt),
        rnd(np.exp(x64), dt),
        rnd(np.log(y64), dt),
        rnd(np.abs(x64), dt),
        rnd(np.sqrt(y64), dt),
        rnd(1 / y64, dt),
        rnd(x64 + 1.5, dt),
        rnd(x64 * -0.75, dt),
        rnd(np.maximum(x64, 0.25), dt),
        rnd(np.minimum(x64, 0.25), dt),
        rnd(np.full(n, 3.25), dt),
        rnd(np.arange(n) - 2.0, dt),
    ]
    for i, e in enumerate(expect):
        np.testing.assert_array_equal(out[i, :n], e, err_msg=f"slot {i}")
        assert np.all(out[i, n:] == 0), f"slot {i} wrote past count"
    # ReduceMax with index: [max, index bits], without index: [max]
    imax = int(np.argmax(x64))
    assert out[17, 0] == rnd(x64.max(), dt)
    idx_bits = out[17, 1:2].view(np.uint16 if dt == np.float16 else np.uint32)[0]
    assert idx_bits == imax
    assert out[19, 0] == rnd(x64.max(), dt)
    assert out[18, 0] == reduce_sum(x[:count], dt)


@pytest.mark.parametrize("dtype", ["float", "half"])
def test_level0_and_repeat_reductions(exe, tmp_path, dtype):
    dt = DT[dtype]
    E = 256 // np.dtype(dt).itemsize
    epb = E // 8
    n = 8 * E
    rng = np.random.default_rng(7)
    x = rng.uniform(-2, 2, n).astype(dt)
    y = rng.uniform(-2, 2, n).astype(dt)
    raw, _ = _run(exe, tmp_path, "l0", dtype, 0, x, y)
    out = raw.view(dt)[: 11 * n].reshape(11, n)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)

    def lane(r, l, blk, rep):
        return r * rep * epb + (l // epb) * blk * epb + l % epb

    # 0: Add with bitwise mask every third lane, src0 block stride 2 / repeat stride 16
    e = np.zeros(n)
    for r in range(2):
        for l in range(E):
            if l % 3 == 0:
                e[lane(r, l, 1, 8)] = x64[lane(r, l, 2, 16)] + y64[lane(r, l, 1, 8)]
    np.testing.assert_array_equal(out[0], rnd(e, dt))
    # 1: Mul, first E-5 lanes, 3 repeats, src1 repeat stride 0
    e = np.zeros(n)
    for r in range(3):
        for l in range(E - 5):
            e[lane(r, l, 1, 8)] = x64[lane(r, l, 1, 8)] * y64[l]
    np.testing.assert_array_equal(out[1], rnd(e, dt))
    # 2: Exp over 4 full repeats; 3: Adds over the first half of 4 repeats
    e = np.zeros(n)
    e[: 4 * E] = np.exp(x64[: 4 * E])
    np.testing.assert_array_equal(out[2], rnd(e, dt))
    e = np.zeros(n)
    for r in range(4):
        e[r * E : r * E + E // 2] = x64[r * E : r * E + E // 2] + 2.0
    np.testing.assert_array_equal(out[3], rnd(e, dt))
    # 4: Duplicate, dst block stride 2, repeat stride 16 blocks
    e = np.zeros(n)
    for r in range(2):
        for l in range(E):
            e[lane(r, l, 2, 16)] = 7.0
    np.testing.assert_array_equal(out[4], rnd(e, dt))
    # 5: WholeReduceMax -> [value, index] per repeat; 6: WholeReduceSum
    xr = x64.reshape(8, E)
    got = out[5, :16].reshape(8, 2)
    np.testing.assert_array_equal(got[:, 0], rnd(xr.max(axis=1), dt))
    ib = got[:, 1:2].copy().view(np.uint16 if dt == np.float16 else np.uint32).ravel()
    np.testing.assert_array_equal(ib, xr.argmax(axis=1))
    np.testing.assert_array_equal(out[6, :8], [tree_sum(xr[r], dt) for r in range(8)])
    # 8, 9: ReduceRepeat<MAX>, <SUM> (issue 28: CANN 9.1's names) equal WholeReduceMax/Sum
    np.testing.assert_array_equal(out[8], out[5])
    np.testing.assert_array_equal(out[9], out[6])
    # 10: ReduceRepeat<MIN> -> [value, index] per repeat
    got = out[10, :16].reshape(8, 2)
    np.testing.assert_array_equal(got[:, 0], rnd(xr.min(axis=1), dt))
    ib = got[:, 1:2].copy().view(np.uint16 if dt == np.float16 else np.uint32).ravel()
    np.testing.assert_array_equal(ib, xr.argmin(axis=1))
    # 7: BlockReduceMax -> 64 block maxima; Brcb of x[0:16] into 16 blocks at n/2
    np.testing.assert_array_equal(
        out[7, :64], rnd(x64.reshape(64, epb).max(axis=1), dt)
    )
    np.testing.assert_array_equal(
        out[7, n // 2 : n // 2 + 16 * epb], np.repeat(x[:16], epb)
    )


@pytest.mark.parametrize("dtype", ["float", "half"])
def test_compare_select(exe, tmp_path, dtype):
    dt = DT[dtype]
    n = 256
    rng = np.random.default_rng(11)
    x = rng.integers(-4, 5, n).astype(dt)
    y = rng.integers(-4, 5, n).astype(dt)
    raw, _ = _run(exe, tmp_path, "cs", dtype, n, x, y)
    slot = n * np.dtype(dt).itemsize

    def mask(i):
        return np.unpackbits(
            raw[i * slot : i * slot + n // 8], bitorder="little"
        ).astype(bool)

    np.testing.assert_array_equal(mask(0), x < y)
    np.testing.assert_array_equal(mask(1), x == y)
    np.testing.assert_array_equal(mask(2), x >= 0)
    vals = raw.view(dt)
    lt = x < y
    np.testing.assert_array_equal(vals[3 * n : 4 * n], np.where(lt, x, y))
    np.testing.assert_array_equal(vals[4 * n : 5 * n], np.where(lt, x, dt(-9)))
    per = 256 // np.dtype(dt).itemsize
    spr = np.tile(lt[:per], n // per)
    np.testing.assert_array_equal(vals[5 * n : 6 * n], np.where(spr, x, y))


def test_logic_int16(exe, tmp_path):
    rng = np.random.default_rng(5)
    x = rng.integers(-30000, 30000, 128).astype(np.int16)
    y = rng.integers(-30000, 30000, 128).astype(np.int16)
    raw, _ = _run(exe, tmp_path, "logic", "int16", 128, x, y)
    out = raw.view(np.int16)[: 3 * 128].reshape(3, 128)
    np.testing.assert_array_equal(out[0], x & y)
    np.testing.assert_array_equal(out[1], x | y)
    np.testing.assert_array_equal(out[2], ~x)


@pytest.mark.parametrize(
    "call, words",
    [
        (
            "ReduceRepeat<ReduceType::SUM, float, half>(f, h, 64, 1, 1, 1, 8);",
            "dst and src of one type",
        ),
        ("Fill(l1.Get<half>(), InitConstValueParams<float>(1, 1, 0, 0.0f));", "Fill"),
    ],
)
def test_the_new_names_refuse_what_the_headers_refuse(tmp_path, call, words):
    """ReduceRepeat on A2/A3 takes one dtype for dst and src; Fill's value type must be
    the tensor's (an enable_if in the asc-devkit header): both fail to compile."""
    from rtutil import compile_cpp

    source = (
        '#include "tikicpulib.h"\nusing namespace AscendC;\n'
        "void f_(LocalTensor<float> f, LocalTensor<half> h, TBuf<TPosition::A1> l1) {\n"
        f"    {call}\n}}\nint main() {{ return 0; }}\n"
    )
    _, res = compile_cpp(source, tmp_path, check=False)
    assert res.returncode != 0
    assert words in res.stderr
