"""Integer // and % on position tiles after lower_vector: exact f32 sequences that give
numpy's integer results (sign of the divisor), in the interpreter that runs them."""

from __future__ import annotations

import numpy as np
import pytest

import fadsl as fd
from fadsl.backends.interp import interpret
from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.passes import run_pipeline
from fadsl.plan.schedule.sides import walk


@fd.kernel(dtype="fp32")
def divide(
    q_out: fd.Out("S", dtype=fd.f32),
    r_out: fd.Out("S", dtype=fd.f32),
    d: int = 7,
    block: int = 64,
    shift: int = 300,
):
    for i in fd.grid(fd.cdiv(S, block)):
        x = fd.arange(i * block, block) - shift  # negative and positive positions
        fd.store(q_out[fd.ds(i * block, block)], fd.cast(x // d, fd.f32))
        fd.store(r_out[fd.ds(i * block, block)], fd.cast(x % d, fd.f32))


@pytest.mark.parametrize("d", [7, 1, 64, 3, 129])
def test_floor_division_and_remainder_match_numpy(d: int) -> None:
    kernel = run_pipeline(divide.build({"d": d}))
    assert not [
        op for op in walk(kernel.body) if isinstance(op, (ir.FloorDivide, ir.Remainder))
    ]
    out = interpret(kernel, {"S": 1000, "d": d, "block": 64, "shift": 300}, {}).outputs
    x = np.arange(1000) - 300
    np.testing.assert_array_equal(out["q_out"], x // d)
    np.testing.assert_array_equal(out["r_out"], x % d)


def test_large_positions_stay_exact() -> None:
    kernel = run_pipeline(divide.build({"d": 3}))
    env = {"S": 2048, "d": 3, "block": 64, "shift": -(2**23)}  # x up to 2**23 + 2047
    out = interpret(kernel, env, {}).outputs
    x = np.arange(2048) + 2**23
    np.testing.assert_array_equal(out["q_out"], x // 3)
    np.testing.assert_array_equal(out["r_out"], x % 3)


@fd.kernel(dtype="fp32")
def by_tile(o: fd.Out("S", dtype=fd.f32), block: int = 64):
    for i in fd.grid(fd.cdiv(S, block)):
        x = fd.arange(i * block + 1, block)
        fd.store(o[fd.ds(i * block, block)], fd.cast(x // x, fd.f32))


def test_tile_divisors_are_refused_clearly() -> None:
    with pytest.raises(BackendError, match="tile divided by a scalar") as err:
        run_pipeline(by_tile.build())
    assert "test_int_division.py" in str(err.value.loc)
