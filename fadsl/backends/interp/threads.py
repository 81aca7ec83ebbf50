"""A grid's points split over worker threads, with results independent of the split.

numpy releases the GIL inside matmuls and large ufunc loops, so running two halves of
a grid on two threads (each BLAS call on one thread) uses two CPUs where one batched
run uses one. The split is along a grid axis other than the last: the interpreter
folds only the last grid axis into matmul rows (``cube._folded_matmul``), so every
(b, h) still gets BLAS calls of the same shapes (a loop lays out its points by which
axes its bounds' expressions span, not by whether a chunk's values agree:
``control._bounds``), and elementwise ops and row reductions compute each point alone. The bits of the outputs therefore do not depend
on the number of threads (``tests/backends/interp/test_threads.py`` checks every
example). Grid points are independent tasks (they run on different AI cores), so the
chunks share global memory without locks.

``FADSL_THREADS`` sets the number of threads (1 turns splitting off); by default it is
the number of CPUs this process may run on.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence

import numpy as np

from fadsl.errors import UsageError

ENV = "FADSL_THREADS"


def thread_count() -> int:
    """Threads a grid may use: ``$FADSL_THREADS``, else the CPUs of this process."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return max(1, len(os.sched_getaffinity(0)))
    if not text.isdigit() or int(text) < 1:
        raise UsageError(
            f"{ENV}={text!r} is not a positive integer",
            hint=f"unset it, or set e.g. {ENV}=1 (one thread) or {ENV}=2",
        )
    return int(text)


def split(extents: Sequence[int], threads: int) -> tuple[int, list[range]] | None:
    """The axis to split (the longest but the last) and its ranges, or None.

    Every chunk keeps at least two points along the split axis. A loop whose bounds
    vary along that axis (per-head block lists) then sees it vary in every chunk too,
    and lays its points out as the whole grid would (``control._loop_layout``): a
    chunk of one head would instead batch that head's Q blocks together, and fold
    them into one matmul where the whole grid makes one matmul per block (OpenBLAS's
    bits can depend on the row count of a call).
    """
    if threads < 2 or len(extents) < 2:
        return None
    axis = max(range(len(extents) - 1), key=lambda a: (extents[a], -a))
    n = extents[axis]
    parts = min(threads, n // 2)
    if parts < 2:
        return None
    bounds = [n * p // parts for p in range(parts + 1)]
    return axis, [range(lo, hi) for lo, hi in zip(bounds, bounds[1:])]


def run_all(jobs: Sequence[Callable[[], None]]) -> None:
    """Run ``jobs[0]`` here and the others on daemon threads; re-raise the first failure
    (in job order) once all have finished.

    The calling thread does a share of the work, so Ctrl-C stops it at once; the
    worker threads, being daemons, end with the process.
    """
    failures: list[BaseException | None] = [None] * len(jobs)

    def guarded(k: int) -> None:
        try:
            with np.errstate(all="ignore"):  # numpy's error state is per thread
                jobs[k]()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            failures[k] = exc

    workers = [
        threading.Thread(target=guarded, args=(k,), daemon=True, name=f"fadsl-grid-{k}")
        for k in range(1, len(jobs))
    ]
    for w in workers:
        w.start()
    try:
        jobs[0]()
    except Exception as exc:  # noqa: BLE001 - raised after the workers have finished
        failures[0] = exc
    for w in workers:
        w.join()
    for exc in failures:
        if exc is not None:
            raise exc
