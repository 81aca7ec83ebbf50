"""Debugging ops: ``debug_print`` and ``device_assert`` (fd.debug_print, fd.device_assert).

Both name the task and loop iteration they run in: ``labels`` are the user's names of
the enclosing grid and loop variables, ``scope`` their values. The interpreter runs
them (``backends/interp/debug.py``); compiled builds leave them out
(``passes/strip_debug.py``) unless built with ``--debug``, which lowers them to
Ascend C (``backends/ascendc/vector_debug.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fadsl.errors import DTypeError
from fadsl.ir.expr import Expr
from fadsl.ir.op_base import Op, TypeContext, Value, tile_type
from fadsl.ir.types import DType


@dataclass(frozen=True, slots=True, kw_only=True)
class DebugPrint(Op):
    """For every task and iteration that runs it: print ``fmt`` with each ``{}``
    replaced by the next of ``args`` (``str(np.asarray(arg))``), after the values of
    the ``labels`` (``[b=0 h=1 i=0 j=2]``). Changes nothing."""

    fmt: str
    labels: tuple[str, ...] = ()
    scope: tuple[Expr, ...] = ()
    grid: int = 0
    """How many of ``labels`` (the first) are the grid's variables: the task."""
    scalars: tuple[int, ...] = ()
    """Positions of ``args`` that hold a scalar (a one-element f32 tile): printed as
    a number."""
    args: tuple[Value, ...] = ()
    OPERANDS: ClassVar[tuple[str, ...]] = ("args",)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceAssert(Op):
    """For every task and iteration that runs it: every element of the mask ``cond``
    is true; otherwise the run stops with ``msg``, the task and the iteration."""

    msg: str
    labels: tuple[str, ...] = ()
    scope: tuple[Expr, ...] = ()
    grid: int = 0
    cond: Value
    OPERANDS: ClassVar[tuple[str, ...]] = ("cond",)

    def check(self, ctx: TypeContext) -> None:
        t = tile_type(self.cond)
        if t is not None and t.dtype is not DType.BOOL:
            raise DTypeError(
                f"device_assert: the condition is a {t.dtype.value} tile, not a mask",
                self.loc,
                hint="compare to make a mask, e.g. fd.device_assert(l > 0, 'l > 0')",
                code="device_assert_not_a_mask",
            )
