"""The Ascend C backend's refusal of a captured-tensor gradient it cannot lower
(issue 29, item 3).

A backward kernel with ``fd.tensor(..., requires_grad=True)`` adds into ``d<name>``
with ``atomic_add`` where the mod read a block of rows (``bias[h, q_idx, kv_idx]``:
lowered as dQ's sums are), and with ``ScatterAdd`` (``ir/op_scatter.py``) for a scalar
read, a gather or a block of columns, which ``backends/ascendc/scatter_io.py`` lowers:
a scalar read (every index a scalar) by a ReduceSum per vector core, a gather and a
column block through an f32 UB window (``base``, ``width``: where the indices lie).
A ``scatter_add`` by index tiles without a window (written by hand in textual IR) has
no Ascend C lowering: ``check``, ``compile`` and ``sim`` refuse the kernel rather than
emit code the chip would not run as the interpreter does.
"""

from __future__ import annotations

from collections.abc import Iterator

from fadsl.errors import BackendError
from fadsl.ir import nodes as ir


def refuse_scatter(kernel: ir.Kernel) -> None:
    """Raise ``tensor_grad_not_on_ascendc`` at the first ScatterAdd of ``kernel`` that
    scatters by index tiles without a window."""
    for op in _walk(kernel.body):
        if isinstance(op, ir.ScatterAdd) and op.at and op.width is None:
            raise BackendError(
                f"kernel `{kernel.name}` computes the gradient of the captured tensor "
                f"`{op.dst[1:]}` (output `{op.dst}`) with a scatter_add by index "
                "tiles without a window (base, width): a scatter-add the Ascend C "
                "backend does not lower",
                op.loc,
                hint="give the scatter_add `base` and `width` (the window of the "
                "tensor its indices lie in), as the backward of a score_mod does for "
                "every read, or run it in the interpreter (fadsl run)",
                code="tensor_grad_not_on_ascendc",
            )


def _walk(body: tuple[ir.Op, ...]) -> Iterator[ir.Op]:
    for op in body:
        yield op
        yield from _walk(getattr(op, "body", ()))


__all__ = ["refuse_scatter"]
