"""The post phase in the kernel model: a kernel's second ``fd.grid`` (``plan/schedule/phases.py``)
runs after ``SyncAll<false>()`` in the same launch, on the vector cores of the AI cores
the first grid was launched on.

Its time is modelled as a kernel of its own (``KernelModel`` of the post grid) without
a second launch overhead, dealt over the ``2 * blockDim`` AIVs of the launch, plus the
barrier: three cross-core flag hand-overs, as asc-devkit builds ``SyncAll<false>`` on
A2/A3 (each AIV to its AIC, the AICs among themselves, each AIC back to its AIVs).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from fadsl.perf.atomic_phases import HANDOVERS_PER_SYNC_ALL
from fadsl.target import Target

if TYPE_CHECKING:
    from fadsl.perf.kernel import KernelTime


def sync_all_s(target: Target) -> float:
    """Modelled seconds of one SyncAll<false>() (an assumption: see the module doc)."""
    from fadsl.perf.costs import cost_table

    cycles = HANDOVERS_PER_SYNC_ALL * cost_table(target)["flag_handover_cycles"]
    return cycles / target.rate("clock_hz")


def with_post(first: KernelTime, post: KernelTime, target: Target) -> KernelTime:
    """The whole kernel: the first grid, the barrier, then the post grid."""
    extra = sync_all_s(target) + post.time_s - post.launch_s
    return dataclasses.replace(
        first,
        time_s=first.time_s + extra,
        lower_bound_s=first.lower_bound_s + extra,
        hbm_bytes=first.hbm_bytes + post.hbm_bytes,
        l2_bytes=first.l2_bytes + post.l2_bytes,
        post_s=extra,
        post_tasks=post.tasks,
    )
