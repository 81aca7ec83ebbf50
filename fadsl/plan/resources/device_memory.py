"""Whether a kernel's GM tensors fit the device memory of the chosen chip.

Every input, output and scratch tensor of a launch lives in the device's memory
(``Target.hbm_bytes``); a shape whose tensors need more cannot run on that chip
whatever the tile sizes. ``fadsl tune`` checks this before it plans anything: its cost
model evaluates every task of the grid, so a shape such as Sq = 10^9 (a query tensor of
a petabyte) used to keep it busy for hours without a word (issue 28).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fadsl.errors import Loc, ResourceError
from fadsl.ir.expr import evaluate
from fadsl.ir.nodes import Kernel, ParamKind
from fadsl.ir.types import TensorType
from fadsl.target import Target

_KINDS = (ParamKind.IN, ParamKind.OUT, ParamKind.SCRATCH)


def tensor_sizes(kernel: Kernel, env: Mapping[str, Any]) -> dict[str, int]:
    """Bytes of every GM tensor of ``kernel`` at ``env``, by parameter name."""
    sizes: dict[str, int] = {}
    for p in kernel.params:
        if p.kind in _KINDS and isinstance(p.type, TensorType):
            count = 1
            for d in p.type.shape:
                count *= max(int(evaluate(d, dict(env))), 0)
            sizes[p.name] = count * p.type.dtype.itemsize
    return sizes


def check_device_memory(
    kernel: Kernel, env: Mapping[str, Any], target: Target, shape_loc: Loc | None
) -> None:
    """Raise when the GM tensors at ``env`` exceed ``target``'s device memory."""
    if target.hbm_bytes <= 0:
        return
    sizes = tensor_sizes(kernel, env)
    total = sum(sizes.values())
    if total <= target.hbm_bytes:
        return
    largest = sorted(sizes.items(), key=lambda kv: -kv[1])[:3]
    raise ResourceError(
        f"the tensors of `{kernel.name}` at this shape need {_size(total)}, more "
        f"than the {_size(target.hbm_bytes)} of device memory of {target.name}",
        shape_loc,
        "give a shape whose tensors fit one device (split the batch or the "
        "sequence over several launches or devices)",
        tuple(f"`{n}` alone is {_size(b)} ({b:,} B)" for n, b in largest)
        + (f"{target.name}: {target.sources.get('hbm_bytes', 'hbm_bytes')}",),
        code="device_memory",
    )


def _size(n: int) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,} B"
