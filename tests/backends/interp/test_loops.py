"""Grid batching and sequential loops with per-point trip counts.

The reference for every kernel here is a plain Python loop over grid points and
iterations, the thing the interpreter must not do but must agree with.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
import threading
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
import sympy
from interp_kit import Kit, point, random, span

from fadsl.backends.interp import impls
from fadsl.ir import nodes as ir
from fadsl.ir.types import DType

F32 = DType.F32


@contextmanager
def counting(*classes: type[ir.Op]) -> Iterator[Counter[str]]:
    """Count executions of ops of ``classes`` and the grid points each one covered."""
    seen: Counter[str] = Counter()
    saved = {cls: impls.IMPLS[cls] for cls in classes}
    lock = threading.Lock()  # the chunks of a split grid run on threads

    def wrap(cls: type[ir.Op]) -> Any:
        inner = saved[cls]

        def counted(op: Any, fr: Any) -> Any:
            with lock:
                seen[cls.__name__] += 1
                seen[cls.__name__ + " points"] += int(np.prod(fr.bshape))
            return inner(op, fr)

        return counted

    for cls in classes:
        impls.IMPLS[cls] = wrap(cls)
    try:
        yield seen
    finally:
        impls.IMPLS.update(saved)


def _block_sum_kernel(
    start: Any, stop: Any, grid: tuple[int, ...] = (4,), names: tuple[str, ...] = ("i",)
) -> Kit:
    """o[point] = init + sum over j in [start, stop) of x[j, :] (per point bounds)."""
    kit = Kit()
    kit.inp("x", (8, 3), F32)
    kit.out("o", (*grid, 3), F32)

    def body(*gv: Any) -> None:
        init = kit.op(ir.Full, shape=(3,), value=100.0, dtype=F32)

        def step(j: Any, acc: ir.Value) -> list[ir.Value]:
            t = kit.load("x", point(j), span(0, 3))
            return [kit.op(ir.Add, lhs=acc, rhs=t)]

        (acc,) = kit.loop("j", start(*gv), stop(*gv), [init], step)
        kit.store("o", acc, *(point(v) for v in gv), span(0, 3))

    kit.grid(list(grid), body, names=names)
    return kit


def _reference(
    x: np.ndarray, grid: tuple[int, ...], start: Any, stop: Any
) -> np.ndarray:
    want = np.zeros((*grid, 3), np.float32)
    for idx in np.ndindex(*grid):
        acc = np.full(3, 100.0, np.float32)
        for j in range(start(*idx), stop(*idx)):
            acc = acc + x[j]
        want[idx] = acc
    return want


def test_causal_triangle_runs_each_point_to_its_own_stop() -> None:
    start, stop = (lambda i: 0), (lambda i: i + 1)
    kit = _block_sum_kernel(start, stop)
    x = random((8, 3), F32)
    with counting(ir.Add) as seen:
        res = kit.run(x=x)
    np.testing.assert_array_equal(res.outputs["o"], _reference(x, (4,), start, stop))
    assert res.loop_stats["j"] == (1 + 2 + 3 + 4, 4 * 4)
    assert seen["Add"] == 4, "one batched add per iteration, not one per point"
    assert seen["Add points"] == 1 + 2 + 3 + 4, "skipped blocks cost nothing"


def test_ascending_stops_on_an_inner_axis_run_as_a_shrinking_suffix() -> None:
    """Causal Q blocks as the second grid axis: no reordering, same sums."""
    start, stop = (lambda b, i: 0), (lambda b, i: 2 * i + 1)
    kit = _block_sum_kernel(start, stop, grid=(2, 4), names=("b", "i"))
    x = random((8, 3), F32)
    res = kit.run(x=x)
    np.testing.assert_array_equal(res.outputs["o"], _reference(x, (2, 4), start, stop))
    assert res.loop_stats["j"] == (2 * (1 + 3 + 5 + 7), 8 * 7)


def test_points_with_zero_trips_keep_their_inits() -> None:
    start, stop = (lambda i: 0), (lambda i: i)
    kit = _block_sum_kernel(start, stop)
    x = random((8, 3), F32)
    res = kit.run(x=x)
    np.testing.assert_array_equal(res.outputs["o"][0], [100.0] * 3)
    np.testing.assert_array_equal(res.outputs["o"], _reference(x, (4,), start, stop))


def test_loop_with_no_trips_anywhere_returns_inits() -> None:
    kit = _block_sum_kernel(lambda i: 5, lambda i: 2)
    res = kit.run(x=random((8, 3), F32))
    np.testing.assert_array_equal(res.outputs["o"], np.full((4, 3), 100.0, np.float32))
    assert res.loop_stats["j"] == (0, 0)


def test_sliding_window_bounds_vary_at_both_ends() -> None:
    kit = _block_sum_kernel(lambda i: sympy.Max(0, 2 * i - 2), lambda i: 2 * i + 1)
    x = random((8, 3), F32)
    res = kit.run(x=x)
    want = _reference(x, (4,), lambda i: max(0, 2 * i - 2), lambda i: 2 * i + 1)
    np.testing.assert_array_equal(res.outputs["o"], want)
    assert res.loop_stats["j"] == (1 + 3 + 3 + 3, 4 * 7)


@pytest.mark.parametrize("start_at_b", [False, True], ids=["start0", "start_b"])
def test_bounds_varying_along_two_grid_axes(start_at_b: bool) -> None:
    def start(b: Any, i: Any) -> Any:
        return b if start_at_b else 0

    def stop(b: Any, i: Any) -> Any:
        return b + 2 * i

    kit = _block_sum_kernel(start, stop, grid=(2, 3), names=("b", "i"))
    x = random((8, 3), F32)
    res = kit.run(x=x)
    np.testing.assert_array_equal(res.outputs["o"], _reference(x, (2, 3), start, stop))
    executed = sum(b + 2 * i - start(b, i) for b in range(2) for i in range(3))
    assert res.loop_stats["j"] == (executed, 6 * 5)


def test_bounds_that_vary_out_of_order() -> None:
    """Trip counts 3, 0, 2, 4, 1: the active points are not a prefix in grid order."""
    trips = [3, 0, 2, 4, 1]
    kit = Kit()
    kit.inp("n", (5,), DType.I32)
    kit.inp("x", (8, 3), F32)
    kit.out("o", (5, 3), F32)

    def body(i: Any) -> None:
        kit.op(ir.LoadScalar, name="ni", src="n", index=(i,))
        init = kit.op(ir.Full, shape=(3,), value=100.0, dtype=F32)

        def step(j: Any, acc: ir.Value) -> list[ir.Value]:
            return [kit.op(ir.Add, lhs=acc, rhs=kit.load("x", point(j), span(0, 3)))]

        (acc,) = kit.loop("j", 0, "ni", [init], step)
        kit.store("o", acc, point(i), span(0, 3))

    kit.grid([5], body, names=("i",))
    x = random((8, 3), F32)
    res = kit.run(n=np.asarray(trips, np.int32), x=x)
    want = np.stack(
        [100 + x[:t].sum(axis=0) if t else np.full(3, 100.0) for t in trips]
    )
    np.testing.assert_allclose(res.outputs["o"], want, rtol=1e-6)


def test_nested_ragged_loops() -> None:
    """for j < i+1: for t < j+1: acc += x[t] (a triangle inside a triangle)."""
    kit = Kit()
    kit.inp("x", (8, 3), F32)
    kit.out("o", (4, 3), F32)

    def body(i: Any) -> None:
        init = kit.op(ir.Full, shape=(3,), value=0.0, dtype=F32)

        def outer(j: Any, acc: ir.Value) -> list[ir.Value]:
            def inner(t: Any, acc2: ir.Value) -> list[ir.Value]:
                return [
                    kit.op(ir.Add, lhs=acc2, rhs=kit.load("x", point(t), span(0, 3)))
                ]

            return kit.loop("t", 0, j + 1, [acc], inner)

        (acc,) = kit.loop("j", 0, i + 1, [init], outer)
        kit.store("o", acc, point(i), span(0, 3))

    kit.grid([4], body, names=("i",))
    x = random((8, 3), F32)
    res = kit.run(x=x)
    want = np.stack(
        [
            sum((x[: j + 1].sum(axis=0) for j in range(i + 1)), np.zeros(3))
            for i in range(4)
        ]
    )
    np.testing.assert_allclose(res.outputs["o"], want, rtol=1e-5)
    assert res.loop_stats["j"] == (10, 16)
    assert res.loop_stats["t"][0] == sum(
        (j + 1) for i in range(4) for j in range(i + 1)
    )


@pytest.mark.parametrize("ragged", [False, True], ids=["uniform", "ragged"])
def test_loop_carried_values_can_swap(ragged: bool) -> None:
    """yield (b, a): after n iterations the pair is swapped n times."""
    kit = Kit()
    kit.out("o", (4, 2), F32)

    def body(i: Any) -> None:
        a = kit.op(ir.Full, shape=(1,), value=1.0, dtype=F32)
        b = kit.op(ir.Full, shape=(1,), value=2.0, dtype=F32)
        ra, rb = kit.loop("j", 0, i if ragged else 3, [a, b], lambda j, x, y: [y, x])
        kit.store("o", ra, point(i), span(0, 1))
        kit.store("o", rb, point(i), span(1, 1))

    kit.grid([4], body, names=("i",))
    out = kit.run().outputs["o"]
    trips = [0, 1, 2, 3] if ragged else [3] * 4
    want = [[1.0, 2.0] if t % 2 == 0 else [2.0, 1.0] for t in trips]
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("threads", [1, 3])
def test_the_grid_body_runs_once_for_all_points(
    threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once per thread: with FADSL_THREADS=3 the B axis (4) is split 1 + 1 + 2."""
    monkeypatch.setenv("FADSL_THREADS", str(threads))
    kit = Kit()
    kit.inp("x", (4, 8, 16, 2), F32)
    kit.out("o", (4, 8, 16, 2), F32)

    def body(b: Any, h: Any, i: Any) -> None:
        t = kit.load("x", point(b), point(h), point(i), span(0, 2))
        kit.store("o", kit.op(ir.Exp, x=t), point(b), point(h), point(i), span(0, 2))

    kit.grid([4, 8, 16], body)
    x = random((4, 8, 16, 2), F32)
    with counting(ir.Load, ir.Exp, ir.Store) as seen:
        out = kit.run(x=x).outputs["o"]
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)
    assert (seen["Load"], seen["Exp"], seen["Store"]) == (threads,) * 3
    assert seen["Exp points"] == 4 * 8 * 16


def test_loop_invariant_values_are_not_regathered_per_iteration() -> None:
    """A tile loaded before a ragged loop is restricted to the active points by views."""
    kit = Kit()
    kit.inp("q", (6, 4), F32)
    kit.out("o", (6, 4), F32)

    def body(i: Any) -> None:
        qt = kit.load("q", point(i), span(0, 4))
        init = kit.op(ir.Full, shape=(4,), value=0.0, dtype=F32)

        def step(j: Any, acc: ir.Value) -> list[ir.Value]:
            return [kit.op(ir.Add, lhs=acc, rhs=qt)]

        (acc,) = kit.loop("j", 0, i + 1, [init], step)
        kit.store("o", acc, point(i), span(0, 4))

    kit.grid([6], body, names=("i",))
    q = random((6, 4), F32)
    seen_bases: list[Any] = []
    inner = impls.IMPLS[ir.Add]

    def spy(op: Any, fr: Any) -> Any:
        arr = fr.val(op.rhs)
        seen_bases.append(arr if arr.base is None else arr.base)
        return inner(op, fr)

    impls.IMPLS[ir.Add] = spy
    try:
        out = kit.run(q=q).outputs["o"]
    finally:
        impls.IMPLS[ir.Add] = inner
    np.testing.assert_allclose(out, q * (np.arange(6)[:, None] + 1), rtol=1e-6)
    assert len(seen_bases) == 6
    assert all(
        b is seen_bases[0] for b in seen_bases
    ), "views of one copy of q per loop"


def test_loop_variable_is_the_same_for_all_active_points() -> None:
    kit = Kit()
    kit.out("o", (3, 4), DType.I32)

    def body(i: Any) -> None:
        init = kit.op(ir.Full, shape=(1,), value=0, dtype=DType.I32)

        def step(j: Any, acc: ir.Value) -> list[ir.Value]:
            return [kit.op(ir.Arange, start=10 * j + i, size=1)]

        (last,) = kit.loop("j", 0, i + 1, [init], step)
        kit.store("o", last, point(i), span(0, 1))

    kit.grid([3], body, names=("i",))
    out = kit.run().outputs["o"][:, 0]
    np.testing.assert_array_equal(out, [0, 11, 22])
