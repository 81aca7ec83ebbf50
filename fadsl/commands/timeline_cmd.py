"""``fadsl timeline``: the modelled pipeline schedule of one task, as a log and a picture.

Prints the per-iteration work, then every event of the task's own code and of its first
KV iterations (engine, start, end, how long the engine waited and for what), then the
task's modelled time and steady iteration period, how busy each engine is, the kernel
time and TFLOPS this schedule gives over the cores (fadsl/perf/kernel.py), HBM and L2
traffic, and the closed forms as labelled bounds. ``-o picture.svg`` (or ``.png``, with
matplotlib) draws the Gantt chart. Every figure is MODELLED (docs/cost-model.md).
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from fadsl.commands import common, flags

if TYPE_CHECKING:
    from fadsl.driver.binding import Binding
    from fadsl.perf.kernel import KernelTime
    from fadsl.target import Target
    from fadsl.perf.timeline import Timeline


def add_arguments(p: argparse.ArgumentParser) -> None:
    common.add_kernel_args(p)
    common.add_target_arg(p)
    p.add_argument(
        "-o",
        "--output",
        metavar="PICTURE",
        help="write the Gantt chart: .svg (no dependency) or .png (matplotlib)",
    )
    p.add_argument(
        "--iterations",
        type=flags.integer,
        default=4,
        metavar="N",
        help="KV iterations to print and draw (default 4; the schedule "
        "always covers the whole task)",
    )


def main(args: argparse.Namespace) -> int:
    from fadsl.errors import UsageError
    from fadsl.target import resolve
    from fadsl.perf.timeline import build

    if args.iterations < 1:
        raise UsageError(f"--iterations {args.iterations}: give a positive number")
    kind = _picture_kind(args.output)
    target = resolve(args.target, args.target_file)
    binding = common.build(args)
    tl = build(binding.kernel, target, binding.model_env())
    title = _title(binding, target)
    print(report(tl, title, args.iterations))
    assumed = binding.model_assumption()
    if assumed:
        print(f"the model assumes {assumed}")
    if kind is not None:
        _draw(tl, title, args.iterations, args.output, kind)
        print(f"wrote {args.output}")
    return 0


def _picture_kind(path: str | None) -> str | None:
    from fadsl.errors import UsageError

    if path is None:
        return None
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".svg", ".png"):
        raise UsageError(f"-o {path}: the picture must be .svg or .png")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or os.path.isdir(path):
        raise UsageError(
            f"-o {path}: "
            + ("is a folder" if os.path.isdir(path) else f"no folder {folder}"),
            hint="give the path of a picture file in an existing folder",
        )
    return ext[1:]


def _draw(tl: Timeline, title: str, iterations: int, path: str, kind: str) -> None:
    from fadsl.perf import timeline_draw

    if kind == "png":
        timeline_draw.png(tl, title, iterations, path)
        return
    text = timeline_draw.svg(tl, title, iterations)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _title(binding: Binding, target: Target) -> str:
    shape = ", ".join(f"{k}={v}" for k, v in binding.shape.items())
    consts = " ".join(f"{k}={v}" for k, v in sorted(binding.consts.items()))
    return f"{binding.kernel.name} on {target.name} [{shape}] {consts}"


def report(tl: Timeline, title: str, iterations: int) -> str:
    """The log: header, per-iteration work, events, summary. Times in microseconds."""
    from fadsl.perf.timeline_draw import shown

    point = ", ".join(f"{k}={v}" for k, v in tl.task.items())
    w = tl.per_iteration
    lines = [
        title,
        f"one task (grid point {point}) on one core of {tl.block_dim}: "
        f"{tl.iterations} KV iterations, stages = {tl.stages}, ring = {tl.lead + 1}; every time is MODELLED "
        "(docs/cost-model.md), not measured",
        f"per iteration: MTE2 {w['mte2_bytes']:,} B, MTE3 {w['mte3_bytes']:,} B, "
        f"workspace {w['ws_bytes']:,} B, cube {w['cube_flops'] + w['cube_f32_flops']:,} "
        f"FLOP, vector {w['vector_ops']:,} element-ops + "
        f"{w['vector_transcendental']:,} transcendental",
        f"  {'iter':>4}  {'lane':8} {'event':46} {'start us':>9} {'end us':>9} "
        f"{'wait us':>8}  waited for",
    ]
    for e in shown(tl, iterations):
        j = "-" if e.iteration is None else str(e.iteration)
        lines.append(
            f"  {j:>4}  {e.lane:8} {e.name[:46]:46} {e.start * 1e6:9.3f} "
            f"{e.end * 1e6:9.3f} {e.wait * 1e6:8.3f}  {e.waited_for}"
        )
    if iterations < tl.iterations:
        lines.append(
            f"  ... iterations {iterations}-{tl.iterations - 1} and the task's "
            f"tail not shown (--iterations {tl.iterations} shows them)"
        )
    lines += _summary(tl)
    return "\n".join(lines)


def _summary(tl: Timeline) -> list[str]:
    busy = ", ".join(
        f"{lane} {100 * tl.busy(lane):.0f}%"
        for lane in dict.fromkeys(e.lane for e in tl.events)
    )
    return [
        f"task: {tl.makespan * 1e6:.3f} us; steady iteration period "
        f"{tl.period() * 1e6:.3f} us",
        f"engines busy: {busy}",
    ] + kernel_lines(tl.kernel)


def kernel_lines(kt: KernelTime) -> list[str]:
    """The headline (the schedule dealt over the cores), then the closed-form bounds."""
    est = kt.bounds
    hits = ", ".join(f"{k} {100 * v:.0f}%" for k, v in kt.hits.items()) or "none"
    return [
        f"kernel, MODELLED from this schedule: {kt.time_s * 1e3:.3f} ms, "
        f"{kt.tflops:.1f} TFLOPS = launch {kt.launch_s * 1e6:.1f} us + "
        f"{kt.busiest_tasks} task(s) on the busiest core ({kt.tasks} tasks on "
        f"blockDim {kt.block_dim}: {kt.rounds} round(s), {kt.tail_tasks} in the last)"
        + (
            f" - {kt.handover_s * 1e6:.1f} us where its tasks overlap the one before"
            if kt.handover_s
            else ""
        )
        + (
            f" + atomic_add's zeroing and cast {kt.atomic_phase_s * 1e6:.1f} us"
            if kt.atomic_phase_s
            else ""
        ),
        f"traffic, MODELLED: HBM {kt.hbm_bytes / 1e6:.1f} MB against a lower bound of "
        f"{kt.hbm_lower_bound / 1e6:.1f} MB ({kt.hbm_ratio:.1f}x); L2 {kt.l2_bytes / 1e6:.1f}"
        f" MB (workspace {kt.workspace_bytes / 1e6:.1f} MB each way); L2 hits: {hits}",
        f"bounds, MODELLED, not the schedule: lower {kt.lower_bound_s * 1e3:.3f} ms (every KV "
        f"iteration at the pace of the busiest engine, {kt.bound_engine}: "
        f"{_us(kt.overlapped_iteration_s)} us; {_us(kt.serial_iteration_s)} us with "
        f"nothing overlapped); closed form with merged units: "
        f"{est.time_overlap_s * 1e3:.3f} ms overlapped, "
        f"{est.time_serial_s * 1e3:.3f} ms serial",
    ]


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.3f}"
