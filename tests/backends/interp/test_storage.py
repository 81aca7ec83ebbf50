"""Storage shortcuts stay invisible: fast f16 rounding is bit-exact, in-place reuse of
dying tiles never changes a value that is still visible, a where that runs only on the
points whose mask mixes gives np.where's result."""

from __future__ import annotations

from typing import Any

import numpy as np
from interp_kit import Kit, everything, imm, point, random

from fadsl.backends.interp.elementwise import _mixed_points_where
from fadsl.backends.interp import storage
from fadsl.backends.interp.storage import round_f16
from fadsl.ir import nodes as ir
from fadsl.ir.types import DType

F32 = DType.F32


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(((a == b) | (np.isnan(a) & np.isnan(b))).all())


def test_round_f16_matches_astype_on_random_bit_patterns() -> None:
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, size=1_000_000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32).reshape(1000, 1000)
    with np.errstate(all="ignore"):
        want = x.astype(np.float16).astype(np.float32)
    assert _same(round_f16(x), want)


def test_round_f16_matches_astype_at_every_tie_and_neighbour() -> None:
    halves = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = halves[np.isfinite(halves)].astype(np.float32).view(np.uint32)
    offsets = (0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF)
    near = np.concatenate(
        [finite + np.uint32(d) for d in offsets] + [finite - np.uint32(1)]
    )
    x = near.view(np.float32)
    with np.errstate(all="ignore"):
        want = x.astype(np.float16).astype(np.float32)
    assert _same(round_f16(x), want)
    copy = x.copy()
    assert _same(round_f16(copy, out=copy), want), "in place gives the same bits"


def test_round_f16_piecewise_handles_each_piece_alone() -> None:
    """A large array is rounded in pieces: overflow in the last piece only, subnormals
    in the first only, must round as astype does (each piece clamps on its own)."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal(3 * storage._BLOCK + 5).astype(np.float32)
    x[:1000] *= np.float32(1e-6)  # subnormal in float16
    x[-3:] = np.array([70000.0, -65520.0, 65519.0], np.float32)  # inf, -inf, 65504
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).astype(np.float32)
    assert _same(round_f16(x), want)
    assert round_f16(x)[-3:].tolist() == [np.inf, -np.inf, 65504.0]


def test_where_on_mixed_points_only_equals_np_where() -> None:
    """A causal-like mask [1, 1, 6, 4, 8]: points 0-3 keep everything, 4-5 mix."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 6, 4, 8)).astype(np.float32)
    cond = np.ones((1, 1, 6, 4, 8), bool)
    cond[0, 0, 4:] = rng.random((2, 4, 8)) < 0.5
    b = np.float32(-np.inf)
    want = np.where(cond, a, b)
    kept = a.copy()
    got = _mixed_points_where(cond, a, b, copy=True, k=3)
    assert got is not None and np.array_equal(got, want)
    assert np.array_equal(a, kept), "copy=True leaves the operand alone"
    assert _mixed_points_where(cond, a.copy(), b, copy=False, k=3) is not None
    assert _mixed_points_where(np.zeros_like(cond), a, b, copy=True, k=3) is None


def test_a_dying_tile_seen_through_a_view_is_not_overwritten() -> None:
    """t dies at u = t * 2, but a view of t (expand_dims) is still used afterwards."""
    kit = Kit()
    kit.inp("x", (2, 8), F32)
    kit.out("o", (2, 8, 1), F32)
    kit.out("u", (2, 8), F32)

    def body(b: Any) -> None:
        t = kit.op(ir.Exp, x=kit.load("x", point(b), everything(8)))
        col = kit.op(ir.ExpandDims, x=t, axis=1)
        kit.store("u", kit.op(ir.Mul, lhs=t, rhs=imm(2.0)), point(b), everything(8))
        kit.store("o", col, point(b), everything(8), everything(1))

    kit.grid([2], body, names=("b",))
    x = random((2, 8), F32)
    out = kit.run(x=x).outputs
    np.testing.assert_allclose(out["o"][..., 0], np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(out["u"], 2 * np.exp(x), rtol=1e-6)


def test_a_tile_used_twice_by_its_last_op() -> None:
    kit = Kit()
    kit.inp("x", (2, 8), F32)
    kit.out("o", (2, 8), F32)

    def body(b: Any) -> None:
        t = kit.op(ir.Exp, x=kit.load("x", point(b), everything(8)))
        sq = kit.op(ir.Mul, lhs=t, rhs=t)
        kit.store("o", kit.op(ir.Sub, lhs=sq, rhs=t), point(b), everything(8))

    kit.grid([2], body, names=("b",))
    x = random((2, 8), F32)
    e = np.exp(x)
    np.testing.assert_allclose(kit.run(x=x).outputs["o"], e * e - e, rtol=1e-5)


def test_carried_values_reused_in_place_keep_every_iteration_right() -> None:
    """acc = acc * 0.5 + x[j]: the iteration may overwrite acc once it is dead."""
    kit = Kit()
    kit.inp("x", (6, 2, 8), F32)
    kit.out("o", (2, 8), F32)

    def body(b: Any) -> None:
        init = kit.op(ir.Full, shape=(8,), value=1.0, dtype=F32)

        def step(j: Any, acc: ir.Value) -> list[ir.Value]:
            half = kit.op(ir.Mul, lhs=acc, rhs=imm(0.5))
            return [
                kit.op(
                    ir.Add,
                    lhs=half,
                    rhs=kit.load("x", point(j), point(b), everything(8)),
                )
            ]

        (acc,) = kit.loop("j", 0, 6, [init], step)
        kit.store("o", acc, point(b), everything(8))

    kit.grid([2], body, names=("b",))
    x = random((6, 2, 8), F32)
    want = np.ones((2, 8), np.float32)
    for j in range(6):
        want = want * np.float32(0.5) + x[j]
    np.testing.assert_array_equal(kit.run(x=x).outputs["o"], want)


def test_to_f32_lookup_gives_the_bits_of_astype() -> None:
    """Small float16 arrays are widened by table lookup: every bit pattern (NaN
    payloads, signed zeros, subnormals, infinities) must widen as ``astype`` does,
    in a strided view too, and large arrays take ``astype`` itself."""
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    for x in (every, every.reshape(4, 128, 128)[:, ::3, 1::2]):
        assert x.size <= storage._SMALL_F16
        got = storage.to_f32(x)
        assert got.shape == x.shape and got.dtype == np.float32
        assert np.array_equal(got.view(np.uint32), x.astype(np.float32).view(np.uint32))
    large = np.tile(every, storage._SMALL_F16 // every.size + 1)
    assert np.array_equal(
        storage.to_f32(large).view(np.uint32), large.astype(np.float32).view(np.uint32)
    )
