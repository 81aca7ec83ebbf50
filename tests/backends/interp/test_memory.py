"""Global memory: tails, pads, out-of-bounds faults, stores, scalar loads, validation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from interp_kit import Kit, everything, imm, point, random, span

from fadsl.backends.interp import interpret
from fadsl.errors import ExecutionError, Loc
from fadsl.ir import nodes as ir
from fadsl.ir.types import DType

F16, F32, I32 = DType.F16, DType.F32, DType.I32
LOAD_LOC = Loc("kernel_under_test.py", 7, 4, 20, text="    t = fd.load(x[b, rows])")


def _copy_blocks(dtype: DType, pad: Any, per_point: bool) -> Kit:
    """Copy x[b, 0:10] to o[b, 0:12] in blocks of 4: the last block has a 2-row tail.

    ``per_point``: the block start comes from the grid variable ``i`` (varies per point);
    otherwise from a loop variable (the same for every point of an iteration).
    """
    kit = Kit()
    kit.inp("x", ("B", "S"), dtype)
    kit.out("o", ("B", 12), dtype)

    def copy(b: Any, start: Any) -> None:
        t = kit.load("x", point(b), span(start, 4), pad=pad)
        kit.store("o", t, point(b), span(start, 4))

    if per_point:
        kit.grid(["B", 3], lambda b, i: copy(b, 4 * i), names=("b", "i"))
    else:
        kit.grid(
            ["B"], lambda b: kit.loop("j", 0, 3, [], lambda j: copy(b, 4 * j) or [])
        )
    return kit


@pytest.mark.parametrize("per_point", [True, False], ids=["grid_start", "loop_start"])
@pytest.mark.parametrize(
    "pad, fill",
    [(None, np.nan), (0, 0.0), (-np.inf, -np.inf)],
    ids=["nan", "zero", "-inf"],
)
def test_tail_reads_pad_or_nan(per_point: bool, pad: Any, fill: float) -> None:
    x = random((2, 10), F16)
    out = _copy_blocks(F16, pad, per_point).run({"B": 2, "S": 10}, x=x).outputs["o"]
    np.testing.assert_array_equal(out[:, :10], x)
    np.testing.assert_array_equal(out[:, 10:], np.full((2, 2), fill, np.float16))


def test_integer_tail_is_poison_without_pad() -> None:
    x = random((2, 10), I32, low=0, high=100)
    out = _copy_blocks(I32, None, True).run({"B": 2, "S": 10}, x=x).outputs["o"]
    np.testing.assert_array_equal(out[:, :10], x)
    assert (out[:, 10:] == np.iinfo(np.int32).min).all()


def test_two_dimensional_tail_with_transposed_dims() -> None:
    """A [rows, cols] block whose column start varies and whose rows have a tail."""
    kit = Kit()
    kit.inp("x", (5, 7), F32)
    kit.out("o", (2, 6, 4), F32)

    def body(c: Any) -> None:
        t = kit.load("x", span(0, 6), span(4 * c, 4), pad=-1)
        kit.store("o", t, point(c), everything(6), everything(4))

    kit.grid([2], body, names=("c",))
    x = random((5, 7), F32)
    out = kit.run(x=x).outputs["o"]
    want = np.full((2, 6, 4), -1, np.float32)
    want[0, :5, :] = x[:, 0:4]
    want[1, :5, :3] = x[:, 4:7]
    np.testing.assert_array_equal(out, want)


def test_store_skips_the_tail() -> None:
    """Stores to o[b, 4*i : 4*i+4] with extent 10 write rows 0..9 and nothing else."""
    kit = Kit()
    kit.out("o", (2, 10), F32)
    kit.scratch("guard", (1,), F32)
    kit.grid(
        [2, 3],
        lambda b, i: kit.store(
            "o",
            kit.op(ir.Full, shape=(4,), value=1.0, dtype=F32),
            point(b),
            span(4 * i, 4),
        ),
        names=("b", "i"),
    )
    out = kit.run().outputs
    np.testing.assert_array_equal(out["o"], np.ones((2, 10), np.float32))
    assert np.isnan(out["guard"]).all(), "scratch starts NaN"


def test_unwritten_outputs_are_nan_or_poison() -> None:
    kit = Kit()
    kit.out("f", (3,), F16)
    kit.out("n", (3,), I32)
    kit.grid(
        [1],
        lambda b: kit.store(
            "f", kit.op(ir.Full, shape=(1,), value=2.0, dtype=F16), span(1, 1)
        ),
    )
    out = kit.run().outputs
    assert np.isnan(out["f"][[0, 2]]).all() and out["f"][1] == 2.0
    assert (out["n"] == np.iinfo(np.int32).min).all()


def test_uniform_block_is_the_same_for_every_point() -> None:
    kit = Kit()
    kit.inp("w", (4,), F32)
    kit.out("o", (3, 4), F32)
    kit.grid(
        [3],
        lambda b: kit.store("o", kit.load("w", everything(4)), point(b), everything(4)),
        names=("b",),
    )
    w = random((4,), F32)
    out = kit.run(w=w).outputs["o"]
    np.testing.assert_array_equal(out, np.broadcast_to(w, (3, 4)))


# ----------------------------------------------------------------------------
# Out-of-bounds faults
# ----------------------------------------------------------------------------


def _oob_kernel(index_of: Any, store: bool = False) -> Kit:
    kit = Kit()
    kit.inp("x", ("B", "H", "S"), F32)
    kit.out("o", ("B", "H", "S"), F32)

    def body(b: Any, h: Any, i: Any) -> None:
        idx = index_of(b, h, i)
        if store:
            tile = kit.op(ir.Full, shape=(4,), value=0.0, dtype=F32)
            kit.store("o", tile, *idx, loc=LOAD_LOC)
        else:
            kit.store(
                "o", kit.load("x", *idx, loc=LOAD_LOC), point(b), point(h), span(0, 4)
            )

    kit.grid(["B", "H", 3], body)
    return kit


ENV = {"B": 2, "H": 4, "S": 10}


def _inputs() -> dict[str, np.ndarray]:
    return {"x": random((2, 4, 10), F32)}


def test_out_of_bounds_point_index_names_everything() -> None:
    kit = _oob_kernel(lambda b, h, i: (point(b), point(h + 1), span(0, 4)))
    with pytest.raises(ExecutionError) as info:
        kit.run(ENV, **_inputs())
    err = info.value
    assert err.loc == LOAD_LOC
    assert err.message == (
        "out-of-bounds read of `x`: index 4 in dimension 1 (H) is outside [0, 4) "
        "at b=0, h=3, i=0"
    )
    assert "fd.load(x[b, rows])" in err.render()


def test_out_of_bounds_block_start_names_everything() -> None:
    kit = _oob_kernel(lambda b, h, i: (point(b), point(h), span(4 * i + 4, 4)))
    with pytest.raises(ExecutionError) as info:
        kit.run(ENV, **_inputs())
    assert info.value.message == (
        "out-of-bounds read of `x`: block start 12 in dimension 2 (S) is outside "
        "[0, 10) at b=0, h=0, i=2"
    )
    assert "cdiv" in (info.value.hint or "")


def test_negative_block_start_is_out_of_bounds() -> None:
    kit = _oob_kernel(lambda b, h, i: (point(b), point(h), span(4 * i - 2, 4)))
    with pytest.raises(ExecutionError, match=r"block start -2 in dimension 2 \(S\)"):
        kit.run(ENV, **_inputs())


def test_out_of_bounds_write_is_a_fault() -> None:
    kit = _oob_kernel(lambda b, h, i: (point(b + 2), point(h), span(0, 4)), store=True)
    with pytest.raises(ExecutionError) as info:
        kit.run(ENV, **_inputs())
    assert info.value.message.startswith(
        "out-of-bounds write of `o`: index 2 in dimension 0"
    )
    assert info.value.message.endswith("at b=0, h=0, i=0")


def test_out_of_bounds_inside_a_loop_names_the_loop_variable() -> None:
    kit = Kit()
    kit.inp("x", ("S",), F32)
    kit.out("o", (2, 4), F32)

    def body(b: Any) -> None:
        def step(j: Any, acc: ir.Value) -> list[ir.Value]:
            t = kit.load("x", span(4 * j + 4 * b, 4), loc=LOAD_LOC)
            return [kit.op(ir.Add, lhs=acc, rhs=t)]

        zero = kit.op(ir.Full, shape=(4,), value=0.0, dtype=F32)
        (acc,) = kit.loop("j", 0, 2, [zero], step)
        kit.store("o", acc, point(b), span(0, 4))

    kit.grid([2], body, names=("b",))
    with pytest.raises(ExecutionError) as info:
        kit.run({"S": 6}, x=random((6,), F32))
    assert info.value.message == (
        "out-of-bounds read of `x`: block start 8 in dimension 0 (S) is outside [0, 6) "
        "at b=1, j=1"
    )


# ----------------------------------------------------------------------------
# Scalars loaded from tensors, outputs read back
# ----------------------------------------------------------------------------


def test_load_scalar_drives_per_point_bounds_and_indices() -> None:
    """Variable-length rows: row b sums x[start[b] : start[b+1]] one element at a time."""
    kit = Kit()
    kit.inp("cu", (4,), I32)
    kit.inp("x", (9,), F32)
    kit.out("o", (3, 1), F32)

    def body(b: Any) -> None:
        kit.op(ir.LoadScalar, name="lo", src="cu", index=(b,))
        kit.op(ir.LoadScalar, name="hi", src="cu", index=(b + 1,))
        zero = kit.op(ir.Full, shape=(1,), value=0.0, dtype=F32)

        def step(j: Any, acc: ir.Value) -> list[ir.Value]:
            return [kit.op(ir.Add, lhs=acc, rhs=kit.load("x", span(j, 1)))]

        (acc,) = kit.loop("j", "lo", "hi", [zero], step)
        kit.store("o", acc, point(b), span(0, 1))

    kit.grid([3], body, names=("b",))
    cu = np.asarray([0, 4, 4, 9], np.int32)
    x = np.arange(9, dtype=np.float32)
    res = kit.run(cu=cu, x=x)
    np.testing.assert_array_equal(
        res.outputs["o"][:, 0], [0 + 1 + 2 + 3, 0, 4 + 5 + 6 + 7 + 8]
    )
    assert res.loop_stats["j"] == (9, 3 * 9)


def test_outputs_can_be_read_back_as_running_state() -> None:
    """FA1 style: the running sum lives in GM, loaded and stored every iteration."""
    kit = Kit()
    kit.inp("x", (2, 5, 3), F32)
    kit.out("o", (2, 3), F32)

    def body(b: Any) -> None:
        kit.store(
            "o", kit.op(ir.Full, shape=(3,), value=0.0, dtype=F32), point(b), span(0, 3)
        )

        def step(j: Any) -> list[ir.Value]:
            acc = kit.load("o", point(b), span(0, 3))
            t = kit.load("x", point(b), point(j), span(0, 3))
            kit.store("o", kit.op(ir.Add, lhs=acc, rhs=t), point(b), span(0, 3))
            return []

        kit.loop("j", 0, 5, [], step)

    kit.grid([2], body, names=("b",))
    x = random((2, 5, 3), F32)
    np.testing.assert_allclose(kit.run(x=x).outputs["o"], x.sum(axis=1), rtol=1e-6)


# ----------------------------------------------------------------------------
# Validation of what the caller passes
# ----------------------------------------------------------------------------


def _identity() -> Kit:
    kit = Kit()
    kit.inp("x", ("S", 4), F16)
    kit.out("o", ("S", 4), F16)
    kit.grid(
        ["S"],
        lambda b: kit.store(
            "o", kit.load("x", point(b), span(0, 4)), point(b), span(0, 4)
        ),
        names=("b",),
    )
    return kit


@pytest.mark.parametrize(
    "inputs, env, message",
    [
        (
            {"x": np.zeros((3, 4), np.float32)},
            {"S": 3},
            "input `x` must be float16[3, 4] (f16[S, 4]), got float32[3, 4]",
        ),
        (
            {"x": np.zeros((2, 4), np.float16)},
            {"S": 3},
            "input `x` must be float16[3, 4] (f16[S, 4]), got float16[2, 4]",
        ),
        ({}, {"S": 3}, "input `x` (f16[S, 4]) is missing"),
        (
            {"x": np.zeros((3, 4), np.float16), "o": np.zeros((3, 4), np.float16)},
            {"S": 3},
            "`o` is not an input of kernel `k`",
        ),
        (
            {"x": np.zeros((3, 4), np.float16)},
            {},
            "shape symbol `S` of kernel `k` has no value",
        ),
    ],
    ids=["dtype", "shape", "missing", "output_given", "no_symbol"],
)
def test_bad_inputs_are_named(
    inputs: dict[str, Any], env: dict[str, Any], message: str
) -> None:
    with pytest.raises(ExecutionError) as info:
        _identity().run(env, **inputs)
    assert info.value.message == message


def test_inputs_are_not_modified() -> None:
    x = random((3, 4), F16)
    before = x.copy()
    out = _identity().run({"S": 3}, x=x).outputs["o"]
    np.testing.assert_array_equal(out, before)
    np.testing.assert_array_equal(x, before)
    assert x.flags.writeable


def test_scalar_parameter_default_and_override() -> None:
    kit = Kit()
    scale = kit.scalar("scale", default="S ** -0.5")
    kit.out("o", (1, 1), F32)
    kit.grid(
        [1],
        lambda b: kit.store(
            "o",
            kit.op(
                ir.Mul,
                lhs=kit.op(ir.Full, shape=(1,), value=2.0, dtype=F32),
                rhs=imm(scale),
            ),
            point(b),
            span(0, 1),
        ),
        names=("b",),
    )
    kernel = kit.kernel()
    assert interpret(kernel, {"S": 16}, {}).outputs["o"][0, 0] == np.float32(0.5)
    assert interpret(kernel, {"S": 16, "scale": 3.0}, {}).outputs["o"][0, 0] == 6.0


def test_errors_point_at_the_op_not_the_interpreter() -> None:
    kit = _oob_kernel(lambda b, h, i: (point(b), point(h + 9), span(0, 4)))
    with pytest.raises(ExecutionError) as info:
        kit.run(ENV, **_inputs())
    assert info.value.__traceback__ is not None
    frames = []
    tb = info.value.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    assert not any("backends/interp/memory.py" in f for f in frames)
