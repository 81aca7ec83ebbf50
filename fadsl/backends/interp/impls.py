"""The interpreter's op registry: one ``@impl(OpClass)`` function per IR op class.

An impl receives the op and the ``Frame`` it runs in. It returns the op's result (an
array ``[n or 1, *tile]`` in the result's dtype, a ``Handle`` or a ``QueueRef``) for a
``ValueOp``, or None; ``run_block`` stores results. The impls live in modules by op
family (``elementwise``, ``memory``, ``queues``, ``control``, ...), listed in
``IMPLS.filled_by``; importing ``fadsl.backends.interp.interpreter`` (or
``IMPLS.load()``) registers all of them. ``IMPLS`` is an ``ir.op_table.OpTable``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from fadsl.backends.interp.frame import Frame
from fadsl.errors import InternalError
from fadsl.ir.nodes import Op, Value, ValueOp, op_name
from fadsl.ir.op_table import OpTable

Impl = Callable[[Any, Frame], Any]
IMPLS: OpTable[Impl] = OpTable(
    "interpreter impl",
    "IMPLS",
    "impl",
    "fadsl/backends/interp/elementwise.py (or the module of its op family)",
    filled_by=tuple(
        f"fadsl.backends.interp.{m}"
        for m in (
            "atomics",
            "columns",
            "control",
            "cube",
            "debug",
            "elementwise",
            "gather",
            "memory",
            "pages",
            "queues",
            "random",
            "reductions",
            "scalars",
            "scatter",
        )
    ),
)

F = TypeVar("F", bound=Impl)


def impl(cls: type[Op]) -> Callable[[F], F]:
    """Register the numpy semantics of op class ``cls``."""
    return IMPLS.register(cls)


def run_block(
    ops: Sequence[Op], fr: Frame, keep: Sequence[Value] = (), args: Sequence[Value] = ()
) -> None:
    """Run ``ops`` in order in frame ``fr``, dropping each value after its last use.

    ``keep``: values that must outlive the block (a loop body's yields); ``args``: values
    bound before the block runs (a loop body's iter_args), dropped after their last use.
    """
    plan = fr.machine.release_plan(ops, keep, args)
    for op, dead in zip(ops, plan):
        fn = IMPLS.get(type(op))
        if fn is None:
            raise InternalError(
                f"the interpreter has no semantics for `{op_name(type(op))}`", op.loc
            )
        fr.dying = dead
        result = fn(op, fr)
        if isinstance(op, ValueOp):
            fr.set(op.result, result)
        result = None  # the frame is the only owner (see Frame.donate)
        if dead:
            fr.release(dead)


def missing_impls() -> list[str]:
    """Names of IR op classes without an ``@impl`` (the registry completeness check)."""
    return [cls.__name__ for cls in IMPLS.missing()]
