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


def scatter_notes(grid: ir.Grid, env: Mapping[str, Any]) -> tuple[str, ...]:
    """One line per gradient of a captured tensor summed by a ``scatter_add``
    (backends/ascendc/scatter_io.py): what it keeps in UB and adds to GM."""
    out: dict[tuple[str, str], str] = {}
    for op in _walk(grid.body):
        if not isinstance(op, ir.ScatterAdd):
            continue
        where = op.loc.short() if op.loc else "?"
        if op.width is None:
            what = (
                "a ReduceSum of each vector core's rows, one 4-byte atomic "
                "DataCopyPad per block"
            )
        elif op.at and getattr(op.at[0].type, "shape", (0,))[0] == 1:
            w = exact(op.width, env)
            what = (
                f"the column sums of each vector core's rows in {w:,} f32 = "
                f"{4 * w:,} B of UB (an Add per row), one atomic DataCopyPad per block"
            )
        else:
            w = exact(op.width, env)
            what = (
                f"a window of {w:,} f32 sums = {4 * w:,} B of UB, up to {3 * w:,} vector "
                "instructions per block (CompareScalar, Select, ReduceSum per entry), "
                "one atomic DataCopyPad of the window per block"
            )
        out.setdefault((op.dst, where), f"gradient `{op.dst}` ({where}): {what}")
    return tuple(out.values())


def _walk(body: tuple[ir.Op, ...]) -> Iterator[ir.Op]:
    for op in body:
        yield op
        yield from _walk(getattr(op, "body", ()))


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
