"""What ``fadsl sim`` shows while it works, and its default shape.

Progress lines (building, running T tasks on C AI Cores, seconds so far) go to stderr
only when stderr is a terminal; redirected or captured runs stay quiet.

``sim`` runs every core of the chip as a thread on the CPU, so its default shape is the
kernel's default with the sequence lengths capped (a run of seconds); ``check`` and
``tune`` keep the kernel's full default shape.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

SEQ_CAP = 512
"""Sequence lengths of sim's default shape are at most this."""

SEQ_SYMBOLS = ("Sq", "Skv", "S")
"""Shape symbols that are sequence lengths."""


def default_shape(defaults: dict[str, int]) -> str:
    """``--shape`` text of sim's default: the kernel's default, Sq/Skv capped."""
    small = {
        k: (min(v, SEQ_CAP) if k in SEQ_SYMBOLS else v) for k, v in defaults.items()
    }
    return ",".join(f"{k}={v}" for k, v in small.items())


def task_count(binding: Any) -> int | None:
    """Tasks of the launch grid at the bound shape (None when it cannot be evaluated)."""
    import sympy

    from fadsl.ir.expr import isym
    from fadsl.passes.sides import grid_of

    try:
        grid = grid_of(binding.kernel)
        env = {isym(k): v for k, v in binding.env().items() if isinstance(v, int)}
        value = sympy.Mul(*grid.extents).subs(env)
        return int(value) if value.is_number else None
    except Exception:  # progress text only: never fail a run over it
        return None


class Progress:
    """Progress lines on a terminal; nothing otherwise."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.on = bool(getattr(self.stream, "isatty", lambda: False)())
        self._ticking = False

    def note(self, text: str) -> None:
        if self.on:
            self._end_tick()
            print(f"fadsl sim: {text}", file=self.stream, flush=True)

    def tick(self, text: str) -> None:
        """Rewrite the current line (e.g. seconds elapsed)."""
        if self.on:
            self.stream.write(f"\rfadsl sim: {text}")
            self.stream.flush()
            self._ticking = True

    def _end_tick(self) -> None:
        if self._ticking:
            self.stream.write("\n")
            self._ticking = False

    def done(self) -> None:
        if self.on:
            self._end_tick()

    def running(self, binding: Any, target: Any) -> str:
        """The line announcing the run."""
        shape = ",".join(f"{k}={v}" for k, v in binding.shape.items())
        tasks = task_count(binding)
        what = f"{tasks} tasks" if tasks is not None else "the kernel"
        cores = min(tasks, target.aic_cores) if tasks else target.aic_cores
        return (
            f"running {binding.kernel.name} [{shape}]: {what} on {cores} AI Cores "
            f"of {target.name} (each cube and vector core a thread)"
        )
