"""Queues (QueueAlloc / AllocTensor / Load into / EnQue / DeQue / FreeTensor) on
hand-built IR: the protocol computes the right values, misuse is an ExecutionError at the
offending op, a use after free reads NaN."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import sympy
from interp_kit import Kit, point, random, span

from fadsl.errors import ExecutionError, Loc
from fadsl.ir import nodes as ir
from fadsl.ir.types import DType, TileType

F32 = DType.F32
TILE = TileType((sympy.Integer(4),), F32)
BAD = Loc("kernel_under_test.py", 9, 4, 12, text="    misuse()")


def _queue(kit: Kit, buffers: int = 2) -> Any:
    return kit.op(ir.QueueAlloc, "q", tile=TILE, buffers=buffers, position="VECIN")


def _issue(kit: Kit, q: ir.Value, b: Any, j: Any) -> None:
    slot = kit.op(ir.AllocTensor, "slot", queue=q)
    t = kit.load("x", point(b), span(4 * j, 4), into=slot)
    kit.op(ir.Enqueue, queue=q, x=t)


def _block_sums(prefetch: bool) -> Kit:
    """o[b] = sum over j < n[b] of x[b, 4j : 4j+4], loads through a 2-slot queue.

    ``prefetch``: issue block 0 before the loop and block j+1 at the top of iteration j,
    as passes/pipeline.py does; otherwise alloc, load, enqueue, dequeue in place.
    """
    kit = Kit()
    kit.inp("n", (4,), DType.I32)
    kit.inp("x", (4, 16), F32)
    kit.out("o", (4, 4), F32)

    def body(b: Any) -> None:
        kit.op(ir.LoadScalar, name="nb", src="n", index=(b,))
        n = sympy.Symbol("nb", integer=True, nonnegative=True)
        q = _queue(kit)
        if prefetch:
            kit.loop("t", 0, sympy.Min(1, n), [], lambda t: _issue(kit, q, b, t) or [])
        init = kit.op(ir.Full, shape=(4,), value=0.0, dtype=F32)

        def step(j: Any, acc: ir.Value) -> list[ir.Value]:
            if prefetch:
                kit.loop(
                    "t2",
                    j + 1,
                    sympy.Min(j + 2, n),
                    [],
                    lambda t: _issue(kit, q, b, t) or [],
                )
            else:
                _issue(kit, q, b, j)
            kt = kit.op(ir.Dequeue, "kt", queue=q)
            new = kit.op(ir.Add, lhs=acc, rhs=kt)
            kit.op(ir.FreeTensor, queue=q, x=kt)
            return [new]

        (acc,) = kit.loop("j", 0, n, [init], step, kind=ir.LoopKind.PIPELINED)
        kit.store("o", acc, point(b), span(0, 4))

    kit.grid([4], body, names=("b",))
    return kit


@pytest.mark.parametrize("prefetch", [False, True], ids=["in_place", "prefetch"])
@pytest.mark.parametrize(
    "stops", [[4, 4, 4, 4], [1, 4, 0, 3]], ids=["uniform", "ragged"]
)
def test_queued_loads_compute_the_right_sums(prefetch: bool, stops: list[int]) -> None:
    x = random((4, 16), F32)
    res = _block_sums(prefetch).run(n=np.asarray(stops, np.int32), x=x)
    want = np.stack(
        [
            x[b, : 4 * s].reshape(s, 4).sum(axis=0) if s else np.zeros(4)
            for b, s in enumerate(stops)
        ]
    )
    np.testing.assert_allclose(res.outputs["o"], want, rtol=1e-6)


def test_a_slot_held_across_a_ragged_loop() -> None:
    """A tensor held through a loop whose trip count differs per point stays valid."""
    kit = Kit()
    kit.inp("n", (4,), DType.I32)
    kit.inp("x", (4, 16), F32)
    kit.out("o", (4, 4), F32)

    def body(b: Any) -> None:
        kit.op(ir.LoadScalar, name="nb", src="n", index=(b,))
        q = _queue(kit)

        def step(j: Any) -> list[ir.Value]:
            _issue(kit, q, b, j)
            kit.op(ir.FreeTensor, queue=q, x=kit.op(ir.Dequeue, "kt", queue=q))
            return []

        held = kit.op(ir.AllocTensor, "held", queue=q)
        kit.loop("j", 0, "nb", [], step)
        kit.op(ir.FreeTensor, queue=q, x=held)
        _issue(kit, q, b, 3)
        last = kit.op(ir.Dequeue, "last", queue=q)
        kit.store("o", last, point(b), span(0, 4))

    kit.grid([4], body, names=("b",))
    x = random((4, 16), F32)
    out = kit.run(n=np.asarray([0, 1, 2, 3], np.int32), x=x).outputs["o"]
    np.testing.assert_array_equal(out, x[:, 12:16])


def test_alternating_slots_diverge_and_still_read_each_points_data() -> None:
    """Allocations without frees in a ragged loop leave points on different slots."""
    kit = Kit()
    kit.inp("n", (3,), DType.I32)
    kit.inp("x", (3, 16), F32)
    kit.out("o", (3, 4), F32)

    def body(b: Any) -> None:
        kit.op(ir.LoadScalar, name="nb", src="n", index=(b,))
        q = _queue(kit, buffers=3)

        def step(j: Any) -> list[ir.Value]:
            kit.op(ir.AllocTensor, "leak", queue=q)
            return []

        kit.loop("j", 0, "nb", [], step)
        _issue(kit, q, b, 2)
        kit.store("o", kit.op(ir.Dequeue, "t", queue=q), point(b), span(0, 4))

    kit.grid([3], body, names=("b",))
    x = random((3, 16), F32)
    out = kit.run(n=np.asarray([0, 2, 1], np.int32), x=x).outputs["o"]
    np.testing.assert_array_equal(out, x[:, 8:12])


# ----------------------------------------------------------------------------
# Misuse
# ----------------------------------------------------------------------------


def _misuse(script: Any, buffers: int = 2) -> ExecutionError:
    kit = Kit()
    kit.inp("x", (2, 16), F32)
    kit.out("o", (2, 4), F32)

    def body(b: Any) -> None:
        q = _queue(kit, buffers)
        script(kit, q, b)

    kit.grid([2], body, names=("b",))
    with pytest.raises(ExecutionError) as info:
        kit.run(x=random((2, 16), F32))
    assert info.value.loc == BAD, "the error points at the misused op"
    return info.value


def test_alloc_with_every_slot_in_use() -> None:
    def script(kit: Kit, q: ir.Value, b: Any) -> None:
        kit.op(ir.AllocTensor, "a", queue=q)
        kit.op(ir.AllocTensor, "c", queue=q, loc=BAD)

    err = _misuse(script, buffers=1)
    assert err.message == (
        "AllocTensor on queue `%q`: all 1 slot(s) are in use (1 held, 0 enqueued) at b=0"
    )
    assert "FreeTensor" in (err.hint or "")


def test_dequeue_of_an_empty_queue() -> None:
    def script(kit: Kit, q: ir.Value, b: Any) -> None:
        kit.op(ir.AllocTensor, "a", queue=q)
        kit.op(ir.Dequeue, "d", queue=q, loc=BAD)

    assert _misuse(script).message == "Dequeue of an empty queue `%q` at b=0"


def test_enqueue_beyond_capacity() -> None:
    def script(kit: Kit, q: ir.Value, b: Any) -> None:
        tile = kit.op(ir.Full, shape=(4,), value=1.0, dtype=F32)
        kit.op(ir.Enqueue, queue=q, x=tile)
        kit.op(ir.Enqueue, queue=q, x=tile)
        kit.op(ir.Enqueue, queue=q, x=tile, loc=BAD)

    assert _misuse(script).message == (
        "Enqueue beyond capacity on queue `%q`: all 2 slot(s) are in use "
        "(0 held, 2 enqueued) at b=0"
    )


def test_enqueue_of_a_tensor_already_enqueued() -> None:
    def script(kit: Kit, q: ir.Value, b: Any) -> None:
        t = kit.op(ir.AllocTensor, "t", queue=q)
        kit.op(ir.Enqueue, queue=q, x=t)
        kit.op(ir.Enqueue, queue=q, x=t, loc=BAD)

    assert _misuse(script).message == (
        "Enqueue: tensor `%t` is not held (its slot of queue `%q` is enqueued) at b=0"
    )


def test_free_of_a_tensor_not_held() -> None:
    def script(kit: Kit, q: ir.Value, b: Any) -> None:
        t = kit.op(ir.AllocTensor, "t", queue=q)
        kit.op(ir.FreeTensor, queue=q, x=t)
        kit.op(ir.FreeTensor, queue=q, x=t, loc=BAD)

    assert _misuse(script).message == (
        "FreeTensor: tensor `%t` is not held (its slot of queue `%q` is free) at b=0"
    )


def test_free_of_a_tensor_still_enqueued() -> None:
    def script(kit: Kit, q: ir.Value, b: Any) -> None:
        t = kit.op(ir.AllocTensor, "t", queue=q)
        kit.op(ir.Enqueue, queue=q, x=t)
        kit.op(ir.FreeTensor, queue=q, x=t, loc=BAD)

    assert "is not held (its slot of queue `%q` is enqueued)" in _misuse(script).message


def test_free_of_a_value_that_is_not_a_queue_tensor() -> None:
    def script(kit: Kit, q: ir.Value, b: Any) -> None:
        tile = kit.op(ir.Full, "plain", shape=(4,), value=1.0, dtype=F32)
        kit.op(ir.FreeTensor, queue=q, x=tile, loc=BAD)

    assert (
        _misuse(script).message == "FreeTensor: `%plain` is not a tensor of queue `%q`"
    )


def test_load_into_a_freed_tensor() -> None:
    def script(kit: Kit, q: ir.Value, b: Any) -> None:
        t = kit.op(ir.AllocTensor, "t", queue=q)
        kit.op(ir.FreeTensor, queue=q, x=t)
        kit.load("x", point(b), span(0, 4), into=t, loc=BAD)

    assert "is not held (its slot of queue `%q` is free)" in _misuse(script).message


def test_use_after_free_reads_nan() -> None:
    kit = Kit()
    kit.inp("x", (2, 16), F32)
    kit.out("before", (2, 4), F32)
    kit.out("after", (2, 4), F32)

    def body(b: Any) -> None:
        q = _queue(kit)
        _issue(kit, q, b, 1)
        t = kit.op(ir.Dequeue, "t", queue=q)
        kit.store("before", t, point(b), span(0, 4))
        kit.op(ir.FreeTensor, queue=q, x=t)
        kit.store("after", t, point(b), span(0, 4))

    kit.grid([2], body, names=("b",))
    x = random((2, 16), F32)
    out = kit.run(x=x).outputs
    np.testing.assert_array_equal(out["before"], x[:, 4:8])
    assert np.isnan(out["after"]).all()


def test_fresh_slots_are_nan() -> None:
    kit = Kit()
    kit.out("o", (1, 4), F32)

    def body(b: Any) -> None:
        q = _queue(kit)
        kit.store("o", kit.op(ir.AllocTensor, "t", queue=q), point(b), span(0, 4))

    kit.grid([1], body, names=("b",))
    assert np.isnan(kit.run().outputs["o"]).all()


def test_queue_traffic_in_loops_ragged_along_two_axes() -> None:
    """for j <= i: (for t <= b: enqueue x[b, i, j, t]); (for t <= b: acc += dequeue).

    The outer loop's points shrink along i, the inner loops' along b: slot contents
    written by an inner iteration must reach the outer frames intact.
    """
    nb, ni = 3, 3
    kit = Kit()
    kit.inp("x", (nb, ni, ni, nb, 4), F32)
    kit.out("o", (nb, ni, 4), F32)

    def body(b: Any, i: Any) -> None:
        q = kit.op(ir.QueueAlloc, "q", tile=TILE, buffers=nb, position="VECIN")
        init = kit.op(ir.Full, shape=(4,), value=0.0, dtype=F32)

        def outer(j: Any, acc: ir.Value) -> list[ir.Value]:
            def produce(t: Any) -> list[ir.Value]:
                slot = kit.op(ir.AllocTensor, "slot", queue=q)
                tile = kit.load(
                    "x", point(b), point(i), point(j), point(t), span(0, 4), into=slot
                )
                kit.op(ir.Enqueue, queue=q, x=tile)
                return []

            def consume(t: Any, acc2: ir.Value) -> list[ir.Value]:
                got = kit.op(ir.Dequeue, "got", queue=q)
                new = kit.op(ir.Add, lhs=acc2, rhs=got)
                kit.op(ir.FreeTensor, queue=q, x=got)
                return [new]

            kit.loop("t", 0, b + 1, [], produce)
            return kit.loop("u", 0, b + 1, [acc], consume)

        (acc,) = kit.loop("j", 0, i + 1, [init], outer)
        kit.store("o", acc, point(b), point(i), span(0, 4))

    kit.grid([nb, ni], body, names=("b", "i"))
    x = random((nb, ni, ni, nb, 4), F32)
    out = kit.run(x=x).outputs["o"]
    want = np.stack(
        [
            np.stack([x[b, i, : i + 1, : b + 1].sum(axis=(0, 1)) for i in range(ni)])
            for b in range(nb)
        ]
    )
    np.testing.assert_allclose(out, want, rtol=1e-6)
