"""``fadsl tune``: search tile sizes, prune with the resource checker, rank by the cost model.

Enumerates ``block_q`` and ``block_kv`` over multiples of 16 up to 512, ``stages`` in
(1, 2), ``kv_splits`` (split-KV decode, ``fadsl/lib/paged.py``) in 1, 2, 3, 4, 6, 8
and ``v_cores`` (which cores of a paged decode read V) in 1, 2 -- only constants the
kernel has, and not those fixed with ``--set``. The IR is built once per value of
``stages``, ``kv_splits`` and ``v_cores`` (they change its structure; block sizes
are symbols in it). The ranking is the one planning and modelling every configuration
would give: ``commands/tune_rank.py`` drops those whose footprint floor overflows a
memory, then plans exactly (as ``fadsl check`` does) and models (the schedule of
fadsl/perf/kernel.py, docs/cost-model.md) the rest in the order of a lower bound of
their modelled time (``commands/tune_bound.py``) until no configuration left can
enter the ranking; the fit check and the model share their plans
(``plan/search/memo.py``). ``--apply`` writes the winner as the new defaults
of the kernel's parameters (fadsl/commands/apply_defaults.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fadsl.commands import common, flags, tune_rank

if TYPE_CHECKING:
    from fadsl.driver.binding import Chosen
    from fadsl.driver.lower import Lowered
    from fadsl.perf.kernel import KernelTime
    from fadsl.target import Target

BLOCK_NAMES = ("block_q", "block_kv")
BLOCK_VALUES = tuple(range(16, 513, 16))
STAGE_VALUES = (1, 2)
SPLIT_VALUES = (1, 2, 3, 4, 6, 8)
V_CORES = (1, 2)
"""A paged decode's V read by the cube or by the two vector cores (fadsl/lib/paged.py)."""
STRUCTURAL = {"stages": STAGE_VALUES, "kv_splits": SPLIT_VALUES, "v_cores": V_CORES}
"""Constants that change the IR's structure: the IR is built once per value."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    common.add_kernel_args(p)
    common.add_target_arg(p)
    p.add_argument(
        "--top",
        type=flags.integer,
        default=10,
        metavar="N",
        help="how many configurations to show (default 10)",
    )
    p.add_argument(
        "--apply",
        action="store_true",
        help="write the best configuration as the kernel's new defaults",
    )
    p.add_argument("--json", action="store_true", help="print the ranking as JSON")


@dataclass(frozen=True)
class Candidate:
    """One feasible configuration with its modelled cost and checked footprint."""

    values: dict[str, int]
    estimate: KernelTime
    percent: dict[str, float]
    """Per memory space: used / capacity in percent (exact re-check)."""


@dataclass
class TuneResult:
    ranked: list[Candidate]
    evaluated: int
    feasible: int
    seconds: float
    tuned: tuple[str, ...]
    planned: int = 0
    """Configurations planned and checked exactly, as ``fadsl check`` plans them."""
    bounded: int = 0
    """Configurations a footprint floor dropped without a plan (plan/search/floor.py)."""
    skipped: int = 0
    """Configurations not planned: the lower bound of their modelled time exceeds the
    ``top``-th best (commands/tune_bound.py). 0: ``feasible`` counts every one."""
    notes: list[str] = field(default_factory=list)
    unmodelled: int = 0
    """Configurations planned that fit but were not modelled: the lower bound of their
    modelled time at the row chunks of their plan exceeds the ``top``-th best."""


def main(args: argparse.Namespace) -> int:
    from fadsl.commands import apply_defaults
    from fadsl.driver.source import load_source, select
    from fadsl.target import resolve

    if args.top < 1:
        from fadsl.errors import UsageError

        raise UsageError(f"--top {args.top}: give a positive number of configurations")
    target = resolve(args.target, args.target_file)
    chosen = select(load_source(args.file), args.kernel)
    if args.apply:
        apply_defaults.refuse_unless_editable(
            args.file, chosen, BLOCK_NAMES + tuple(STRUCTURAL)
        )
    result = search(chosen, args, target, Progress(sys.stderr))
    if args.json:
        print(json.dumps(as_json(result, target), indent=2))
    else:
        print(table(result, target, args.top))
    if not result.ranked:
        from fadsl.errors import ResourceError

        raise ResourceError(
            f"no configuration of {', '.join(result.tuned)} fits " f"{target.name}",
            None,
            hint="run fadsl check with small block sizes to see the "
            "buffers that do not fit",
        )
    if args.apply:
        changed = apply_defaults.apply(args.file, chosen, result.ranked[0].values)
        print(
            f"applied to {args.file}: " + (", ".join(changed) or "already the defaults")
        )
    return 0


# ----------------------------------------------------------------------------
# The search
# ----------------------------------------------------------------------------


def search(
    chosen: Chosen,
    args: argparse.Namespace,
    target: Target,
    progress: Progress | None = None,
) -> TuneResult:
    """Every configuration of the tuned constants, feasible ones ranked by model time."""
    started = time.perf_counter()
    fixed = set(flags.parse_sets(getattr(args, "sets", []) or []))
    base = common.bind(chosen, args, target=target)
    _refuse_absurd_shape(base, args, target)
    consts = base.consts
    # a textual-IR kernel's loops carry their stages: only a .py kernel can change them
    names = BLOCK_NAMES + (tuple(STRUCTURAL) if base.kdef is not None else ())
    tuned = tuple(
        n
        for n in names
        if n in consts and n not in fixed and isinstance(consts[n], int)
    )
    shapes: list[dict[str, int]] = [{}]
    for n in (n for n in STRUCTURAL if n in tuned):
        shapes = [{**sh, n: v} for sh in shapes for v in STRUCTURAL[n]]
    grids = _block_grid(tuple(n for n in tuned if n not in STRUCTURAL))
    if base.kdef is not None:  # values the kernel refuses (a paged block of 1.5 pages)
        grids = [g for g in grids if base.kdef.allows(g)]
    total = len(grids) * len(shapes)
    if progress:
        progress.start(total, tuned)
    from fadsl.plan.search.memo import sharing_plans

    with sharing_plans():
        structures = [
            _structure(chosen, args, target, shape, progress, len(grids))
            for shape in shapes
        ]
        if progress:
            progress.phase(f"ranking: the best {args.top} by modelled time")
        found = tune_rank.rank(structures, grids, args.top, progress)
    if progress:
        progress.finish(time.perf_counter() - started)
    assumed = base.model_assumption()
    return TuneResult(
        [
            Candidate(
                f.values, f.estimate, {s.space: s.percent for s in f.report.spaces}
            )
            for f in found.best
        ],
        total,
        found.fit,
        time.perf_counter() - started,
        tuned,
        found.planned,
        found.bounded,
        found.skipped,
        found.notes + ([f"the model assumes {assumed}"] if assumed else []),
        found.unmodelled,
    )


def _refuse_absurd_shape(base: Any, args: argparse.Namespace, target: Target) -> None:
    """A shape whose tensors do not fit the device fails here, before any planning:
    the model would evaluate every task of its grid, at each configuration."""
    from fadsl.plan.resources.device_memory import check_device_memory

    text = getattr(args, "shape", None)
    loc = flags.arg_loc("--shape", text, 0, len(text)) if text else None
    check_device_memory(base.kernel, base.env(), target, loc)


def _block_grid(names: tuple[str, ...]) -> list[dict[str, int]]:
    grid: list[dict[str, int]] = [{}]
    for n in names:
        grid = [{**g, n: v} for g in grid for v in BLOCK_VALUES]
    return grid


def _lower(
    chosen: Chosen, args: argparse.Namespace, target: Target, shape: dict[str, int]
) -> Lowered:
    """The kernel at the structural constants ``shape`` through the passes (planned
    per configuration later)."""
    from fadsl.driver.lower import lower

    sets = list(getattr(args, "sets", []) or [])
    sets += [f"{n}={v}" for n, v in shape.items()]
    ns = argparse.Namespace(**{**vars(args), "sets": sets})
    return lower(common.bind(chosen, ns, target=target), plan=False)


def _structure(
    chosen: Chosen,
    args: argparse.Namespace,
    target: Target,
    shape: dict[str, int],
    progress: Progress | None,
    count: int,
) -> tune_rank.Structure:
    """The kernel at the structural constants ``shape``, its model and time bound."""
    from fadsl.commands.tune_bound import TimeBound
    from fadsl.perf.kernel import KernelModel

    if progress and shape:
        progress.phase(_structure_text(shape, count))
    low = _lower(chosen, args, target, shape)
    model = KernelModel(low.binding.kernel, target)
    return tune_rank.Structure(
        shape, low, low.binding.model_env(), model, TimeBound(model)
    )


# ----------------------------------------------------------------------------
# Progress and output
# ----------------------------------------------------------------------------


def _structure_text(shape: dict[str, int], count: int) -> str:
    values = ", ".join(f"{k}={v}" for k, v in shape.items())
    return f"{values}: lowering, screening {count} block sizes"


class Progress:
    """tune's progress through fadsl/progress.py (the ``fadsl.tune`` logger, and the
    stream): a line per phase, and a bar of configurations screened, redrawn in place
    on a terminal (elsewhere only a heartbeat line now and then)."""

    WIDTH = 30

    def __init__(self, stream: Any = None) -> None:
        from fadsl.progress import reporter

        self.report = reporter("tune", stream)
        self.done = 0
        self.total = 0
        self._shown = -1

    def start(self, total: int, tuned: tuple[str, ...] = ()) -> None:
        self.total = max(total, 1)
        names = f" of {', '.join(tuned)}" if tuned else ""
        self.report.phase(f"screening {total} configurations{names}")

    def phase(self, text: str) -> None:
        self.report.phase(text)

    def step(self, n: int = 1) -> None:
        self.done += n
        if self.done * 100 // self.total != self._shown:
            self._shown = self.done * 100 // self.total
            self.report.tick(self._bar())

    def restart(self) -> None:
        """A bound failed: the search starts again (``tune_rank.rank``)."""
        self.done = 0
        self.report.phase("a bound failed its check: searching again without it")

    def finish(self, seconds: float | None = None) -> None:
        self.done = self.total
        took = f" in {seconds:.1f} s" if seconds is not None else ""
        self.report.phase(f"{self._bar()}, done{took}")

    def _bar(self) -> str:
        filled = self.WIDTH * self.done // self.total
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        return f"[{bar}] {self.done}/{self.total} configurations"


def table(result: TuneResult, target: Target, top: int) -> str:
    head = (
        ("rank",)
        + result.tuned
        + ("time", "TFLOPS", "bound", "HBM/min", "UB", "L1", "L0A", "L0B", "L0C")
    )
    rows = [head]
    for i, c in enumerate(result.ranked[:top], 1):
        e = c.estimate
        rows.append(
            (str(i),)
            + tuple(str(c.values[n]) for n in result.tuned)
            + (
                f"{e.time_s * 1e3:.3f} ms",
                f"{e.tflops:.1f}",
                e.bound_engine,
                f"{e.hbm_ratio:.1f}x",
            )
            + tuple(f"{c.percent[s]:.0f}%" for s in ("UB", "L1", "L0A", "L0B", "L0C"))
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    lines.append("")
    lines += counts_text(result, target)
    lines.append(
        "time, TFLOPS and HBM traffic are MODELLED from each configuration's "
        "schedule (fadsl/perf/kernel.py, docs/cost-model.md), not measured; bound: "
        "the engine with the most work per KV iteration; many rates are UNVERIFIED or "
        "assumptions"
    )
    lines += result.notes
    return "\n".join(lines)


def counts_text(result: TuneResult, target: Target) -> list[str]:
    """How the configurations were decided: the counts, each planned or not."""
    fit = f"{result.feasible} fit {target.name}"
    if result.skipped:
        fit = f"{result.feasible} of those planned fit {target.name}"
    out = [
        f"{result.evaluated} configurations evaluated, {fit}, in {result.seconds:.2f} s",
        f"{result.planned} planned exactly (as fadsl check plans them); without a "
        f"plan: {result.bounded} whose footprint floor overflows a memory, "
        f"{result.skipped} whose modelled time's lower bound exceeds the "
        f"{len(result.ranked)}th best",
    ]
    if result.unmodelled:
        out.append(
            f"{result.feasible - result.unmodelled} of those that fit modelled; "
            f"{result.unmodelled} not: their lower bound at the row chunks of their "
            f"plan exceeds the {len(result.ranked)}th best too"
        )
    return out


def as_json(result: TuneResult, target: Target) -> dict[str, Any]:
    return {
        "target": target.name,
        "tuned": list(result.tuned),
        "evaluated": result.evaluated,
        "feasible": result.feasible,
        "feasible_counts_all": result.skipped == 0,
        "planned_exactly": result.planned,
        "ruled_out_by_floor": result.bounded,
        "ruled_out_by_time_bound": result.skipped,
        "modelled_configurations": result.feasible - result.unmodelled,
        "not_modelled_by_planned_bound": result.unmodelled,
        "seconds": round(result.seconds, 3),
        "modelled": True,
        "notes": list(result.notes),
        "ranked": [
            {"values": c.values, "percent": c.percent, "estimate": c.estimate.as_dict()}
            for c in result.ranked
        ],
    }
