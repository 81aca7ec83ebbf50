"""What ``fadsl sim`` shows while it works, and its default shape.

Progress (lowering, building with seconds so far, running T tasks on C AI Cores with
seconds so far and "x of T tasks done", comparing) goes to the ``fadsl.sim`` logger and,
for ``fadsl sim`` and ``fd.sim(progress=True)``, to stderr: redrawn in place on a
terminal, one line per phase otherwise (fadsl/progress.py). The count comes from the CPU
runtime: each task of the generated kernel ends with ``fadsl::TaskDone()`` (nothing on
the device), and the runtime keeps the number of finished tasks in the file named by
$FADSL_PROGRESS_FILE, which ``sim`` sets whenever progress is reported.

``sim`` runs every core of the chip as a thread on the CPU, so its default shape is the
kernel's default with the sequence lengths capped (a run of seconds); ``check`` and
``tune`` keep the kernel's full default shape.
"""

from __future__ import annotations

import subprocess
import time
from typing import Any, Callable

from fadsl.progress import Reporter

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
    from fadsl.plan.schedule.sides import grid_of

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
    """sim's progress (fadsl/progress.py): a line per phase (lowering, building, running,
    comparing) and, while the kernel runs, seconds so far and tasks done."""

    def __init__(self, report: Reporter | None = None) -> None:
        self.report = report if report is not None else Reporter("sim")

    @property
    def on(self) -> bool:
        return self.report.on

    def note(self, text: str) -> None:
        self.report.phase(text)

    def tick(self, text: str) -> None:
        self.report.tick(text)

    def done(self) -> None:
        self.report.done()

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
    timeout: float | None,
    progress: Progress,
    text: Callable[[float], str],
) -> tuple[str, str]:
    """``proc``'s stdout and stderr once it exits, ticking ``text(seconds)`` every
    second; after ``timeout`` seconds (None: never) kills it and raises
    ``subprocess.TimeoutExpired``."""
    t0 = time.perf_counter()
    ticked = False
    while True:
        spent = time.perf_counter() - t0
        left = 1.0 if timeout is None else timeout - spent
        try:
            out, err = proc.communicate(timeout=max(0.0, min(1.0, left)))
            break
        except subprocess.TimeoutExpired:
            if timeout is not None and left <= 1.0:
                proc.kill()
                proc.communicate()
                raise
            progress.tick(text(time.perf_counter() - t0))
            ticked = True
    if ticked:  # the last count, e.g. "128 of 128 tasks done"
        progress.tick(text(time.perf_counter() - t0))
    progress.done()
    return out, err
