"""Compiled builds leave out the debugging ops (fd.debug_print, fd.device_assert).

Input: IR; output: the same IR without ``DebugPrint`` and ``DeviceAssert`` when it is
lowered for a chip (a target is given), unchanged for the interpreter (no target),
which runs them. A debug build (``fadsl compile/sim --debug``, ``Binding.debug``)
skips this pass (``run_pipeline(keep_debug=True)``) and lowers them to
``AscendC::printf`` / ``ascendc_assert`` (``backends/ascendc/vector_debug.py``),
after ``check_printable`` refused what the device cannot print.

Non-goals: anything else; the values the ops read are left for later passes to drop.
"""

from __future__ import annotations

from fadsl.errors import BackendError
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


def check_printable(kernel: ir.Kernel) -> None:
    """E108 for a debugging op of a debug build that reads a loaded tile a dot reads:
    that tile lives in L1 / L0 of the cube core, which the vector cores cannot read
    (the printing is theirs)."""
    ops = _all_ops(kernel.body)
    defs = {v: op for op in ops for v in getattr(op, "results", lambda: ())()}
    dotted = {v for op in ops if isinstance(op, ir.Dot) for v in op.operand_values()}
    for op in debug_ops(kernel):
        for v in op.operand_values():
            if v in dotted and isinstance(defs.get(v), (ir.Load, ir.LoadPages)):
                what = (
                    "fd.debug_print"
                    if isinstance(op, ir.DebugPrint)
                    else "fd.device_assert"
                )
                raise BackendError(
                    f"{what} cannot run on the device in a --debug build: %{v.name} is "
                    "a loaded tile that a dot reads, kept in the cube core's L1 and L0, "
                    "which the vector cores that print cannot read",
                    op.loc,
                    hint="print a value the vector cores compute (a dot's result, a row "
                    "statistic); the interpreter (fadsl run) prints it as written",
                    code="debug_operand_not_printable",
                )


def _all_ops(body: tuple[ir.Op, ...]) -> list[ir.Op]:
    out: list[ir.Op] = []
    for op in body:
        out.append(op)
        out += _all_ops(getattr(op, "body", ()))
    return out
