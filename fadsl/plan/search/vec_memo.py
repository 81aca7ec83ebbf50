"""One vector (UB) plan per kernel, chip, chunk regions and *decisions* while ``fadsl tune``
searches.

The vector planner (``plan/memory/vector_plan.py``) keeps every size symbolic: the sizes it
plans at reach it only through ``VectorPlanner._value``, which it uses to choose among
free temporaries (the smallest that is large enough, else the largest). Its plan is
therefore a function of the kernel, the chip, the chunk regions and the outcomes of
those comparisons. Two sizes under which every expression it evaluated has the same
order (equal values equal, smaller values smaller) make it take the same path,
evaluate the same expressions and return the same plan.

So inside ``memo.sharing_plans()`` each plan is kept with the expressions its planner
evaluated; asked again at other sizes, those expressions are evaluated there (as
``_value`` evaluates them, a failing one counting 0) and, when their order is the
one the plan was made under, that plan is the answer. Outside ``sharing_plans``
nothing is kept (``fadsl compile`` and ``check`` plan once).

Non-goals: the rest of the buffer plan (L1, L0, rings), which reads the sizes in
other ways; ``plan/search/memo.py`` shares whole plans at equal sizes.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fadsl.plan.memory.vector_plan import VectorPlanner
    from fadsl.plan.memory.vector_slots import VecPlan

Entry = tuple[tuple[Any, ...], tuple[int, ...], "VecPlan"]
"""(expressions the planner evaluated, their order at its sizes, the plan)."""

_STORE: ContextVar[dict[Hashable, list[Entry]] | None] = ContextVar(
    "fadsl_tune_vector_plans", default=None
)

LIMIT = 64
"""Plans kept per key (kernel, chip, regions); beyond it a key makes no new entries."""


def order(values: list[float]) -> tuple[int, ...]:
    """Each value's rank among the distinct values (equal values, equal ranks)."""
    distinct = sorted(set(values))
    return tuple(bisect.bisect_left(distinct, v) for v in values)


def values_at(
    exprs: tuple[Any, ...], env: dict[str, Any], known: dict[Any, float]
) -> list[float]:
    """The expressions at ``env``, as ``VectorPlanner._value`` evaluates them;
    ``known`` keeps those evaluated already at ``env``."""
    from fadsl.ir.expr import as_expr, evaluate

    out = []
    for e in exprs:
        got = known.get(e)
        if got is None:
            try:
                got = float(evaluate(as_expr(e), env))
            except (KeyError, TypeError, ValueError):
                got = 0.0
            known[e] = got
        out.append(got)
    return out


def vector_plan(
    key: Hashable, make: Callable[[], VectorPlanner], env: dict[str, Any]
) -> VecPlan:
    """``make().plan(env)``, or a plan made before under ``key`` whose planner's
    comparisons come out the same at ``env``."""
    store = _STORE.get()
    if store is None:
        return make().plan(env)
    entries = store.setdefault(key, [])
    known: dict[Any, float] = {}
    for exprs, ranks, plan in entries:
        if order(values_at(exprs, env, known)) == ranks:
            return plan
    planner = make()
    plan = planner.plan(env)
    if len(entries) < LIMIT:
        exprs = tuple(planner._values)
        entries.append((exprs, order(list(planner._values.values())), plan))
    return plan


def start() -> Any:
    """Begin keeping plans (``memo.sharing_plans``); the token for ``stop``."""
    return _STORE.set({})


def stop(token: Any) -> None:
    _STORE.reset(token)


__all__ = ["order", "start", "stop", "values_at", "vector_plan"]
