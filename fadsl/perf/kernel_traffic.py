"""The HBM and L2 traffic of a modelled kernel: per loaded tensor the fraction of its
bytes the L2 serves (perf/l2.py, from the order the cores take their tasks), and the
whole kernel's HBM and L2 bytes. Split from ``perf/kernel.py`` (KernelModel)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import sympy

from fadsl.ir import nodes as ir
from fadsl.perf import l2
from fadsl.perf.timeline_schedule import Timer
from fadsl.plan.resources.footprint_eval import batch, exact

if TYPE_CHECKING:
    from fadsl.perf.kernel import KernelModel


def l2_hits(model: KernelModel, env: Mapping[str, Any], dim: int) -> dict[str, float]:
    """Per tensor loaded by fewer grid axes than the grid has (shared between tasks),
    the fraction of its bytes the L2 serves when ``dim`` cores take the tasks in the
    kernel's order, each tensor given an equal share of the L2 left by the workspace."""
    extents = tuple(int(exact(e, env)) for e in model.grid.extents)
    shared = [ld for ld in model._loads if len(ld[1]) < len(extents)]
    if not shared:
        return {}
    trips = model.cost.trips(env, extents).reshape(-1)
    ws = sum(
        float(exact(s.work.get("ws_bytes", 0), env))
        for s in model.body
        if s.kind == "ws_write"
    )
    room = model.target.rate("l2_bytes") - dim * 2 * ws
    starts, stops = _ranges(model, env, extents)
    run = np.argsort(model.dealt(env, extents, dim)[1])  # grid index at each position
    out: dict[str, float] = {}
    for load, axes, in_loop in shared:
        nbytes = float(exact(_bytes(load), env))
        reads = nbytes * trips if in_loop else np.full(trips.shape, nbytes)
        keys = l2.task_keys(extents, axes)
        if in_loop and l2.disjoint(keys, starts, stops):
            keys = np.arange(keys.size)  # split-KV: each part reads its own blocks
        share = room / len(shared)
        out[load.src] = l2.hit_fraction(keys[run], reads[run], dim, share)
    return out


def _ranges(
    model: KernelModel, env: Mapping[str, Any], extents: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """The KV loop's [start, stop) of every task, in grid order."""
    fn = batch({"a": model.loop.start, "b": model.loop.stop})
    values = dict(env)
    for axis, (name, ext) in enumerate(zip(model.grid.vars, extents)):
        shape = [1] * len(extents)
        shape[axis] = ext
        values[name] = np.arange(ext).reshape(shape)
    got = fn(values)
    return tuple(  # type: ignore[return-value]
        np.broadcast_to(np.asarray(got[k], dtype=np.float64), extents).reshape(-1)
        for k in ("a", "b")
    )


def traffic(
    model: KernelModel, env: Mapping[str, Any], timer: Timer, trips: Any
) -> tuple[int, int]:
    """(HBM bytes, L2 bytes) of the whole kernel."""
    iters, tasks = float(trips.sum()), float(trips.size)
    hbm = l2b = 0.0
    for load, _, in_loop in model._loads:
        total = float(exact(_bytes(load), env)) * (iters if in_loop else tasks)
        hit = timer.hits.get(load.src, 0.0)
        hbm, l2b = hbm + total * (1 - hit), l2b + total * hit
    for steps, count in ((model.body, iters), (model.before + model.after, tasks)):
        for s in steps:
            n = timer.numbers(s.work)
            if s.kind == "store":
                hbm += n["mte3_bytes"] * count
            elif s.kind in ("ws_write", "ws_read"):
                l2b += n["ws_bytes"] * count
    return int(round(hbm)), int(round(l2b))


def _bytes(load: ir.Load) -> Any:
    t = load.result.type
    return sympy.Mul(*t.shape) * t.dtype.itemsize  # type: ignore[union-attr]
