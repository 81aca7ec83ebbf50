"""One buffer plan per (kernel, chip, sizes) while ``fadsl tune`` searches.

``fadsl tune`` plans a configuration exactly to decide whether it fits; the cost model
then plans the same kernel at the same sizes again, up to three times (the L1 stages,
the row chunks: ``perf/kernel.py`` ``at``), each time from its own copy of the kernel
after the passes. The planner is a function of the kernel's structure, the chip and
the sizes, so inside ``sharing_plans()`` ``plan_buffers.lower`` keeps each result under
that key (the kernel compared by value: copies made by separate pass runs are equal)
and answers repeated questions from it. Outside it nothing is kept: ``fadsl compile``
and ``check`` plan once and must not hold plans alive.

The planner's results are read, never changed, by its callers; the memo hands the
same object to each of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from fadsl.ir.nodes import Kernel
    from fadsl.plan.memory.plan_buffers import Lowering
    from fadsl.target import Target

Key = tuple[Any, ...]
T = TypeVar("T")

_PLANS: ContextVar[dict[Key, Any] | None] = ContextVar("fadsl_tune_plans", default=None)
_ANSWERS: ContextVar[dict[Key, Any] | None] = ContextVar(
    "fadsl_tune_answers", default=None
)


@contextmanager
def sharing_plans() -> Iterator[dict[Key, Any]]:
    """Within the block, equal questions to the planner get the first answer."""
    from fadsl.plan.search import vec_memo

    token, vectors = _PLANS.set({}), vec_memo.start()
    answers = _ANSWERS.set({})
    try:
        yield _PLANS.get() or {}
    finally:
        _ANSWERS.reset(answers)
        vec_memo.stop(vectors)
        _PLANS.reset(token)


def planned(
    kernel: Kernel,
    target: Target,
    env: dict[str, Any],
    make: Callable[[], Lowering],
) -> Lowering:
    """``make()``, or the plan it made before for an equal kernel, chip and sizes."""
    memo = _PLANS.get()
    if memo is None:
        return make()
    key = (kernel, target, tuple(sorted(env.items())))
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = make()
    return hit


def remembered(what: Key, env: Mapping[str, Any], make: Callable[[], T]) -> T:
    """``make()``, or its answer for ``what`` at equal sizes ``env`` before, inside
    ``sharing_plans`` (``KernelModel.at``: tune bounds a planned configuration at
    the model's row chunks, then models it)."""
    memo = _ANSWERS.get()
    if memo is None:
        return make()
    key = (*what, tuple(sorted(env.items())))
    if key not in memo:
        memo[key] = make()
    return memo[key]  # type: ignore[no-any-return]


def plans_made() -> int:
    """How many distinct plans the current ``sharing_plans`` block made."""
    memo = _PLANS.get()
    return len(memo) if memo is not None else 0


__all__ = ["planned", "plans_made", "remembered", "sharing_plans"]
