"""The files ``fadsl sim --profile`` and ``fd.sim(..., profile=...)`` write: the
executed-instruction record timed with the cost table (MODELLED).

- ``trace.json``: Chrome trace-event JSON (Perfetto, chrome://tracing), a track per
  core and pipe (``perf/timer/trace.py``);
- ``profile.txt`` / ``profile.json``: per pipe, busy %, what it waited on and its
  costliest calls by source line (``perf/timer/summary.py``);
- ``profile.svg``: the pipes of block 0's cores (one AIC, its AIVs) as a Gantt chart.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any
from xml.sax.saxutils import escape

from fadsl.perf.costs import CostTable
from fadsl.perf.timer import summary, trace
from fadsl.perf.timer.engine import Timing, time_record
from fadsl.perf.timer.instr import PIPES, from_rows

FILES = ("trace.json", "profile.txt", "profile.json", "profile.svg")
COLOURS = {
    "S": "#bab0ac", "MTE2": "#4e79a7", "MTE1": "#9c755f", "M": "#f28e2b",
    "FIX": "#b07aa1", "V": "#59a14f", "MTE3": "#e15759", "ALL": "#333333",
}  # fmt: skip


def write_profile(
    folder: str, rows: Iterable[Any], table: CostTable, title: str
) -> Timing:
    """Time the record's ``rows`` and write the profile files into ``folder``."""
    tm = time_record(from_rows(rows), table)
    trace.write(os.path.join(folder, "trace.json"), tm, title)
    lines = [f"{title}: the executed instructions timed pipe by pipe (MODELLED)"]
    lines += summary.text(tm)
    with open(os.path.join(folder, "profile.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(folder, "profile.json"), "w") as f:
        json.dump(summary.as_dict(tm), f, indent=1)
    with open(os.path.join(folder, "profile.svg"), "w") as f:
        f.write(svg(tm, title))
    return tm


def svg(tm: Timing, title: str, width: int = 1200) -> str:
    """Block 0's cores, one row per pipe used, every call a bar (tooltip: call, line)."""
    cores = sorted(
        (c for c, placed in tm.placed.items() if placed and placed[0].instr.block == 0),
        key=trace.core_order,
    )
    rows = [
        (c, p)
        for c in cores
        for p in PIPES + ("ALL",)
        if any(x.instr.pipe == p for x in tm.placed[c])
    ]
    us = 1e6 / tm.clock
    span = max(tm.span, 1.0)
    left, top, row_h = 110, 40, 18
    scale = (width - left - 20) / span
    height = top + row_h * len(rows) + 30
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="8" y="18" font-size="13">{escape(title)}: block 0, '
        f"{tm.span * us:.1f} us after the launch (MODELLED)</text>",
    ]
    for r, (core, pipe) in enumerate(rows):
        y = top + r * row_h
        out.append(f'<text x="8" y="{y + 12}">{core} PIPE_{pipe}</text>')
        for p in tm.placed[core]:
            if p.instr.pipe != pipe or p.end <= p.start:
                continue
            x = left + p.start * scale
            w = max(0.5, (p.end - p.start) * scale)
            tip = f"{p.instr.api} line {p.instr.line}: {(p.end - p.start) * us:.3f} us"
            out.append(
                f'<rect x="{x:.1f}" y="{y + 2}" width="{w:.1f}" height="{row_h - 4}" '
                f'fill="{COLOURS.get(pipe, "#888")}"><title>{escape(tip)}</title></rect>'
            )
    out.append("</svg>")
    return "\n".join(out)
