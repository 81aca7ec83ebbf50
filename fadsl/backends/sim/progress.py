"""What ``fadsl sim`` shows while it works, and its default shape.

Progress lines (building, running T tasks on C AI Cores, then seconds so far and "x of T
tasks done") go to stderr only when stderr is a terminal; redirected or captured runs stay
quiet. The count comes from the CPU runtime: each task of the generated kernel ends with
``fadsl::TaskDone()`` (nothing on the device), and the runtime keeps the number of finished
tasks in the file named by $FADSL_PROGRESS_FILE, which ``sim`` sets only on a terminal.

``sim`` runs every core of the chip as a thread on the CPU, so its default shape is the
kernel's default with the sequence lengths capped (a run of seconds); ``check`` and
``tune`` keep the kernel's full default shape.
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any, Callable, TextIO

from fadsl.errors import ExecutionError

SEQ_CAP = 512
"""Sequence lengths of sim's default shape are at most this."""

SEQ_SYMBOLS = ("Sq", "Skv", "S")
"""Shape symbols that are sequence lengths."""

PROGRESS_ENV = "FADSL_PROGRESS_FILE"
"""The CPU runtime writes the number of finished tasks to the file this names
(fadsl/runtime/cpu/include/fadsl_rt/progress.h)."""


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
    from fadsl.plan.sides import grid_of

    try:
        grid = grid_of(binding.kernel)
        env = {isym(k): v for k, v in binding.env().items() if isinstance(v, int)}
        value = sympy.Mul(*grid.extents).subs(env)
        return int(value) if value.is_number else None
    except Exception:  # progress text only: never fail a run over it
        return None


def tasks_done(path: str) -> int | None:
    """The finished-task count the CPU runtime wrote to ``path``; None before the first."""
    try:
        with open(path, encoding="ascii") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def running_text(seconds: float, done: int | None, tasks: int | None) -> str:
    """The ticking line while the kernel runs."""
    text = f"running... {seconds:.0f} s"
    if tasks:
        text += f", {min(done or 0, tasks)} of {tasks} tasks done"
    return text


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


def wait(
    proc: subprocess.Popen,
    timeout: float,
    progress: Progress,
    done: Callable[[], int | None],
    tasks: int | None,
) -> str:
    """``proc``'s stderr once it exits, ticking seconds and ``done()`` of ``tasks``
    every second; kills it and fails after ``timeout`` seconds."""
    t0 = time.perf_counter()
    ticked = False
    while True:
        left = timeout - (time.perf_counter() - t0)
        try:
            _, err = proc.communicate(timeout=max(0.0, min(1.0, left)))
            break
        except subprocess.TimeoutExpired:
            if left <= 1.0:
                proc.kill()
                proc.communicate()
                raise ExecutionError(
                    f"the CPU-runtime run did not finish in {timeout:.0f} s",
                    hint="use a smaller --shape or raise --timeout",
                ) from None
            progress.tick(running_text(time.perf_counter() - t0, done(), tasks))
            ticked = True
    if ticked:  # the last count, e.g. "128 of 128 tasks done"
        progress.tick(running_text(time.perf_counter() - t0, done(), tasks))
    return err
