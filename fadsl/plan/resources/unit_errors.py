"""The resource errors about cores and units: a blockDim the chip does not have, and
dtypes a unit does not take (``check_resources.explain`` gathers them with the others).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fadsl.errors import Loc, ResourceError
from fadsl.plan.memory.buffer_plan import Buffer
from fadsl.target import Target

if TYPE_CHECKING:
    from fadsl.plan.resources.check_resources import ResourceReport


def core_error(
    report: ResourceReport, target: Target, file: str, kernel_loc: Loc | None
) -> ResourceError:
    c = report.cores
    mix = c.kernel_type.startswith("MIX")
    what = "MIX" if mix else c.kernel_type
    return ResourceError(
        f"{what} kernel `{report.kernel}` ({file}) asks blockDim {c.block_dim}, but "
        f"{target.name} has {c.physical} physical {c.unit}",
        kernel_loc,
        f"omit --block-dim: fadsl launches min(tasks, {c.physical}) = "
        f"{min(c.tasks, c.physical)} blocks and loops over the {c.tasks} tasks",
        (
            f"blockDim counts {'AIC + 2 AIV groups' if mix else c.unit + 's'} and must be "
            f"between 1 and the physical count (CANN's SetBlockDim documentation, hiascend.com atlasopapi_07_00236)",
        ),
    )


def dtype_errors(
    report: ResourceReport, target: Target, file: str
) -> list[ResourceError]:
    """One error per unit and dtype, naming every buffer that holds it."""
    groups: dict[tuple[bool, str], list[Buffer]] = {}
    for b in report.unsupported:
        groups.setdefault((b.space in ("L0A", "L0B"), b.dtype.value), []).append(b)
    errors = []
    for (cube, dtype), bufs in groups.items():
        unit = "cube" if cube else "vector unit"
        takes = target.cube_dtypes if cube else target.vector_dtypes
        src = target.sources.get("cube_dtypes" if cube else "vector_dtypes", "")
        where = ", ".join(f"{b.name} ({b.space}, {b.loc.short()})" for b in bufs)
        errors.append(
            ResourceError(
                f"the {unit} of {target.name} does not take {dtype}: kernel "
                f"`{report.kernel}` ({file}) keeps {dtype} in {where}",
                bufs[0].loc,
                f"the {unit} takes {', '.join(takes)}; choose one with --dtype "
                "(e.g. --dtype fp16) or cast before this op",
                (f"source: {src}",) if src else (),
            )
        )
    return errors
