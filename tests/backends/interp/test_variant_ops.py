"""Interpreter semantics of what attention variants need: bounded blocks of packed
sequences, f32 scalar loads, and counter-based random numbers (numpy vs the rule)."""

from __future__ import annotations

import numpy as np
import pytest

import fadsl as fd
from fadsl.backends.interp import interpret
from fadsl.errors import ExecutionError
from fadsl.rng import philox_uniform


@fd.kernel(dtype="fp32")
def packed_copy(
    x: fd.In("T", "D"),
    cu: fd.In("B + 1", dtype=fd.i32),
    slopes: fd.In("B", dtype=fd.f32),
    y: fd.Out("T", "D"),
    block: int = 8,
):
    for b, i in fd.grid(B, fd.cdiv(T, block)):
        start = fd.load_scalar(cu[b])
        stop = fd.load_scalar(cu[b + 1])
        rows = fd.ds(start + i * block, block, stop)
        fd.store(y[rows, :], fd.load(x[rows, :], pad=0) * fd.load_scalar(slopes[b]))


def _packed(
    lengths: list[int], d: int = 32
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    rng = np.random.default_rng(0)
    cu = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    x = rng.standard_normal((int(cu[-1]), d)).astype(np.float32)
    slopes = rng.standard_normal(len(lengths)).astype(np.float32)
    return {"x": x, "cu": cu, "slopes": slopes}, cu


@pytest.mark.parametrize("lengths", [[5, 0, 17, 8], [1], [30, 3]])
def test_bounded_blocks_touch_only_their_sequence(lengths: list[int]) -> None:
    inputs, cu = _packed(lengths)
    t = int(cu[-1])
    env = {"T": t, "D": 32, "B": len(lengths), "block": 8}
    out = interpret(packed_copy.build(), env, inputs).outputs["y"]
    want = np.concatenate(
        [
            inputs["x"][cu[b] : cu[b + 1]] * inputs["slopes"][b]
            for b in range(len(lengths))
        ]
    )
    # every row written once, by its own sequence: blocks past a sequence's end (even
    # past the tensor's end) are empty instead of faulting or overwriting the next one
    np.testing.assert_array_equal(out, want)


def test_a_bounded_block_still_faults_when_it_starts_before_zero() -> None:
    inputs, cu = _packed([4, 4])
    inputs["cu"] = np.array([-8, 4, 8], np.int32)
    with pytest.raises(ExecutionError, match="out-of-bounds read of `x`"):
        interpret(packed_copy.build(), {"T": 8, "D": 32, "B": 2, "block": 8}, inputs)


@fd.kernel(dtype="fp32")
def uniforms(
    seed: fd.In(2, dtype=fd.i32),
    u: fd.Out("H", "R", "C"),
    block_r: int = 16,
    block_c: int = 16,
):
    for h, i, j in fd.grid(H, fd.cdiv(R, block_r), fd.cdiv(C, block_c)):
        s0 = fd.load_scalar(seed[0])
        s1 = fd.load_scalar(seed[1])
        tile = fd.random_uniform(
            (block_r, block_c),
            seed=(s0, s1),
            offset=7,
            stream=h,
            row_start=i * block_r,
            col_start=j * block_c,
        )
        fd.store(u[h, fd.ds(i * block_r, block_r), fd.ds(j * block_c, block_c)], tile)


@pytest.mark.parametrize("blocks", [(16, 16), (8, 64), (32, 8)])
def test_random_uniform_depends_on_position_only(blocks: tuple[int, int]) -> None:
    seed = np.array([-123456789, 42], np.int32)
    env = {"H": 3, "R": 40, "C": 70, "block_r": blocks[0], "block_c": blocks[1]}
    out = interpret(uniforms.build(), env, {"seed": seed}).outputs["u"]
    h, r, c = np.meshgrid(np.arange(3), np.arange(40), np.arange(70), indexing="ij")
    want = philox_uniform(int(seed[0]), int(seed[1]), 7, h, r, c)
    np.testing.assert_array_equal(out, want)
    assert out.min() >= 0.0 and out.max() < 1.0
