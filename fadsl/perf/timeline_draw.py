"""Gantt pictures of a ``Timeline``: SVG written directly, PNG through matplotlib.

One row per engine (on split chips the cube core's AIC MTE2, MTE1, CUBE, FIXPIPE and a
vector core's AIV MTE2, VECTOR, AIV MTE3, SCALAR; fadsl/perf/engines.py), one bar
per event coloured by kind, iterations told apart by shade and labelled ``j0``, ``j1``
...; a bar's tooltip (SVG) names the event and its modelled times. The title says that
the times are modelled. matplotlib is optional (``pip install fadsl[plot]``).
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

from fadsl.errors import UsageError
from fadsl.perf.timeline import LANES, Event, Timeline

COLOURS = {
    "load": "#4e79a7",
    "dot": "#f28e2b",
    "vector": "#59a14f",
    "store": "#e15759",
    "ws_write": "#b07aa1",
    "ws_read": "#d4a6c8",
    "mte1": "#9c755f",
    "scalar": "#bab0ac",
}
_LEFT, _RIGHT, _TOP, _ROW, _GAP = 96, 24, 58, 30, 8


def shown(tl: Timeline, iterations: int) -> list[Event]:
    """The task's own code and its first ``iterations`` KV iterations (all: the tail too)."""
    whole = iterations >= tl.iterations
    first = next(
        (i for i, e in enumerate(tl.events) if e.iteration is not None), len(tl.events)
    )
    return [
        e
        for i, e in enumerate(tl.events)
        if (e.iteration is None and (whole or i < first))
        or (e.iteration is not None and e.iteration < iterations)
    ]


def lanes_used(tl: Timeline) -> list[str]:
    used = {e.lane for e in tl.events}
    return [lane for lane in LANES if lane in used]


def svg(tl: Timeline, title: str, iterations: int, width: int = 1100) -> str:
    """The picture as SVG text."""
    events = shown(tl, iterations)
    lanes = lanes_used(tl)
    span = max((e.end for e in events), default=1e-9) or 1e-9
    scale = (width - _LEFT - _RIGHT) / span
    height = _TOP + len(lanes) * (_ROW + _GAP) + 56
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{_LEFT}" y="20" font-size="13" font-weight="bold">'
        f"{escape(title)}</text>",
        f'<text x="{_LEFT}" y="38" fill="#555">MODELLED times (fadsl/perf/cost_model.py, '
        f"docs/cost-model.md), not measured; stages = {tl.stages}</text>",
    ]
    for row, lane in enumerate(lanes):
        y = _TOP + row * (_ROW + _GAP)
        out.append(
            f'<text x="{_LEFT - 8}" y="{y + _ROW / 2 + 4:.1f}" '
            f'text-anchor="end">{escape(lane)}</text>'
        )
        out.append(
            f'<rect x="{_LEFT}" y="{y}" width="{width - _LEFT - _RIGHT}" '
            f'height="{_ROW}" fill="#f4f4f4"/>'
        )
        out += [_bar(e, y, scale) for e in events if e.lane == lane]
    axis_y = _TOP + len(lanes) * (_ROW + _GAP)
    out += _axis(span, scale, axis_y)
    out += _legend(axis_y + 36)
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _bar(e: Event, y: int, scale: float) -> str:
    x, w = _LEFT + e.start * scale, max(0.5, (e.end - e.start) * scale)
    shade = "0.95" if (e.iteration or 0) % 2 == 0 else "0.6"
    tip = (
        f"{e.name}{'' if e.iteration is None else f' (iteration {e.iteration})'}: "
        f"{e.start * 1e6:.3f}-{e.end * 1e6:.3f} us, waited {e.wait * 1e6:.3f} us "
        f"for {e.waited_for}"
    )
    parts = [
        f'<rect x="{x:.2f}" y="{y + 3}" width="{w:.2f}" height="{_ROW - 6}" '
        f'fill="{COLOURS.get(e.kind, "#999")}" fill-opacity="{shade}" stroke="white" '
        f'stroke-width="0.5"><title>{escape(tip)}</title></rect>'
    ]
    label = "task" if e.iteration is None else f"j{e.iteration}"
    if w > 7 * len(label):
        parts.append(
            f'<text x="{x + w / 2:.2f}" y="{y + _ROW / 2 + 4}" fill="white" '
            f'text-anchor="middle">{label}</text>'
        )
    return "".join(parts)


def _axis(span: float, scale: float, y: int) -> list[str]:
    step = _nice_step(span * 1e6 / 8)
    out = [
        f'<line x1="{_LEFT}" y1="{y}" x2="{_LEFT + span * scale:.1f}" y2="{y}" '
        f'stroke="#333"/>'
    ]
    t = 0.0
    while t <= span * 1e6 + 1e-9:
        x = _LEFT + t * 1e-6 * scale
        out.append(
            f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="#333"/>'
        )
        out.append(f'<text x="{x:.1f}" y="{y + 16}" text-anchor="middle">{t:g}</text>')
        t += step
    out.append(f'<text x="{_LEFT - 8}" y="{y + 16}" text-anchor="end">us</text>')
    return out


def _nice_step(raw: float) -> float:
    if raw <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _legend(y: int) -> list[str]:
    out, x = [], _LEFT
    for kind, colour in COLOURS.items():
        out.append(
            f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{colour}"/>'
        )
        out.append(f'<text x="{x + 16}" y="{y}">{kind}</text>')
        x += 90
    out.append(
        f'<text x="{x}" y="{y}" fill="#555">light/dark: even/odd iteration</text>'
    )
    return out


def png(tl: Timeline, title: str, iterations: int, path: str) -> None:
    """The picture as PNG through matplotlib (the optional extra ``plot``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError(
            "writing PNG needs matplotlib, which is not installed",
            None,
            hint="pip install 'fadsl[plot]', or write SVG (-o picture.svg)",
        ) from None
    events, lanes = shown(tl, iterations), lanes_used(tl)
    fig, ax = plt.subplots(figsize=(12, 0.6 * len(lanes) + 1.6))
    for row, lane in enumerate(reversed(lanes)):
        for e in (e for e in events if e.lane == lane):
            alpha = 0.95 if (e.iteration or 0) % 2 == 0 else 0.6
            ax.broken_barh(
                [(e.start * 1e6, (e.end - e.start) * 1e6)],
                (row + 0.1, 0.8),
                facecolors=COLOURS.get(e.kind, "#999"),
                alpha=alpha,
            )
    ax.set_yticks([r + 0.5 for r in range(len(lanes))], list(reversed(lanes)))
    ax.set_xlabel("us (modelled)")
    ax.set_title(
        f"{title}\nMODELLED times, not measured; stages = {tl.stages}", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
