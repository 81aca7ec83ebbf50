"""Instruction counts: what the cost model charges per KV iteration, and what the
executed-instruction record shows the generated kernel issuing, in the same classes,
so the two can be compared (``bench/timer_agreement.py``, docs/cost-model.md,
"Counts").

Classes (per KV iteration, per AI core: the cube core's calls and ONE vector
core's):

- ``vector``: vector calls (every call on PIPE_V but barriers and flags);
- ``PipeBarrier``: PipeBarrier<PIPE_V>;
- ``LoadData``, ``Mmad``, ``Fixpipe``;
- ``GM copy``: DataCopy / DataCopyPad to or from GM (either core);
- ``cross-core flag``: CrossCoreSetFlag (either core).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

CLASSES = (
    "vector",
    "PipeBarrier",
    "LoadData",
    "Mmad",
    "Fixpipe",
    "GM copy",
    "cross-core flag",
)
_SYNC = {"SetFlag", "WaitFlag", "PipeBarrier", "CrossCoreSetFlag", "CrossCoreWaitFlag"}


def class_of(api: str, pipe: str, src: str | None, dst: str | None) -> str | None:
    if api == "PipeBarrier":
        return "PipeBarrier" if pipe == "V" else None
    if api == "CrossCoreSetFlag":
        return "cross-core flag"
    if api in ("LoadData", "Mmad", "Fixpipe"):
        return api
    if api in ("DataCopy", "DataCopyPad") and "GM" in (src, dst):
        return "GM copy"
    if pipe == "V" and api not in _SYNC:
        return "vector"
    return None


def executed(rows: Iterable[Any], iterations: int) -> dict[str, float]:
    """Per KV iteration: the record's calls of each class, summed over the cores of
    the launch and divided by ``iterations`` (KV iterations summed over the tasks);
    a vector core's calls count half (two AIVs share each task), so the figure is one
    AI core's: its cube core and one of its vector cores. Calls outside the KV loop
    (a task's own setup and finish) are spread over its iterations."""
    n: Counter[str] = Counter()
    for r in rows:
        c = class_of(r.api, r.pipe or "", r.src, r.dst)
        if c is not None:
            n[c] += 0.5 if r.core.startswith("AIV") else 1
    return {c: n[c] / max(1, iterations) for c in CLASSES}


def modelled(model: Any, env: Mapping[str, Any]) -> dict[str, float]:
    """Per KV iteration, averaged over the kernel's iterations as ``executed`` is:
    every task's calls per iteration at its own grid point (a causal select runs
    only in the blocks crossing the diagonal, a split-KV part's tail select only in
    its own tail block: ``perf/guard_share.py``), weighted by its trip count. The
    calls are the ones the model charges (``perf/kernel.py``'s steps: the vector
    calls and PipeBarriers of each op's instruction form and the emitter's barrier
    rule, the cube helpers' LoadData (``perf/step_calls.py``), one Mmad per CUBE
    step, one Fixpipe per FIXPIPE write, one GM copy per load, workspace transfer
    and store, one cross-core flag per workspace hand-over)."""
    from fadsl.perf.kernel import at_point
    from fadsl.plan.resources.footprint_eval import exact

    m = model.at(env)
    env = m.scaled(env)
    base = m.timer(env)
    extents = tuple(int(exact(e, env)) for e in m.grid.extents)
    trips = m.cost.trips(env, extents).reshape(-1)
    out = dict.fromkeys(CLASSES, 0.0)
    for task, n in enumerate(trips):
        if n <= 0:
            continue
        idx = np.unravel_index(task, extents)
        point = {v: int(x) for v, x in zip(m.grid.vars, idx)}
        at = _per_iteration(m, at_point(base, env, point))
        for c in CLASSES:
            out[c] += at[c] * float(n)
    total = float(max(1, trips[trips > 0].sum()))
    return {c: out[c] / total for c in CLASSES}


def _per_iteration(m: Any, timer: Any) -> dict[str, float]:
    """The calls of one KV iteration at ``timer``'s grid point."""
    chunks, steps = timer.chunked
    out = dict.fromkeys(CLASSES, 0.0)
    written = {s.name.split(" [")[0] for s in m.body if s.kind == "ws_write"}
    out["cross-core flag"] = float(len(written))  # one flag per value handed over
    for s in m.body:
        times = chunks if id(s) in steps else 1
        n = timer.numbers(s.work)
        if s.kind == "vector":
            c = timer.vector_calls(s)
            out["vector"] += c.vector
            out["PipeBarrier"] += c.barriers
        elif s.kind == "mte1":
            out["LoadData"] += timer.load_data(s, n)
        elif s.kind == "dot":
            out["Mmad"] += 1
        elif s.kind == "ws_write":
            out["Fixpipe" if s.lane == "FIXPIPE" else "GM copy"] += times
        elif s.kind in ("load", "store", "ws_read"):
            out["GM copy"] += times
            if s.kind == "load":  # the pad's Duplicate (step_calls.pad_fill)
                c = timer.pad_calls(s)
                out["vector"] += c.vector
                out["PipeBarrier"] += c.barriers
    return out
