"""A perfect nest of loops read as one KV loop (issue 26: the library backward).

``fd.attention_backward``'s library kernel (``fadsl/lib/flash_bwd.py``) loops over
the query batches (one trip unless ``shared_kv``), the query heads of the KV head's
group and the Q blocks: three nested ``For``s, each body holding nothing but the next
loop, the carried dK and dV passed straight through. The generated kernel runs the
innermost body once per (batch, head, Q block), so the model must schedule that body
``product of the trip counts`` times. Read as it stands, the outer one-trip loop was
taken for the KV loop and its body (a nested loop, which the step builder charges as
no work) for one iteration: "1 KV iterations", 0.110 ms at B=1, N=8, S=4K.

``flatten(loop)`` gives the innermost loop with the outer loop's inits and results
(what the task's code before and after the loop makes and reads), and the product of
the outer loops' trip counts; a loop that is not such a nest comes back as it is
with a factor of 1. The innermost loop's own start and stop are kept: its body's
masks and tail shares are per head (``perf/guard_share.py``), the same for every
outer iteration, since an inner bound that reads an outer loop's variable stops the
flattening.
"""

from __future__ import annotations

import dataclasses

import sympy

from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr


@dataclasses.dataclass(frozen=True)
class Nest:
    """The loop the model schedules and how often the nest runs its body."""

    loop: ir.For
    """The innermost loop, with the outermost loop's inits and results."""
    inner: ir.For
    """The innermost loop as in the IR (the planner's choices are keyed by it)."""
    outer_trips: Expr
    """Product of the trip counts of the loops around ``inner`` (1 without a nest)."""

    @property
    def trips(self) -> Expr:
        """Iterations of the innermost body per task."""
        return self.outer_trips * (self.loop.stop - self.loop.start)


def flatten(loop: ir.For) -> Nest:
    """``loop`` as a perfect nest (see the module docstring)."""
    outer_vars: set[str] = set()
    trips: Expr = sympy.Integer(1)
    inner = loop
    while _nests(inner, outer_vars | {inner.var}):
        outer_vars.add(inner.var)
        trips = trips * (inner.stop - inner.start)
        inner = inner.body[0]  # type: ignore[assignment]
    if inner is loop:
        return Nest(loop, loop, trips)
    flat = dataclasses.replace(
        inner, inits=loop.inits, loop_results=loop.loop_results
    )
    return Nest(flat, inner, trips)


def _nests(outer: ir.For, bound_vars: set[str]) -> bool:
    """Whether ``outer``'s body is one loop that carries exactly ``outer``'s values
    (inits = outer's iter_args, results = outer's yields) with bounds that read no
    variable of the loops around it."""
    if len(outer.body) != 1 or not isinstance(outer.body[0], ir.For):
        return False
    inner = outer.body[0]
    if tuple(inner.inits) != tuple(outer.iter_args):
        return False
    if tuple(inner.loop_results) != tuple(outer.yields):
        return False
    names = {
        str(s)
        for e in (inner.start, inner.stop)
        for s in getattr(sympy.sympify(e), "free_symbols", ())
    }
    return not names & bound_vars
