"""Lint: numerically risky patterns that are legal IR, and outputs never written.

Input: typed IR. Output: a list of warnings (rendered like errors, but the command goes
on), and ``unwritten_outputs``: an error for each output no store writes (it would hold
whatever the device memory held: NaN in the interpreter, garbage on the chip).
Warnings: ``exp``/``exp2`` of a 16-bit float tile that is not a difference (the
classic FlashAttention overflow: exp overflows fp16 beyond 11.09 and bf16 scores lose
precision; subtract the row maximum first and exponentiate in f32).

Non-goals: proving ranges; proving that the stores cover every element of an output
(a tail the grid misses); changing the program.
"""

from __future__ import annotations

from collections.abc import Iterator

from fadsl.errors import FadslError, KernelSyntaxError, render
from fadsl.ir import nodes as ir
from fadsl.ir.op_base import ParamKind
from fadsl.ir.types import DType, TileType

NAME = "lint"
_SMALL = (DType.F16, DType.BF16)


class LintWarning(FadslError):
    """A legal but risky construct; printed, never raised by commands."""


def warnings(kernel: ir.Kernel) -> list[LintWarning]:
    defs: dict[ir.Value, ir.Op] = {}
    out: list[LintWarning] = []
    _walk(kernel.body, defs, out)
    return out


def _walk(
    body: tuple[ir.Op, ...], defs: dict[ir.Value, ir.Op], out: list[LintWarning]
) -> None:
    for op in body:
        for r in op.results():
            defs[r] = op
        if isinstance(op, (ir.Grid, ir.For)):
            _walk(op.body, defs, out)
        elif isinstance(op, (ir.Exp, ir.Exp2)):
            _check_exp(op, defs, out)


def _check_exp(
    op: ir.Unary, defs: dict[ir.Value, ir.Op], out: list[LintWarning]
) -> None:
    t = op.x.type
    if not isinstance(t, TileType) or t.dtype not in _SMALL:
        return
    if isinstance(defs.get(op.x), ir.Sub):
        return
    name = "exp" if isinstance(op, ir.Exp) else "exp2"
    out.append(
        LintWarning(
            f"{name} of an unnormalised {t.dtype.value} tile: exp overflows fp16 above 11.09",
            op.loc,
            hint="subtract the row maximum first and exponentiate in f32, e.g. "
            "fd.exp(s - m[:, None]) with s = fd.dot(...) (f32)",
        )
    )


def unwritten_outputs(kernel: ir.Kernel) -> list[FadslError]:
    """An error for each ``fd.Out`` that no ``fd.store`` or ``fd.atomic_add`` writes."""
    writes = (ir.Store, ir.ScatterAdd)
    written = {op.dst for op in _ops(kernel.body) if isinstance(op, writes)}
    return [
        KernelSyntaxError(
            f"output `{p.name}` of kernel `{kernel.name}` is never written: no "
            "fd.store or fd.atomic_add stores to it, so it would hold whatever the "
            "device memory held (NaN in the interpreter)",
            p.loc,
            hint=f"store a tile into it (fd.store({p.name}[...], tile)) or remove the "
            "parameter; to look at a value while debugging, fd.debug_print it",
            code="output_never_written",
        )
        for p in kernel.params
        if p.kind is ParamKind.OUT and p.name not in written
    ]


def _ops(body: tuple[ir.Op, ...]) -> Iterator[ir.Op]:
    for op in body:
        yield op
        if isinstance(op, (ir.Grid, ir.For)):
            yield from _ops(op.body)


def as_text(w: LintWarning) -> str:
    """A rendered warning, with 'warning' in place of the error title."""
    return render(w).replace("fadsl: error:", "fadsl: warning:", 1)
