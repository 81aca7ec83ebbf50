"""The timed record as a Chrome trace-event JSON (opens in Perfetto and
chrome://tracing): one process per core (``AIC0``, ``AIV0`` ...), one thread per pipe,
a complete event (``ph: "X"``) per executed call and one per wait that held a pipe
idle, timestamps in microseconds; metadata events (``ph: "M"``) name and order them.
The format: Trace Event Format (Google, "JSON Array/Object Format", ``traceEvents``).
"""

from __future__ import annotations

import json
from typing import Any

from fadsl.perf.timer.engine import Timing
from fadsl.perf.timer.instr import PIPES

LAUNCH_PID = 0


def core_order(name: str) -> tuple[int, int]:
    kind = name.rstrip("0123456789")
    return (0 if kind == "AIC" else 1, int(name[len(kind) :] or 0))


def events(tm: Timing, title: str) -> list[dict[str, Any]]:
    us = 1e6 / tm.clock
    out: list[dict[str, Any]] = [
        _meta(LAUNCH_PID, 0, "process_name", f"{title} (MODELLED)"),
        _meta(LAUNCH_PID, 0, "process_sort_index", 0),
        _meta(LAUNCH_PID, 0, "thread_name", "launch"),
        {
            "name": "launch",
            "cat": "launch",
            "ph": "X",
            "ts": 0.0,
            "dur": tm.launch * us,
            "pid": LAUNCH_PID,
            "tid": 0,
        },
    ]
    for n, core in enumerate(sorted(tm.placed, key=core_order), start=1):
        out.append(_meta(n, 0, "process_name", core))
        out.append(_meta(n, 0, "process_sort_index", n))
        used = {p.instr.pipe for p in tm.placed[core]}
        for tid, pipe in enumerate(PIPES + ("ALL",), start=1):
            if pipe in used:
                out.append(_meta(n, tid, "thread_name", f"PIPE_{pipe}"))
                out.append(_meta(n, tid, "thread_sort_index", tid))
        tids = {pipe: tid for tid, pipe in enumerate(PIPES + ("ALL",), start=1)}
        for p in tm.placed[core]:
            i = p.instr
            tid = tids.get(i.pipe, len(tids) + 1)
            if p.idle > 0 and p.why and p.why != "issue":
                out.append(
                    {
                        "name": f"wait: {p.why}",
                        "cat": "wait",
                        "ph": "X",
                        "ts": (tm.launch + p.start - p.idle) * us,
                        "dur": p.idle * us,
                        "pid": n,
                        "tid": tid,
                    }
                )
            out.append(
                {
                    "name": i.api,
                    "cat": "sync" if i.api.endswith(("Flag", "Barrier")) else "work",
                    "ph": "X",
                    "ts": (tm.launch + p.start) * us,
                    "dur": max(0.0, p.end - p.start) * us,
                    "pid": n,
                    "tid": tid,
                    "args": _args(p),
                }
            )
    return out


def _args(p: Any) -> dict[str, Any]:
    i = p.instr
    a: dict[str, Any] = {"seq": i.seq, "line": i.line}
    for key in ("elems", "repeats", "nbytes", "src", "dst", "event", "queue"):
        v = getattr(i, key)
        if v is not None:
            a[key] = v
    if i.m is not None:
        a["mkn"] = f"{i.m}x{i.k}x{i.n}"
    if p.hbm_bytes:
        a["hbm_bytes"] = p.hbm_bytes
    return a


def _meta(pid: int, tid: int, name: str, value: Any) -> dict[str, Any]:
    key = "sort_index" if name.endswith("sort_index") else "name"
    return {"name": name, "ph": "M", "pid": pid, "tid": tid, "args": {key: value}}


def write(path: str, tm: Timing, title: str) -> None:
    doc = {
        "traceEvents": events(tm, title),
        "displayTimeUnit": "ns",
        "otherData": {"modelled": True, "source": "fadsl timer (fadsl/perf/timer/)"},
    }
    with open(path, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
