"""Every op against a direct numpy expression, per dtype, on tiny hand-built kernels.

Each kernel runs a grid of G points; point g loads its own slice of the inputs, applies
the op and stores its own slice of the output, so the table also checks that the
batched execution keeps points apart. References are computed in float64 from the
(already rounded) inputs and compared with a tolerance of the result dtype.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from interp_kit import Kit, everything, imm, point, random

from fadsl.ir import nodes as ir
from fadsl.ir.types import DType
from fadsl.numerics import np_dtype

G = 3
F16, BF16, F32, I32, BOOL = DType.F16, DType.BF16, DType.F32, DType.I32, DType.BOOL
FLOATS = (F16, BF16, F32)
NUMERIC = (F16, BF16, F32, I32)

RTOL = {F16: 2.0**-10, BF16: 2.0**-7, F32: 2.0**-22, I32: 0.0, BOOL: 0.0}
"""One ulp of the result dtype: a correctly rounded result is within half of it."""


def _block(shape: tuple[int, ...]) -> tuple[Any, ...]:
    return (point("b"),) + tuple(everything(n) for n in shape)


def _assert_close(
    out: np.ndarray, ref: np.ndarray, dtype: DType, atol: float = 0.0
) -> None:
    got = np.asarray(out).astype(np.float64)
    want = np.asarray(ref).astype(np.float64)
    assert got.shape == want.shape
    if dtype in (I32, BOOL):
        np.testing.assert_array_equal(got, want)
        return
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=atol, equal_nan=True)


# ----------------------------------------------------------------------------
# Binary ops
# ----------------------------------------------------------------------------

ARITH: dict[type[ir.Binary], Callable[[Any, Any], Any]] = {
    ir.Add: np.add,
    ir.Sub: np.subtract,
    ir.Mul: np.multiply,
    ir.Maximum: np.maximum,
    ir.Minimum: np.minimum,
}
COMPARE: dict[type[ir.Binary], Callable[[Any, Any], Any]] = {
    ir.Lt: np.less,
    ir.Le: np.less_equal,
    ir.Gt: np.greater,
    ir.Ge: np.greater_equal,
    ir.Eq: np.equal,
    ir.Ne: np.not_equal,
}
SHAPES = [((4, 8), (4, 8)), ((4, 8), (4, 1)), ((1, 8), (4, 8)), ((4, 8), "imm")]


def _binary_cases() -> list[Any]:
    cases = []
    for cls in list(ARITH) + list(COMPARE) + [ir.Div]:
        for dtype in NUMERIC if cls is not ir.Div else FLOATS:
            for lhs, rhs in SHAPES:
                cases.append(
                    pytest.param(
                        cls,
                        dtype,
                        lhs,
                        rhs,
                        id=f"{cls.__name__}-{dtype.value}-{lhs}-{rhs}",
                    )
                )
    for cls in (ir.FloorDivide, ir.Remainder, ir.Div):
        for lhs, rhs in SHAPES:
            cases.append(
                pytest.param(cls, I32, lhs, rhs, id=f"{cls.__name__}-i32-{lhs}-{rhs}")
            )
    return cases


def _reference(cls: type[ir.Binary], a: np.ndarray, b: Any, dtype: DType) -> np.ndarray:
    if cls in ARITH:
        return ARITH[cls](a, b)
    if cls in COMPARE:
        return COMPARE[cls](a, b)
    if cls is ir.FloorDivide:
        return np.floor_divide(a, b)
    if cls is ir.Remainder:
        return np.remainder(a, b)
    if dtype is I32:
        return np.trunc(np.true_divide(a, b))  # C division
    return np.true_divide(a, b)


@pytest.mark.parametrize("cls, dtype, lhs_shape, rhs_shape", _binary_cases())
def test_binary(
    cls: type[ir.Binary], dtype: DType, lhs_shape: Any, rhs_shape: Any
) -> None:
    kit = Kit()
    kit.inp("x", (G, *lhs_shape), dtype)
    x = random((G, *lhs_shape), dtype, seed=1, low=-40, high=40)
    inputs = {"x": x}
    divides = cls in (ir.FloorDivide, ir.Remainder, ir.Div)
    if rhs_shape == "imm":
        rhs_value = -3 if dtype is I32 else 0.75
        y_ref: Any = np.asarray(rhs_value).astype(np_dtype(dtype)).astype(np.float64)
        out_shape = lhs_shape
    else:
        kit.inp("y", (G, *rhs_shape), dtype)
        y = random((G, *rhs_shape), dtype, seed=2, low=-40, high=40)
        if divides and dtype is I32:
            y = np.where(y == 0, 7, y).astype(y.dtype)
        inputs["y"] = y
        y_ref = y.astype(np.float64)[:, :, :]
        out_shape = np.broadcast_shapes(lhs_shape, rhs_shape)
    result_dtype = BOOL if cls in COMPARE else dtype
    kit.out("o", (G, *out_shape), result_dtype)

    def body(b: Any) -> None:
        lhs = kit.load("x", *_block(lhs_shape))
        if rhs_shape == "imm":
            rhs: Any = imm(rhs_value, I32 if dtype is I32 else F32)
        else:
            rhs = kit.load("y", *_block(rhs_shape))
        kit.store("o", kit.op(cls, lhs=lhs, rhs=rhs), *_block(out_shape))

    kit.grid([G], body)
    out = kit.run(**inputs).outputs["o"]
    assert out.dtype == np_dtype(result_dtype)
    ref = _reference(cls, x.astype(np.float64), y_ref, dtype)
    _assert_close(out, ref, result_dtype)


@pytest.mark.smoke
@pytest.mark.parametrize("cls, ref", [(ir.And, np.logical_and), (ir.Or, np.logical_or)])
def test_mask_logic(cls: type[ir.Binary], ref: Callable[..., Any]) -> None:
    kit = Kit()
    kit.inp("x", (G, 4, 8), F32)
    kit.out("o", (G, 4, 8), BOOL)
    x = random((G, 4, 8), F32, seed=3)

    def body(b: Any) -> None:
        t = kit.load("x", *_block((4, 8)))
        pos = kit.op(ir.Gt, lhs=t, rhs=imm(0.0))
        small = kit.op(ir.Lt, lhs=t, rhs=imm(0.5))
        both = kit.op(cls, lhs=pos, rhs=small)
        kit.store("o", kit.op(ir.Not, x=both), *_block((4, 8)))

    kit.grid([G], body)
    out = kit.run(x=x).outputs["o"]
    np.testing.assert_array_equal(out, ~ref(x > 0, x < 0.5))


@pytest.mark.parametrize("cls, ref", [(ir.And, np.bitwise_and), (ir.Or, np.bitwise_or)])
def test_integer_bitwise(cls: type[ir.Binary], ref: Callable[..., Any]) -> None:
    kit = Kit()
    kit.inp("x", (G, 8), I32)
    kit.out("o", (G, 8), I32)
    x = random((G, 8), I32, low=-100, high=100)

    def body(b: Any) -> None:
        t = kit.load("x", *_block((8,)))
        kit.store("o", kit.op(cls, lhs=t, rhs=imm(0b1010110, I32)), *_block((8,)))

    kit.grid([G], body)
    np.testing.assert_array_equal(kit.run(x=x).outputs["o"], ref(x, 0b1010110))


# ----------------------------------------------------------------------------
# Unary ops
# ----------------------------------------------------------------------------

UNARY: list[tuple[type[ir.Unary], Callable[[Any], Any], tuple[DType, ...], bool]] = [
    (ir.Exp, np.exp, FLOATS, False),
    (ir.Exp2, np.exp2, FLOATS, False),
    (ir.Log, np.log, FLOATS, True),
    (ir.Tanh, np.tanh, FLOATS, False),
    (ir.Sigmoid, lambda x: np.exp(-np.logaddexp(0.0, -x)), FLOATS, False),
    (ir.Sqrt, np.sqrt, FLOATS, True),
    (ir.Abs, np.abs, NUMERIC, False),
    (ir.Neg, np.negative, NUMERIC, False),
]


@pytest.mark.parametrize(
    "cls, ref, dtype, positive",
    [
        pytest.param(c, r, d, p, id=f"{c.__name__}-{d.value}")
        for c, r, dtypes, p in UNARY
        for d in dtypes
    ],
)
def test_unary(
    cls: type[ir.Unary], ref: Callable[[Any], Any], dtype: DType, positive: bool
) -> None:
    kit = Kit()
    kit.inp("x", (G, 4, 16), dtype)
    kit.out("o", (G, 4, 16), dtype)
    x = random((G, 4, 16), dtype, low=-1000, high=1000)
    if positive:
        x = (np.abs(x.astype(np.float32)) + 0.125).astype(x.dtype)

    def body(b: Any) -> None:
        kit.store("o", kit.op(cls, x=kit.load("x", *_block((4, 16)))), *_block((4, 16)))

    kit.grid([G], body)
    out = kit.run(x=x).outputs["o"]
    assert out.dtype == np_dtype(dtype)
    _assert_close(out, ref(x.astype(np.float64)), dtype, atol=1e-37)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.value)
def test_sigmoid_saturates_without_nan(dtype: DType) -> None:
    """Far from 0 exp(-x) overflows the dtype (x < -88.7 in f32): 1 / inf = 0, as the
    generated Muls/Exp/Adds/Div sequence gives; the float64 logistic is within the
    dtype's smallest normal of it, and inf / -inf give exactly 1 / 0."""
    edges = [-1e4, -103.0, -90.0, -88.0, -30.0, -17.0, 0.0, 17.0, 30.0, 1e4]
    xs = np.concatenate([[-np.inf], np.linspace(-12, 12, 37), edges, [np.inf]])
    x = np.broadcast_to(xs, (G, 1, xs.size)).astype(np_dtype(dtype))
    kit = Kit()
    kit.inp("x", x.shape, dtype)
    kit.out("o", x.shape, dtype)

    def body(b: Any) -> None:
        t = kit.op(ir.Sigmoid, x=kit.load("x", *_block(x.shape[1:])))
        kit.store("o", t, *_block(x.shape[1:]))

    kit.grid([G], body)
    out = kit.run(x=x).outputs["o"].astype(np.float64)
    want = np.exp(-np.logaddexp(0.0, -x.astype(np.float64)))
    tiny = float(np.finfo(np.float16 if dtype is F16 else np.float32).tiny)
    np.testing.assert_allclose(out, want, rtol=2 * RTOL[dtype], atol=tiny)
    assert (out[..., 0] == 0).all() and (out[..., -1] == 1).all()


# ----------------------------------------------------------------------------
# Where, Cast
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda d: d.value)
@pytest.mark.parametrize("imm_branch", [False, True], ids=["tiles", "imm"])
def test_where(dtype: DType, imm_branch: bool) -> None:
    kit = Kit()
    kit.inp("x", (G, 4, 8), dtype)
    kit.inp("y", (G, 1, 8), dtype)
    kit.out("o", (G, 4, 8), dtype)
    x = random((G, 4, 8), dtype, seed=1, low=-9, high=9)
    y = random((G, 1, 8), dtype, seed=2, low=-9, high=9)
    fill = -2 if dtype is I32 else -np.inf

    def body(b: Any) -> None:
        a = kit.load("x", *_block((4, 8)))
        c = kit.load("y", *_block((1, 8)))
        keep = kit.op(ir.Gt, lhs=a, rhs=c)
        other = imm(fill, dtype) if imm_branch else c
        kit.store("o", kit.op(ir.Where, cond=keep, a=a, b=other), *_block((4, 8)))

    kit.grid([G], body)
    out = kit.run(x=x, y=y).outputs["o"]
    other = np.asarray(fill).astype(x.dtype) if imm_branch else y
    np.testing.assert_array_equal(out, np.where(x > y, x, other).astype(x.dtype))


CASTS = [
    (F32, F16),
    (F32, BF16),
    (F16, F32),
    (BF16, F32),
    (BF16, F16),
    (F16, BF16),
    (I32, F32),
    (I32, F16),
    (F32, I32),
    (F16, I32),
]


@pytest.mark.parametrize("src, dst", CASTS, ids=lambda d: d.value)
def test_cast(src: DType, dst: DType) -> None:
    kit = Kit()
    kit.inp("x", (G, 64), src)
    kit.out("o", (G, 64), dst)
    x = random((G, 64), src, low=-70000, high=70000)
    if src.is_float:
        x = (x.astype(np.float32) * 100).astype(x.dtype)

    def body(b: Any) -> None:
        kit.store(
            "o",
            kit.op(ir.Cast, x=kit.load("x", *_block((64,))), dtype=dst),
            *_block((64,)),
        )

    kit.grid([G], body)
    out = kit.run(x=x).outputs["o"]
    assert out.dtype == np_dtype(dst)
    wide = x.astype(np.float64)
    with np.errstate(over="ignore"):
        want = np.trunc(wide) if dst.is_int else wide.astype(np_dtype(dst))
    np.testing.assert_array_equal(out.astype(np.float64), want.astype(np.float64))


# ----------------------------------------------------------------------------
# Reductions, shape ops, constants
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("cols", [1, 7, 64])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.value)
@pytest.mark.parametrize(
    "cls, ref", [(ir.RowMax, np.max), (ir.RowSum, np.sum)], ids=["row_max", "row_sum"]
)
def test_row_reduction(
    cls: type[ir.Reduce], ref: Callable[..., Any], dtype: DType, cols: int
) -> None:
    kit = Kit()
    kit.inp("x", (G, 5, cols), dtype)
    kit.out("o", (G, 5), dtype)
    x = random((G, 5, cols), dtype)

    def body(b: Any) -> None:
        kit.store("o", kit.op(cls, x=kit.load("x", *_block((5, cols)))), *_block((5,)))

    kit.grid([G], body)
    out = kit.run(x=x).outputs["o"]
    assert out.dtype == np_dtype(dtype)
    want = ref(x.astype(np.float64), axis=-1)
    # a sum rounded at every step may drift by one rounding per level of the tree
    levels = max(1, int(np.ceil(np.log2(cols)))) if cls is ir.RowSum else 1
    scale = np.abs(x.astype(np.float64)).sum(axis=-1) if cls is ir.RowSum else 0
    np.testing.assert_allclose(
        out.astype(np.float64),
        want,
        atol=1e-6 + levels * RTOL[dtype] * np.max(scale),
        rtol=RTOL[dtype],
    )


def test_expand_dims_both_axes() -> None:
    kit = Kit()
    kit.inp("x", (G, 6), F32)
    kit.out("rows", (G, 6, 1), F32)
    kit.out("cols", (G, 1, 6), F32)
    x = random((G, 6), F32)

    def body(b: Any) -> None:
        t = kit.load("x", *_block((6,)))
        kit.store("rows", kit.op(ir.ExpandDims, x=t, axis=1), *_block((6, 1)))
        kit.store("cols", kit.op(ir.ExpandDims, x=t, axis=0), *_block((1, 6)))

    kit.grid([G], body)
    out = kit.run(x=x).outputs
    np.testing.assert_array_equal(out["rows"], x[:, :, None])
    np.testing.assert_array_equal(out["cols"], x[:, None, :])


@pytest.mark.parametrize(
    "dtype, value",
    [(F16, 0.1), (BF16, -np.inf), (F32, 2.5), (I32, 7)],
    ids=["f16", "bf16", "f32", "i32"],
)
def test_full(dtype: DType, value: Any) -> None:
    kit = Kit()
    kit.out("o", (G, 3, 4), dtype)
    kit.grid(
        [G],
        lambda b: kit.store(
            "o",
            kit.op(ir.Full, shape=(3, 4), value=value, dtype=dtype),
            *_block((3, 4)),
        ),
    )
    out = kit.run().outputs["o"]
    assert out.dtype == np_dtype(dtype)
    np.testing.assert_array_equal(out, np.full((G, 3, 4), value, np_dtype(dtype)))


def test_arange_per_point_start() -> None:
    kit = Kit()
    kit.out("o", (G, 5), I32)
    kit.grid(
        [G],
        lambda b: kit.store(
            "o", kit.op(ir.Arange, start=10 * b - 3, size=5), *_block((5,))
        ),
    )
    out = kit.run().outputs["o"]
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, 10 * np.arange(G)[:, None] - 3 + np.arange(5))


@pytest.mark.parametrize(
    "ta, tb", [(False, False), (False, True), (True, False), (True, True)]
)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.value)
def test_dot(dtype: DType, ta: bool, tb: bool) -> None:
    m, kk, n = 6, 16, 5
    a_shape = (kk, m) if ta else (m, kk)
    b_shape = (n, kk) if tb else (kk, n)
    kit = Kit()
    kit.inp("a", (G, *a_shape), dtype)
    kit.inp("b", (G, *b_shape), dtype)
    kit.out("o", (G, m, n), F32)
    a, b = random((G, *a_shape), dtype, seed=1), random((G, *b_shape), dtype, seed=2)

    def body(g: Any) -> None:
        ta_ = kit.load("a", *_block(a_shape))
        tb_ = kit.load("b", *_block(b_shape))
        kit.store(
            "o",
            kit.op(ir.Dot, a=ta_, b=tb_, transpose_a=ta, transpose_b=tb),
            *_block((m, n)),
        )

    kit.grid([G], body)
    out = kit.run(a=a, b=b).outputs["o"]
    assert out.dtype == np.float32
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = np.matmul(
        a64.swapaxes(-1, -2) if ta else a64, b64.swapaxes(-1, -2) if tb else b64
    )
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


def test_dot_shared_operand_is_folded_and_exact() -> None:
    """A K tile shared by all Q blocks of a head is one matmul per head, same numbers."""
    kit = Kit()
    kit.inp("q", ("H", "Q", 8), F16)
    kit.inp("k", ("H", 4, 8), F16)
    kit.out("o", ("H", "Q", 4), F32)
    q, k = random((3, 20, 8), F16, seed=1), random((3, 4, 8), F16, seed=2)

    def body(h: Any, i: Any) -> None:
        qt = kit.load("q", point(h), span(5 * i, 5), everything(8))
        kt = kit.load("k", point(h), everything(4), everything(8))
        kit.store(
            "o",
            kit.op(ir.Dot, a=qt, b=kt, transpose_b=True),
            point(h),
            span(5 * i, 5),
            everything(4),
        )

    from interp_kit import span

    kit.grid(["H", 4], body, names=("h", "i"))
    out = kit.run({"H": 3, "Q": 20}, q=q, k=k).outputs["o"]
    want = np.matmul(q.astype(np.float32), k.astype(np.float32).swapaxes(-1, -2))
    np.testing.assert_array_equal(out, want)
