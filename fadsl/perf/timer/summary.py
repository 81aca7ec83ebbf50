"""Per-pipe figures of a timed record: how busy each pipe of each kind of core was,
what it waited on, and which source lines cost it most (MODELLED)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from fadsl.perf.timer.engine import Timing
from fadsl.perf.timer.instr import PIPES


@dataclass
class PipeFigures:
    kind: str
    pipe: str
    cores: int = 0
    calls: int = 0
    busy_us: float = 0.0
    """Summed over the cores of this kind."""
    waits_us: Counter[str] = field(default_factory=Counter)
    by_call: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Busy microseconds per (call, where: ``line`` of the kernel or ``file:line``)."""
    span_us: float = 0.0
    """Summed over the cores of this kind: each core's own span (its first call to
    its last result)."""

    @property
    def busy_pct(self) -> float:
        return 100.0 * self.busy_us / self.span_us if self.span_us else 0.0


def figures(tm: Timing) -> list[PipeFigures]:
    us = 1e6 / tm.clock
    table: dict[tuple[str, str], PipeFigures] = {}
    cores: dict[str, set[str]] = defaultdict(set)
    spans: dict[str, float] = defaultdict(float)
    for core, placed in tm.placed.items():
        kind = core.rstrip("0123456789")
        cores[kind].add(core)
        if placed:
            first = min(p.start - p.idle for p in placed)
            spans[kind] += (max(max(p.done, p.end) for p in placed) - first) * us
        for p in placed:
            key = (kind, p.instr.pipe)
            f = table.setdefault(key, PipeFigures(kind, p.instr.pipe))
            f.calls += 1
            busy = (p.end - p.start) * us
            f.busy_us += busy
            if busy > 0:
                f.by_call[(p.instr.api, where(p.instr))] += busy
            if p.idle > 0 and p.why:
                f.waits_us[p.why] += p.idle * us
    for core, cycles in tm.issue.items():  # the scalar's issue work is its busy time
        kind = core.rstrip("0123456789")
        f = table.setdefault((kind, "S"), PipeFigures(kind, "S"))
        f.busy_us += cycles * us
        if cycles:
            f.by_call[("issue", "all")] += cycles * us
    for (kind, _), f in table.items():
        f.cores = len(cores[kind])
        f.span_us = spans[kind]
    order = {p: n for n, p in enumerate(PIPES + ("ALL",))}
    return sorted(table.values(), key=lambda f: (f.kind, order.get(f.pipe, 99)))


def where(i: object) -> str:
    """``line`` in the generated kernel, or ``file:line`` inside a helper header."""
    f = getattr(i, "file", None)
    line = getattr(i, "line", 0)
    return f"{f}:{line}" if f and not f.endswith("_kernel.cpp") else str(line)


def text(tm: Timing, top: int = 4) -> list[str]:
    us = 1e6 / tm.clock
    out = [
        f"kernel, MODELLED by the timer: {tm.time_s * 1e6:.2f} us = launch "
        f"{tm.launch * us:.2f} us + {tm.span * us:.2f} us of the cores; "
        f"GM reads {tm.gm_read_bytes / 1e6:.1f} MB, from HBM {tm.hbm_bytes / 1e6:.1f} MB",
        "per pipe (mean over the cores of a kind): busy %, calls per core, "
        "waits (us per core), costliest calls (api@line: us per core)",
    ]
    for f in figures(tm):
        n = max(1, f.cores)
        waits = ", ".join(f"{w} {v / n:.2f}" for w, v in f.waits_us.most_common(3))
        costly = ", ".join(
            f"{api}@{line} {v / n:.2f}" for (api, line), v in f.by_call.most_common(top)
        )
        out.append(
            f"  {f.kind} PIPE_{f.pipe:<5} busy {f.busy_pct:5.1f}%  calls {f.calls / n:8.0f}"
            + (f"  waits: {waits}" if waits else "")
            + (f"\n      costliest: {costly}" if costly else "")
        )
    return out


def as_dict(tm: Timing) -> dict[str, object]:
    us = 1e6 / tm.clock
    return {
        "modelled": True,
        "time_us": tm.time_s * 1e6,
        "launch_us": tm.launch * us,
        "span_us": tm.span * us,
        "gm_read_bytes": tm.gm_read_bytes,
        "hbm_bytes": tm.hbm_bytes,
        "pipes": [
            {
                "core": f.kind,
                "pipe": f.pipe,
                "cores": f.cores,
                "calls": f.calls,
                "busy_pct": round(f.busy_pct, 2),
                "busy_us_per_core": f.busy_us / max(1, f.cores),
                "waits_us_per_core": {
                    k: v / max(1, f.cores) for k, v in f.waits_us.items()
                },
                "costliest": [
                    {"api": api, "line": line, "us_per_core": v / max(1, f.cores)}
                    for (api, line), v in f.by_call.most_common(8)
                ],
            }
            for f in figures(tm)
        ],
    }
