"""Phases around the grid: work every core finishes before the grid starts or after
every core's grid work, separated from it by ``AscendC::SyncAll`` (CANN's
FlashAttentionScoreGrad runs a pre-pass, ``SyncAll``, its main loop, ``SyncAll`` and a
post-pass: ops-transformer ``flash_attention_score_grad.cpp``).

``SyncAll<false>()`` waits for every AIC and AIV of a MIX launch, ``SyncAll<true>()``
for the AIVs of an AIV-only launch: every core of the launch must reach it, so a
core with no work in a phase still takes part (pass an empty phase, not ``None``).
"""

from __future__ import annotations

from dataclasses import replace

from fadsl.backends.ascendc.view import Block, CoreClass, Line, Stmt


def sync_all(kernel_type: str) -> Line:
    """The all-core barrier of a launch of ``kernel_type``."""
    aiv_only = "true" if kernel_type == "AIV_ONLY" else "false"
    return Line(f"AscendC::SyncAll<{aiv_only}>();")


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
    barrier = (Line("AscendC::PipeBarrier<PIPE_ALL>();"), sync_all(kernel_type))
    process: tuple[Stmt, ...] = ()
    if before is not None:
        process += _scoped(before) + barrier
    process += cls.process
    if after is not None:
        process += barrier + _scoped(after)
    return replace(cls, process=process)


def _scoped(stmts: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    return (Block("", stmts),) if stmts else ()


__all__ = ["sync_all", "with_phases"]
