"""The pass pipeline: an explicit ordered tuple of pass modules, and its driver.

A pass is a module with ``NAME: str`` and ``run(kernel, target) -> Kernel``; passes
are pure (house style 3.3). ``run_pipeline`` runs them in order, optionally stopping
after one, and checks ``ir.verify`` before the first and after every pass when
``FADSL_DEBUG=1`` or ``FADSL_VERIFY=1`` (the test suite sets the latter).
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import TYPE_CHECKING

from fadsl.errors import InternalError, UsageError
from fadsl.ir.nodes import Kernel
from fadsl.ir.verify import verify as verify_ir
from fadsl.passes import (
    hoist_scalars,
    infer_types,
    lower_vector,
    pipeline,
    strip_debug,
)

if TYPE_CHECKING:
    from fadsl.target import Target

# Ordering constraints (loopy style: each line says what must come first and why):
# - strip_debug runs first: compiled builds leave fd.debug_print / fd.device_assert
#   out, and no later pass, plan or backend has to know them.
# - infer_types runs first: every later pass trusts Value types, and IR that was
#   parsed from text or rewritten must be re-typed before anything reads them.
# - hoist_scalars runs after infer_types and before pipeline: a scalar read it moves
#   out of a pipelined loop is then not a load of that loop (it is read once per task).
# - pipeline runs after infer_types: it turns the loads of pipelined loops into
#   queues, whose slots the buffer plan then sizes and places.
# - lower_vector runs after pipeline: it rewrites vector code (masks, index tiles)
#   and must see the final loop bodies; the interpreter runs its output, so every
#   rewrite is checked numerically.
# The buffer plan (plan/plan_buffers.lower) and the resource proof
# (plan/check_resources) are not passes: they need the bound shape and tile sizes and
# produce a plan and a report, not IR. The driver (driver/lower.py) runs them after
# PIPELINE, the proof last: nothing after it may add on-chip buffers.
PIPELINE: tuple[ModuleType, ...] = (
    strip_debug,
    infer_types,
    hoist_scalars,
    pipeline,
    lower_vector,
)


def pass_names() -> tuple[str, ...]:
    return tuple(p.NAME for p in PIPELINE)


def run_pipeline(
    kernel: Kernel,
    target: Target | None = None,
    until: str | None = None,
    verify: bool | None = None,
    keep_debug: bool = False,
) -> Kernel:
    """Run PIPELINE over ``kernel``; stop after pass ``until`` if given.

    ``verify`` forces the between-pass checks on or off (default: environment).
    ``keep_debug`` skips strip_debug: a debug build lowers the debugging ops.
    """
    if until is not None and until not in pass_names():
        raise UsageError(
            f"there is no pass named {until!r}",
            hint="passes, in pipeline order: " + ", ".join(pass_names()),
        )
    checking = _verify_from_env() if verify is None else verify
    if checking:
        _verify(kernel, "before the first pass")
    if keep_debug and target is not None:
        strip_debug.check_printable(kernel)
    for p in PIPELINE:
        if not (keep_debug and p is strip_debug):
            kernel = p.run(kernel, target)
        if checking:
            _verify(kernel, f"after pass `{p.NAME}`")
        if p.NAME == until:
            break
    return kernel


def _verify_from_env() -> bool:
    return os.environ.get("FADSL_DEBUG") == "1" or os.environ.get("FADSL_VERIFY") == "1"


def _verify(kernel: Kernel, when: str) -> None:
    try:
        verify_ir(kernel)
    except InternalError as err:
        raise InternalError(f"{err.message} {when}", err.loc, _ir_note(err)) from None


def _ir_note(err: InternalError) -> str:
    for note in err.notes:
        if note.startswith("IR:\n"):
            return note[len("IR:\n") :]
    return ""


__all__ = ["PIPELINE", "pass_names", "run_pipeline"]
