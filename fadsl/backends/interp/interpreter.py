"""``interpret``: run a kernel's IR on numpy arrays; the executable meaning of the IR.

The grid body runs once for every grid point at the same time (``frame.py`` describes
the batched values); sequential loops run each iteration on the points that are still
inside their own bounds (``control.py``); the numpy semantics of every op live in one
``@impl`` function per op class (``impls.py`` and the family modules).

Global memory: inputs are used as given (read-only views); outputs and scratch tensors
start filled with NaN (integer ones with the poison of ``frame.POISON``: INT32_MIN for
i32, 255 for u8, True for bool), so a position the kernel never writes is visible;
outputs that ``atomic_add`` writes start at 0 and are rounded from f32 sums after the
grid (``atomics.py``).
Floating-point warnings are silenced: inf and NaN are intended values (exp(-inf) = 0,
fully masked rows).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ContextManager

import numpy as np

try:  # imported with numpy, not inside a run (15 ms here, counted as run time before)
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover - a dependency; then BLAS keeps its threads
    threadpool_limits = None  # type: ignore[assignment]

from fadsl.backends.interp import atomics, debug
from fadsl.backends.interp.aliases import aliased_start
from fadsl.backends.interp.frame import Frame
from fadsl.backends.interp.machine import Machine
from fadsl.backends.interp.heap import reuse_freed_memory
from fadsl.backends.interp.storage import nan_of
from fadsl.backends.interp.threads import thread_count
from fadsl.backends.interp.impls import IMPLS, run_block
from fadsl.errors import ExecutionError, FadslError
from fadsl.ir.expr import evaluate
from fadsl.ir.nodes import Kernel, Param, ParamKind
from fadsl.ir.types import ScalarType, TensorType
from fadsl.numerics import np_dtype

IMPLS.load()  # the op families' modules (IMPLS.filled_by) register their impls


@dataclass(frozen=True)
class InterpResult:
    """What one run produced."""

    outputs: dict[str, np.ndarray]
    """Every OUT and SCRATCH parameter, by name."""
    loop_stats: dict[str, tuple[int, int]]
    """Per For variable: (point-iterations executed, point-iterations of the loop's
    bounding rectangle, i.e. every point running from the smallest start to the largest
    stop). The difference is the number of skipped blocks (causal KV skipping)."""


def interpret(
    kernel: Kernel, env: Mapping[str, int | float], inputs: Mapping[str, np.ndarray]
) -> InterpResult:
    """Run ``kernel`` on ``inputs``.

    Args:
        kernel: the IR (from the frontend, the textual IR or any pass).
        env: values of the shape symbols, integer tile constants and float scalar
            parameters. Missing constants default to the kernel's, missing scalars to
            their declared default.
        inputs: one array per input parameter, with its shape and numpy dtype
            (``fadsl.numerics.np_dtype``).

    Returns:
        The output and scratch tensors and per-loop iteration counts.

    Example::

        res = interpret(fa2.build({"causal": True}), {"B": 1, ...}, {"q": q, ...})
        o = res.outputs["o"]
    """
    try:
        threads = thread_count()
        with np.errstate(all="ignore"), one_blas_thread(), reuse_freed_memory():
            try:
                return _interpret(kernel, env, inputs, threads)
            except Exception:
                if threads == 1:
                    raise
            # a failure is reported as the one-thread run reports it (which points,
            # which op first), whatever the chunks of a split grid met first
            return _interpret(kernel, env, inputs, 1)
    except FadslError as err:
        if os.environ.get("FADSL_DEBUG"):
            raise
        raise err.with_traceback(None) from None


def one_blas_thread() -> ContextManager[Any]:
    """BLAS on one thread while the interpreter runs (threadpoolctl, when installed).

    The interpreter's matmuls are many and mid-sized (one KV block of every task at a
    time, e.g. 64 calls of 8 x [4096 x 128] @ [128 x 128] for FA2 at S=4096). Split
    over BLAS threads, each call waits for its slowest thread, and on a busy machine a
    thread that lost its core holds the call for a scheduler time slice: 2.5x slower
    in wall time here (docs/performance.md). One thread also makes the bits the same on
    every machine: OpenBLAS's threaded sgemm orders some sums differently (about 4% of
    the elements of a [4096 x 128] @ [128 x 128] product differ in the last bits with
    two threads); each is a float32 accumulation of exactly widened operands, the
    meaning of ``Dot``.
    """
    if threadpool_limits is None:  # pragma: no cover - a dependency
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _interpret(
    kernel: Kernel,
    env: Mapping[str, int | float],
    inputs: Mapping[str, np.ndarray],
    threads: int,
) -> InterpResult:
    syms = _symbols(kernel, env)
    params = {p.name: p for p in kernel.params}
    _check_input_names(kernel, inputs)
    gm = {
        p.name: _tensor(p, syms, inputs)
        for p in kernel.params
        if isinstance(p.type, TensorType)
    }
    machine = Machine(
        kernel, params, gm, threads, sums=atomics.accumulators(kernel, gm)
    )
    root = Frame(machine, None, None, (), syms)
    try:
        run_block(kernel.body, root)
    finally:
        debug.flush(machine)
    atomics.finish(kernel, gm, machine.sums)
    outputs = {
        p.name: gm[p.name]
        for p in kernel.params
        if p.kind in (ParamKind.OUT, ParamKind.SCRATCH)
    }
    return InterpResult(outputs, machine.loop_stats())


def _symbols(kernel: Kernel, env: Mapping[str, int | float]) -> dict[str, Any]:
    syms: dict[str, Any] = {}
    for name, value in kernel.const_values().items():
        if isinstance(value, int) and not isinstance(value, bool):
            syms[name] = value
    for name, value in env.items():
        syms[name] = _number(name, value, kernel)
    for name in kernel.shape_syms:
        if name not in syms:
            raise ExecutionError(
                f"shape symbol `{name}` of kernel `{kernel.name}` has no value",
                kernel.loc,
                hint="pass it in env, e.g. env={'" + name + "': 128, ...}",
            )
    for p in kernel.params:
        if isinstance(p.type, ScalarType) and p.name not in syms:
            if p.default is None:
                raise ExecutionError(
                    f"scalar `{p.name}` has no value", p.loc, hint="pass it in env"
                )
            syms[p.name] = float(_evaluate_default(p, syms))
    return syms


def _evaluate_default(p: Param, syms: dict[str, Any]) -> Any:
    assert p.default is not None
    try:
        return evaluate(p.default, syms)
    except KeyError as exc:
        raise ExecutionError(
            f"the default of scalar `{p.name}` uses `{exc.args[0]}`, which has no value",
            p.loc,
        ) from None


def _number(name: str, value: Any, kernel: Kernel) -> int | float:
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    raise ExecutionError(
        f"env[{name!r}] is {type(value).__name__}, not a number", kernel.loc
    )


def _check_input_names(kernel: Kernel, inputs: Mapping[str, np.ndarray]) -> None:
    wanted = {p.name for p in kernel.inputs}
    for name in inputs:
        if name not in wanted:
            raise ExecutionError(
                f"`{name}` is not an input of kernel `{kernel.name}`",
                kernel.loc,
                hint="its inputs are: " + ", ".join(sorted(wanted)),
            )


def _tensor(
    p: Param, syms: dict[str, Any], inputs: Mapping[str, np.ndarray]
) -> np.ndarray:
    assert isinstance(p.type, TensorType)
    shape = tuple(_extent(p, d, syms) for d in p.type.shape)
    dtype = np_dtype(p.type.dtype)
    if p.kind is ParamKind.OUT and p.alias is not None:
        return aliased_start(p, inputs, shape, dtype)
    if p.kind is not ParamKind.IN:
        return np.full(shape, nan_of(p.type.dtype), dtype)
    if p.name not in inputs:
        raise ExecutionError(f"input `{p.name}` ({p.type}) is missing", p.loc)
    arr = inputs[p.name]
    if not isinstance(arr, np.ndarray) or arr.shape != shape or arr.dtype != dtype:
        got = (
            f"{arr.dtype}{list(arr.shape)}"
            if isinstance(arr, np.ndarray)
            else type(arr).__name__
        )
        raise ExecutionError(
            f"input `{p.name}` must be {dtype}{list(shape)} ({p.type}), got {got}",
            p.loc,
        )
    view = arr.view()
    view.flags.writeable = False
    return view


def _extent(p: Param, d: Any, syms: dict[str, Any]) -> int:
    try:
        value = evaluate(d, syms)
    except KeyError as exc:
        raise ExecutionError(
            f"the shape of `{p.name}` uses `{exc.args[0]}`, which has no value", p.loc
        ) from None
    if int(value) != value or value < 0:
        raise ExecutionError(f"`{p.name}` would have extent {value}", p.loc)
    return int(value)
