"""What ``fadsl check`` says about each gather of a mod (issue 29, item 2): the window
it loads into UB (counted with the other buffers of the table above it) and how its
index range is checked."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from fadsl.ir import nodes as ir
from fadsl.ir.types import TileType
from fadsl.plan.resources.footprint_eval import exact


def gather_notes(grid: ir.Grid, env: Mapping[str, Any]) -> tuple[str, ...]:
    """One line per gather (per source line and tensor)."""
    out: dict[tuple[str, str], str] = {}
    for op in _gathers(grid.body):
        where = op.loc.short() if op.loc else "?"
        t = op.table.type
        assert isinstance(t, TileType)
        width = exact(t.shape[0], env)
        out.setdefault(
            (op.src, where),
            f"gather `{op.src}` ({where}): a window of {width:,} x {t.dtype.value} = "
            f"{width * t.dtype.itemsize:,} B of UB per load (Gather by byte "
            f"offsets); {_range(op)}",
        )
    return tuple(out.values())


def _range(op: ir.Gather) -> str:
    if op.proven:
        return "index range proven inside the tensor"
    if op.lo is not None:
        return "index range checked once per block (Trap() outside the tensor)"
    return (
        "indices read from a tensor: the smallest and largest of each tile checked "
        "(Trap() outside the tensor; fadsl run names the first bad index)"
    )


def _gathers(body: tuple[ir.Op, ...]) -> Iterator[ir.Gather]:
    for op in body:
        if isinstance(op, ir.Gather):
            yield op
        yield from _gathers(getattr(op, "body", ()))
