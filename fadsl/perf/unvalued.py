"""The kernel model refuses, by name, a KV loop or grid it cannot value."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fadsl.errors import UsageError
from fadsl.ir import nodes as ir
from fadsl.user_site import user_site


def refuse_unvalued(
    kernel: ir.Kernel, grid: ir.Grid, loop: ir.For, env: Mapping[str, Any]
) -> None:
    """A grid extent or KV loop bound that needs a value the kernel reads at run
    time, and that the kernel definition gives the model none for (its
    ``modelled_scalars``), is refused by name rather than failing inside."""
    reads = {op.name: op.src for op in grid.body if isinstance(op, ir.LoadScalar)}
    bounds = (loop.start, loop.stop, *grid.extents)
    needed = {str(s) for e in bounds for s in getattr(e, "free_symbols", ())}
    missing = sorted(needed - set(env) - set(grid.vars))
    if not missing:
        return
    what = ", ".join(
        f"`{n}` (read from the input `{reads[n]}`)" if n in reads else f"`{n}`"
        for n in missing
    )
    loc, site = user_site(loop.loc, kernel.loc, "the KV loop is")
    raise UsageError(
        f"the kernel model cannot value the KV loop of `{kernel.name}`: its "
        f"bounds need {what}, known only at run time, and the kernel gives the "
        "model no value for it",
        loc or kernel.loc,
        notes=site
        + (
            "`fadsl tune` and `fadsl timeline` model a kernel from its shape and "
            "constants; fd.attention kernels give values for their sequence "
            "lengths (docs/cost-model.md)",
        ),
        hint="run fadsl check for the buffers, and fadsl run or sim for the "
        "outputs; they need no model",
        code="model_runtime_bound",
    )
