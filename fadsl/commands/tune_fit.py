"""Which tile configurations ``fadsl tune`` need not plan because they cannot fit: those
whose footprint *floor* (``plan/search/floor.py``: what every plan of the kernel holds
at least, whatever the planner chooses) exceeds a memory. Every other configuration
the search needs is planned at its own sizes and checked exactly, as ``fadsl check``
does (``Lowered.check_at``), and its exact footprint is compared with the floor: a
floor above it means the floors are wrong, and the search starts again without them
(``tune_rank.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fadsl.driver.lower import Lowered
    from fadsl.plan.resources.check_resources import ResourceReport


def floored(
    low: Lowered, env: dict[str, Any], columns: dict[str, Any], count: int
) -> tuple[Any, dict[str, Any]]:
    """(which of the ``count`` configurations surely overflow a memory, the floors):
    ``env`` holds the shape and the structural constants, ``columns`` the tuned block
    sizes as arrays."""
    import numpy as np

    from fadsl.plan.memory.plan_buffers import lower
    from fadsl.plan.search.floor import floors, over

    anchor = lower(low.ir, low.target, env)
    floor = floors(anchor, low.target)
    out = over(floor, low.target, {**env, **columns})
    return np.broadcast_to(out, (count,)), floor


def below_floor(report: ResourceReport, floor: dict[str, Any]) -> bool:
    """Whether the exact footprint of some space is below its floor."""
    from fadsl.plan.resources.footprint_eval import exact

    for s in report.spaces:
        if s.space in floor and exact(floor[s.space], report.env) > s.used:
            return True
    return False


__all__ = ["below_floor", "floored"]
