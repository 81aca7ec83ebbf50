"""A lower bound of a configuration's modelled time, without planning or scheduling it,
so that ``fadsl tune`` plans and models only the configurations that can still make
its ranking (branch and bound: ``tune_cmd._ranked``).

The modelled kernel (``perf/kernel.py``) schedules one task's engine steps
(``perf/timeline_schedule.py``). Its vector core runs its program in order: each KV
iteration starts with the loop control (a SCALAR step defining ``ROUND``), which waits
until the VECTOR engine has finished every step issued before it; a step starts after
the steps of its iteration that make its inputs. So from one loop control to the next
there is at least the loop control itself plus the longest chain of the iteration's
steps that hangs on it (through the inputs each reads) and ends on the vector engine:
the *chain*. A task of ``n`` iterations takes at least ``n`` chains, and the kernel
at least its launch plus the busiest core's tasks, each its overhead plus ``n``
chains (the model's own dealing of tasks to cores).

Each step's seconds in the chain are the least the model could charge it: the fewest
row chunks the planner can choose (``plan/search/chunks.py``: one where the whole rows
fit UB; a chunked step issues its ops once per chunk), every read served by L2,
and a step whose work depends on the task's grid point (a causal select on the blocks
crossing the diagonal) at the point where its work is least. The chain is taken from
the kernel as written and, when its L1 loads can be single-buffered
(``plan/memory/l1_fit.py``), from that kernel too, and the smaller is used.

Split chips only (910B, A3), where the vector core runs the loop control and the
vector steps: on a coupled chip (910A, 310P) one core runs the cube's steps in the same
program, the argument does not hold, and the bound is 0 (every configuration that
fits is modelled).

The search compares this bound with every modelled time it computes; one bound above
its configuration's modelled time (a change to the model this did not foresee) makes
the search model every configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fadsl.plan.search.chunks import LeastChunks

if TYPE_CHECKING:
    from fadsl.perf.kernel import KernelModel
    from fadsl.perf.timeline_schedule import Step

CHAIN_LANES = ("VECTOR", "SCALAR")
"""The engines the loop control waits for (``Scheduler._place``, a scalar step)."""


class TimeBound:
    """Lower bounds of ``KernelModel.estimate(env).time_s`` for one kernel."""

    def __init__(self, model: KernelModel) -> None:
        from fadsl.perf.kernel import KernelModel
        from fadsl.plan.memory.l1_fit import single_buffered

        self.models = [model]
        self.chains = [_chain(model) if model.target.split else None]
        single, notes = single_buffered(model.kernel)
        if notes and model.target.split:
            alt = KernelModel(single, model.target)
            chain = _chain(alt)
            if not _alike(model, self.chains[0], alt, chain):
                self.models.append(alt)
                self.chains.append(chain)
        self._work: dict[int, Any] = {}
        # the model plans (and chunks) the kernel as written or single-buffered,
        # whichever fits L1 (``KernelModel.at``): the fewer chunks of the two
        kernels = [model.kernel] + ([single] if notes else [])
        self.least = LeastChunks(kernels, model.target)

    def seconds(self, env: Mapping[str, Any], chunks: int | None = None) -> float:
        """A lower bound of the modelled seconds at ``env`` (0 when the kernel has no
        loop control to bound it by); ``chunks``: the row chunks the model uses there,
        when known (planned: ``tune_rank``), else the fewest it can use."""
        if all(c is None for c in self.chains):
            return 0.0  # a coupled chip: no loop control to bound by
        if chunks is None:
            chunks = self.least.least(env)
        return min(
            self._bound(m, chain, env, chunks)
            for m, chain in zip(self.models, self.chains)
        )

    def seconds_many(self, envs: list[Mapping[str, Any]]) -> list[float]:
        """``[seconds(e) for e in envs]``, the fewest chunks of all found at once
        (``LeastChunks.least_many``)."""
        if all(c is None for c in self.chains):
            return [0.0] * len(envs)
        chunks = self.least.least_many(envs)
        return [self.seconds(e, c) for e, c in zip(envs, chunks)]

    def pace(self, model: KernelModel, env: Mapping[str, Any]) -> float:
        """The model's own lower bound (``KernelTime.lower_bound_s`` without the
        atomic phases): launch plus the busiest core's tasks, each its overhead plus
        its KV iterations at the pace of the busiest engine, with ``model`` the
        planned variant at ``env`` (``KernelModel.at``: its L0 decisions, row chunks
        and L2 hits are the estimate's), without scheduling a task."""
        from fadsl.plan.resources.footprint_eval import exact

        scaled = model.scaled(env)
        timer = model.timer(scaled)
        lanes: dict[str, float] = {}
        for s in model.body:
            lanes[s.lane] = lanes.get(s.lane, 0.0) + timer.seconds(s)
        pace = max(lanes.values(), default=0.0)
        extents = tuple(int(exact(e, scaled)) for e in model.grid.extents)
        trips = model.cost.trips(scaled, extents).reshape(-1)
        e = timer.engines
        cores = model.dealt(scaled, extents, model.block_dim(scaled))[0]
        start, tasks = e.dispatched(e.task_s + pace * trips, cores)
        return float(start + tasks)

    def _bound(
        self, model: KernelModel, chain: Chain | None, env: Any, chunks: int
    ) -> float:
        from fadsl.perf.engines import Engines
        from fadsl.perf.timeline_steps import chunked_steps
        from fadsl.plan.resources.footprint_eval import exact

        if chain is None:
            return 0.0
        env = model.scaled(env)
        dim = model.block_dim(env)
        engines = Engines.of(model.target, dim)
        extents = tuple(int(exact(e, env)) for e in model.grid.extents)
        chunked = (chunks, chunked_steps(model.body) if chunks > 1 else frozenset())
        length = self._chain_seconds(model, chain, env, engines, extents, chunked)
        trips = model.cost.trips(env, extents).reshape(-1).astype(float)
        if trips.size == 0:
            return float(engines.launch_s)
        cores = model.dealt(env, extents, dim)[0]
        per_task = engines.task_s + trips * length
        start, tasks = engines.dispatched(per_task, cores)
        return float(start + tasks)

    def _chain_seconds(
        self,
        model: KernelModel,
        chain: Chain,
        env: dict[str, Any],
        engines: Any,
        extents: tuple[int, ...],
        chunked: tuple[int, frozenset[int]],
    ) -> float:
        """The longest path from the loop control to a VECTOR or SCALAR step, then
        through the vector steps issued after that step; the chunked region's steps
        charged once per chunk of the fewest the model can use (``chunked``)."""
        from fadsl.perf.timeline_schedule import Timer

        hits = {s.src: 1.0 for s in model.body if s.src}
        plain = Timer(engines, env, hits)
        plain.chunked = chunked

        def seconds(step: Step) -> float:
            point = self._least_point(model, step, env, extents)
            if point is None:
                return plain.seconds(step)
            timer = Timer(engines, {**env, **point}, hits)
            timer.chunked = chunked
            return timer.seconds(step)

        ends: list[float] = []
        for step, inputs in chain.steps:
            start = max((ends[i] for i in inputs), default=0.0)
            ends.append(start + seconds(step))
        # the vector engine then runs the vector steps issued after each, in order
        after = [seconds(s) for s in chain.after]
        tails = [sum(after[k:]) for k in range(len(after) + 1)]
        return max(
            (
                end + (tails[chain.later[i]] if s.lane == "VECTOR" else 0.0)
                for i, ((s, _), end) in enumerate(zip(chain.steps, ends))
                if s.lane in CHAIN_LANES
            ),
            default=0.0,
        )

    def _least_point(
        self,
        model: KernelModel,
        step: Step,
        env: dict[str, Any],
        extents: tuple[int, ...],
    ) -> dict[str, int] | None:
        """For a step whose work depends on the grid point: the point where its work
        (summed over its kinds) is least; None for any other step."""
        import numpy as np

        from fadsl.plan.resources.footprint_eval import batch

        if id(step) not in self._work:
            names = set(model.grid.vars)
            syms = {str(x) for e in step.work.values() for x in _free(e)}
            self._work[id(step)] = batch(dict(step.work)) if syms & names else None
        fn = self._work[id(step)]
        if fn is None or not extents:
            return None
        values: dict[str, Any] = dict(env)
        for axis, (name, ext) in enumerate(zip(model.grid.vars, extents)):
            shape = [1] * len(extents)
            shape[axis] = ext
            values[name] = np.arange(ext).reshape(shape)
        total = sum(
            np.broadcast_to(np.asarray(v, dtype=float), extents)
            for v in fn(values).values()
        )
        idx = np.unravel_index(int(np.argmin(total)), extents)
        return {v: int(x) for v, x in zip(model.grid.vars, idx)}


@dataclass
class Chain:
    """An iteration's steps from its loop control to the next one's."""

    steps: list[tuple[Step, list[int]]]
    """The steps issued with (or after) the loop control that hang on it, in issue
    order, each with the positions of the earlier ones making its inputs."""
    after: list[Step]
    """The vector-engine steps issued after the loop control, in issue order."""
    later: list[int]
    """For each chain step: where in ``after`` the vector steps issued after it begin."""


def _chain(model: KernelModel) -> Chain | None:
    """The iteration's chain, or None without a loop control step."""
    now = list(model.order.now)
    first = next((k for k, s in enumerate(now) if s.kind == "scalar"), None)
    if first is None:
        return None
    issued = now[first:] + list(model.order.deferred)
    out = Chain([(now[first], [])], [], [0])
    made: dict[str, int | None] = {d: 0 for d in now[first].defs}
    """The last step to make each name so far: its place in the chain, or None."""
    for step in issued[1:]:
        if step.lane == "VECTOR":
            out.after.append(step)
        if any(step is s for s in model.order.deferred):
            continue  # issued after the next iteration's steps: not on the chain
        inputs = sorted({k for u in step.uses if (k := made.get(u)) is not None})
        place = len(out.steps) if inputs else None
        for d in step.defs:
            made[d] = place
        if inputs:
            out.steps.append((step, inputs))
            out.later.append(len(out.after))
    return out


def _alike(a: KernelModel, ca: Chain | None, b: KernelModel, cb: Chain | None) -> bool:
    """Whether two models' chains, scaling and dealing of tasks are the same (then
    their bounds are too)."""
    if ca is None or cb is None:
        return ca is cb

    def sig(c: Chain) -> tuple[Any, ...]:
        steps = tuple(
            (s.lane, s.kind, tuple(sorted(s.work.items(), key=str)), i)
            for s, i in c.steps
        )
        after = tuple((s.lane, tuple(sorted(s.work.items(), key=str))) for s in c.after)
        return steps, after, tuple(c.later)

    sa, sb = a.kv_schedule, b.kv_schedule
    return (
        sig(ca) == sig(cb)
        and (sa.round_blocks, sa.shared_q_blocks)
        == (sb.round_blocks, sb.shared_q_blocks)
        and _dealing(a) == _dealing(b)
        and a.grid.extents == b.grid.extents
    )


def _dealing(m: KernelModel) -> tuple[Any, ...] | None:
    """What the dealing of tasks to cores reads (``plan/schedule/task_order.py``)."""
    o = m.task_order
    if o is None:
        return None
    return (o.heavy, o.group, tuple(o.grid.vars), tuple(o.grid.extents))


def _free(e: Any) -> set[Any]:
    return set(getattr(e, "free_symbols", ()))


__all__ = ["TimeBound"]
