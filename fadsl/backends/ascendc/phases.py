"""Phases around the grid: work every core finishes before the grid starts or after
every core's grid work, separated from it by ``AscendC::SyncAll`` (CANN's
FlashAttentionScoreGrad runs a pre-pass, ``SyncAll``, its main loop, ``SyncAll`` and a
post-pass: ops-transformer ``flash_attention_score_grad.cpp``).

A kernel's second ``fd.grid`` (the post phase, ``plan/schedule/phases.py``) is a core class of
its own, run in the kernel's entry function after ``drained_sync_all`` (its classes'
TPipes are gone by then, so it takes a TPipe of its own).

``SyncAll<false>()`` waits for every AIC and AIV of a MIX launch, ``SyncAll<true>()``
for the AIVs of an AIV-only launch: every core of the launch must reach it, so a
core with no work in a phase still takes part (pass an empty phase, not ``None``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fadsl.backends.ascendc.names import Names
from fadsl.backends.ascendc.vector import VectorEmitter
from fadsl.backends.ascendc.view import Block, CoreClass, Line, Stmt
from fadsl.plan.memory.plan_buffers import Lowering


def sync_all(kernel_type: str) -> Line:
    """The all-core barrier of a launch of ``kernel_type``."""
    aiv_only = "true" if kernel_type == "AIV_ONLY" else "false"
    return Line(f"AscendC::SyncAll<{aiv_only}>();")


def drained_sync_all(kernel_type: str) -> tuple[Line, Line]:
    """Every pipe of the core drained (``PipeBarrier<PIPE_ALL>``), so its GM writes are
    done, then the all-core barrier: what separates two phases."""
    return Line("AscendC::PipeBarrier<PIPE_ALL>();"), sync_all(kernel_type)


def with_phases(
    cls: CoreClass,
    kernel_type: str,
    before: tuple[Stmt, ...] | None,
    after: tuple[Stmt, ...] | None,
) -> CoreClass:
    """``cls`` whose Process runs ``before``, SyncAll, its grid, SyncAll, ``after``
    (a phase that is ``None`` has no barrier either). Every pipe of the core drains
    before a barrier (``PipeBarrier<PIPE_ALL>``), so the GM writes of the phase are
    done when other cores pass it."""
    barrier = drained_sync_all(kernel_type)
    process: tuple[Stmt, ...] = ()
    if before is not None:
        process += _scoped(before) + barrier
    process += cls.process
    if after is not None:
        process += barrier + _scoped(after)
    return replace(cls, process=process)


def post_class(post: Lowering, names: Names, host: str) -> Any:
    """The post phase (``plan/schedule/phases.py``): a vector class whose task loop spreads the
    post grid over every AIV of the launch (the first grid's loop gives both AIVs of
    an AI Core one task)."""
    from fadsl.backends.ascendc.emit import with_gm
    from fadsl.backends.ascendc.task_loop import decompose

    grid = post.grid
    ext = [names.expr(e) for e in grid.extents]
    tasks = " * ".join(f"({e})" for e in ext) if ext else "1"
    loop = (
        "for (int64_t task = AscendC::GetBlockIdx(); task < tasks; "
        "task += AscendC::GetBlockNum() * AscendC::GetSubBlockNum())"
    )
    header: list[Stmt] = [Line(f"const int64_t tasks = {tasks};")]
    emitter = VectorEmitter(
        post, names, {}, {}, header, loop, decompose(grid.vars, ext, names)
    )
    return with_gm(emitter.core_class(host + "Post"), post, names, {})


def _scoped(stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    return (Block("", stmts),) if stmts else ()


__all__ = ["drained_sync_all", "post_class", "sync_all", "with_phases"]
