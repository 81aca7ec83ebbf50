"""Dtype faithfulness of the interpreter: rounding, saturation, wrapping and NaN rules.

The interpreter is the golden reference, so a narrow-float op must round once, to nearest
even, exactly as the NPU's vector unit does; these kernels check the edges one by one.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from interp_kit import Kit, everything, imm, point, random

from fadsl.ir import nodes as ir
from fadsl.ir.types import DType
from fadsl.numerics import np_dtype

G = 3
F16, BF16, F32, I32, BOOL = DType.F16, DType.BF16, DType.F32, DType.I32, DType.BOOL


def _block(shape: tuple[int, ...]) -> tuple[Any, ...]:
    return (point("b"),) + tuple(everything(n) for n in shape)


@pytest.mark.parametrize("dtype", [F16, BF16], ids=lambda d: d.value)
def test_narrow_float_math_rounds_once_per_op(dtype: DType) -> None:
    """x * y + y on f16/bf16 tiles: each op in float32, rounded to the dtype (RNE)."""
    kit = Kit()
    kit.inp("x", (G, 256), dtype)
    kit.inp("y", (G, 256), dtype)
    kit.out("o", (G, 256), dtype)
    x, y = random((G, 256), dtype, seed=4), random((G, 256), dtype, seed=5)

    def body(b: Any) -> None:
        tx, ty = kit.load("x", *_block((256,))), kit.load("y", *_block((256,)))
        prod = kit.op(ir.Mul, lhs=tx, rhs=ty)
        kit.store("o", kit.op(ir.Add, lhs=prod, rhs=ty), *_block((256,)))

    kit.grid([G], body)
    out = kit.run(x=x, y=y).outputs["o"]
    nd = np_dtype(dtype)
    step = (x.astype(np.float32) * y.astype(np.float32)).astype(nd)
    want = (step.astype(np.float32) + y.astype(np.float32)).astype(nd)
    assert out.dtype == nd
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))
    fused = (x.astype(np.float32) * y.astype(np.float32) + y.astype(np.float32)).astype(
        nd
    )
    assert not np.array_equal(out, fused), "an intermediate rounding must be visible"


def test_cast_to_f16_rounds_to_nearest_even() -> None:
    halfway = [
        1 + 2.0**-11,
        1 + 3 * 2.0**-11,
        65519.0,
        65520.0,
        2.0**-25,
        3 * 2.0**-25,
        -(1 + 2.0**-11),
        1e-8,
        np.inf,
        np.nan,
    ]
    kit = Kit()
    kit.inp("x", (1, len(halfway)), F32)
    kit.out("o", (1, len(halfway)), F16)
    x = np.asarray([halfway], np.float32)
    kit.grid(
        [1],
        lambda b: kit.store(
            "o",
            kit.op(ir.Cast, x=kit.load("x", *_block((len(halfway),))), dtype=F16),
            *_block((len(halfway),)),
        ),
    )
    out = kit.run(x=x).outputs["o"][0]
    want = [
        1.0,
        1 + 4 * 2.0**-11,
        65504.0,
        np.inf,
        0.0,
        2.0**-23,
        -1.0,
        0.0,
        np.inf,
        np.nan,
    ]
    np.testing.assert_array_equal(out.astype(np.float64), want)


def test_bf16_cast_rounds_to_nearest_even() -> None:
    values = np.asarray(
        [[1 + 2.0**-8, 1 + 3 * 2.0**-8, -(1 + 2.0**-8), 3e38]], np.float32
    )
    kit = Kit()
    kit.inp("x", (1, 4), F32)
    kit.out("o", (1, 4), BF16)
    kit.grid(
        [1],
        lambda b: kit.store(
            "o",
            kit.op(ir.Cast, x=kit.load("x", *_block((4,))), dtype=BF16),
            *_block((4,)),
        ),
    )
    out = kit.run(x=values).outputs["o"]
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(
        out.astype(np.float64)[0, :3], [1.0, 1 + 4 * 2.0**-8, -1.0]
    )


def test_float_to_int_cast_truncates_and_saturates() -> None:
    kit = Kit()
    kit.inp("x", (1, 6), F32)
    kit.out("o", (1, 6), I32)
    x = np.asarray([[2.9, -2.9, 3e9, -3e9, np.nan, -0.5]], np.float32)
    kit.grid(
        [1],
        lambda b: kit.store(
            "o",
            kit.op(ir.Cast, x=kit.load("x", *_block((6,))), dtype=I32),
            *_block((6,)),
        ),
    )
    out = kit.run(x=x).outputs["o"]
    np.testing.assert_array_equal(out[0], [2, -2, 2**31 - 1, -(2**31), 0, 0])


def test_f32_math_stays_float32() -> None:
    """1 + 2^-30 - 1 is 0 in float32 (it would be 2^-30 in float64)."""
    kit = Kit()
    kit.out("o", (1, 2), F32)

    def body(b: Any) -> None:
        one = kit.op(ir.Full, shape=(2,), value=1.0, dtype=F32)
        bumped = kit.op(ir.Add, lhs=one, rhs=imm(2.0**-30))
        kit.store("o", kit.op(ir.Sub, lhs=bumped, rhs=imm(1.0)), *_block((2,)))

    kit.grid([1], body)
    np.testing.assert_array_equal(kit.run().outputs["o"], np.zeros((1, 2), np.float32))


def test_integer_math_wraps_to_int32() -> None:
    kit = Kit()
    kit.inp("x", (1, 2), I32)
    kit.out("o", (1, 2), I32)
    x = np.asarray([[2**31 - 1, -(2**31)]], np.int32)

    def body(b: Any) -> None:
        t = kit.load("x", *_block((2,)))
        kit.store("o", kit.op(ir.Add, lhs=t, rhs=imm(1, I32)), *_block((2,)))

    kit.grid([1], body)
    np.testing.assert_array_equal(kit.run(x=x).outputs["o"], [[-(2**31), -(2**31) + 1]])


def test_imm_is_rounded_to_the_tile_dtype_first() -> None:
    """f16 tile + 0.1: the immediate becomes f16(0.1) before the f32 addition."""
    kit = Kit()
    kit.inp("x", (1, 1), F16)
    kit.out("o", (1, 1), F32)
    x = np.asarray([[2048.0]], np.float16)

    def body(b: Any) -> None:
        t = kit.load("x", *_block((1,)))
        wide = kit.op(ir.Cast, x=t, dtype=F32)
        s = kit.op(ir.Add, lhs=wide, rhs=imm(0.1))
        kit.store("o", s, *_block((1,)))

    kit.grid([1], body)
    assert kit.run(x=x).outputs["o"][0, 0] == np.float32(2048.0) + np.float32(0.1)

    kit2 = Kit()
    kit2.out("o", (1, 1), F32)

    def body2(b: Any) -> None:
        one = kit2.op(ir.Full, shape=(1,), value=0.0, dtype=F16)
        s = kit2.op(ir.Add, lhs=one, rhs=imm(0.1))
        kit2.store("o", kit2.op(ir.Cast, x=s, dtype=F32), *_block((1,)))

    kit2.grid([1], body2)
    assert kit2.run().outputs["o"][0, 0] == np.float32(np.float16(0.1))


def test_comparisons_with_nan_are_false_except_ne() -> None:
    kit = Kit()
    kit.inp("x", (1, 2), F32)
    for name in ("lt", "eq", "ne", "ge"):
        kit.out(name, (1, 2), BOOL)
    x = np.asarray([[np.nan, 1.0]], np.float32)

    def body(b: Any) -> None:
        t = kit.load("x", *_block((2,)))
        for name, cls in (("lt", ir.Lt), ("eq", ir.Eq), ("ne", ir.Ne), ("ge", ir.Ge)):
            kit.store(name, kit.op(cls, lhs=t, rhs=t), *_block((2,)))

    kit.grid([1], body)
    out = kit.run(x=x).outputs
    assert out["lt"].tolist() == [[False, False]]
    assert out["eq"].tolist() == [[False, True]]
    assert out["ne"].tolist() == [[True, False]]
    assert out["ge"].tolist() == [[False, True]]


def test_integer_division_by_zero_is_an_execution_error() -> None:
    from fadsl.errors import ExecutionError

    kit = Kit()
    kit.inp("x", (1, 2), I32)
    kit.out("o", (1, 2), I32)
    kit.grid(
        [1],
        lambda b: kit.store(
            "o",
            kit.op(ir.FloorDivide, lhs=kit.load("x", *_block((2,))), rhs=imm(0, I32)),
            *_block((2,)),
        ),
    )
    with pytest.raises(ExecutionError, match="integer division by zero"):
        kit.run(x=np.ones((1, 2), np.int32))
