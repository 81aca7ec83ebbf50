"""The Ascend C backend's refusal of the captured-tensor gradients it does not lower
(issue 29, item 3).

A backward kernel with ``fd.tensor(..., requires_grad=True)`` adds into ``d<name>``
with ``atomic_add`` where the mod read a block (``bias[h, q_idx, kv_idx]``: lowered as
dQ's sums are), and with ``ScatterAdd`` (``ir/op_scatter.py``) for a scalar read, a
gather or a block of columns. A scalar read (``alpha[h]``: every index a scalar) and a
gather (``rel[q_idx - kv_idx + c]``: the indices lie in the window the gather read)
are lowered (``backends/ascendc/scatter_io.py``). A column block ``bias[kv_idx]``,
a scatter by index tiles with no window, has no Ascend C lowering yet: ``check``,
``compile`` and ``sim`` refuse the kernel rather than emit code the chip would not
run as the interpreter does.
"""

from __future__ import annotations

from collections.abc import Iterator

from fadsl.errors import BackendError
from fadsl.ir import nodes as ir


def refuse_scatter(kernel: ir.Kernel) -> None:
    """Raise ``tensor_grad_not_on_ascendc`` at the first ScatterAdd of ``kernel`` that
    scatters by index tiles."""
    for op in _walk(kernel.body):
        if isinstance(op, ir.ScatterAdd) and op.at and op.width is None:
            raise BackendError(
                f"kernel `{kernel.name}` computes the gradient of the captured tensor "
                f"`{op.dst[1:]}` (requires_grad=True, output `{op.dst}`) from a block "
                "of columns of it: a scatter-add the Ascend C backend does not lower "
                "yet",
                op.loc,
                hint="run it in the interpreter (fadsl run) or through fadsl.torch on "
                "the CPU; to compile, declare the tensor without requires_grad=True "
                "(the backward then returns dq, dk, dv only); block reads "
                "(bias[h, q_idx, kv_idx], bias[h, q_idx]), scalar reads "
                "(alpha[h]) and gathers (rel[q_idx - kv_idx + c]) do compile",
                code="tensor_grad_not_on_ascendc",
            )


def _walk(body: tuple[ir.Op, ...]) -> Iterator[ir.Op]:
    for op in body:
        yield op
        yield from _walk(getattr(op, "body", ()))


__all__ = ["refuse_scatter"]
