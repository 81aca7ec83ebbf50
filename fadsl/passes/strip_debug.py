"""Compiled builds leave out the debugging ops (fd.debug_print, fd.device_assert).

Input: IR; output: the same IR without ``DebugPrint`` and ``DeviceAssert`` when it is
lowered for a chip (a target is given), unchanged for the interpreter (no target),
which runs them. They are not lowered to Ascend C: on the device they would print
with ``AscendC::printf`` and check with ``ascendc_assert``, both enabled unless
``ASCENDC_DUMP=0`` (asc-devkit docs/zh/api/SIMD-API/基础API/调试接口/: 上板打印/printf.md,
异常检测/ascendc_assert.md, 关闭ASCENDC_DUMP说明.md); that lowering is open work.

Non-goals: anything else; the values the ops read are left for later passes to drop.
"""

from __future__ import annotations

from fadsl.ir import nodes as ir
from fadsl.ir.visitor import IRTransformer

NAME = "strip_debug"


def run(kernel: ir.Kernel, target: object = None) -> ir.Kernel:
    if target is None:
        return kernel
    return _Strip().transform(kernel)


class _Strip(IRTransformer):
    def visit_DebugPrint(self, op: ir.DebugPrint) -> tuple[ir.Op, ...]:
        return ()

    def visit_DeviceAssert(self, op: ir.DeviceAssert) -> tuple[ir.Op, ...]:
        return ()


def debug_ops(kernel: ir.Kernel) -> list[ir.Op]:
    """The debugging ops of ``kernel``, in program order."""
    out: list[ir.Op] = []
    _collect(kernel.body, out)
    return out


def _collect(body: tuple[ir.Op, ...], out: list[ir.Op]) -> None:
    for op in body:
        if isinstance(op, (ir.DebugPrint, ir.DeviceAssert)):
            out.append(op)
        if isinstance(op, (ir.Grid, ir.For)):
            _collect(op.body, out)
