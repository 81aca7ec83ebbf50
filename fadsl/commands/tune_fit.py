"""Which tile configurations fit a chip, for ``fadsl tune``: decided in bulk where the
plans made at a few anchor sizes agree, and by planning the configuration itself where
they do not."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fadsl.driver.lower import Lowered


def fits(
    low: Lowered,
    env: dict[str, Any],
    columns: dict[str, Any],
    grid: list[dict[str, int]],
    structure: dict[str, int],
) -> Any:
    """Which configurations of ``grid`` fit, as ``fadsl check`` would decide
    (``structure``: the values of ``stages`` / ``kv_splits`` the IR was built with).

    The planner makes size-dependent choices (L0 depth, resident operands, pooled UB
    temporaries), so a plan's footprint formulas are exact only near the sizes it was
    made at. Every configuration is evaluated under the plans made at the current sizes
    and at the two extreme corners of the search: one that fits under all of them or
    under none is decided so; one that fits under some is planned at its own sizes and
    checked exactly (a plan made elsewhere may double-buffer where its own does not).
    """
    import numpy as np

    lo, hi = _footprint_bounds(low, env, columns)
    shape = (len(grid),)
    surely = np.ones(shape, dtype=bool)
    maybe = np.ones(shape, dtype=bool)
    for space, capacity in ((s, low.target.capacity(s)) for s in SPACES):
        surely &= np.broadcast_to(hi[space], shape) <= capacity
        maybe &= np.broadcast_to(lo[space], shape) <= capacity
    ok = surely.copy()
    for i in np.flatnonzero(maybe & ~surely):
        point = {**grid[i], **structure}
        ok[i] = low.check_at({**env, **point}).ok
    return ok


SPACES = ("UB", "L1", "L0A", "L0B", "L0C")


def _footprint_bounds(
    low: Lowered, env: dict[str, Any], columns: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per space, the least and the largest footprint of every configuration under the
    plans made at the current sizes and at the two extreme corners of the search (each
    constant's least and largest value tried: a paged block_kv only whole pages)."""
    import numpy as np

    from fadsl.plan.footprint_eval import batch

    target = low.target
    names = list(columns)
    ends = [(int(np.min(columns[n])), int(np.max(columns[n]))) for n in names]
    corners = [
        {n: e[k == 1] for k, (n, e) in enumerate(zip(names, ends))},
        {n: e[k != 1] for k, (n, e) in enumerate(zip(names, ends))},
    ]
    lo: dict[str, Any] = {}
    hi: dict[str, Any] = {}
    for anchor in [env] + [{**env, **c} for c in corners if c]:
        p = low.plan_at(anchor)
        used = batch({s: p.footprint(s, target.align(s)) for s in SPACES})(
            {**env, **columns}
        )
        for s in SPACES:
            v = np.asarray(used[s])
            lo[s] = np.minimum(lo[s], v) if s in lo else v
            hi[s] = np.maximum(hi[s], v) if s in hi else v
    return lo, hi


__all__ = ["SPACES", "fits"]
