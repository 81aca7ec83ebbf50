"""What the bench scripts share: timing whole processes, alternating rounds, medians.

Machine load from other work distorts wall-clock times, so the scripts run the
processes they compare alternately in one run (A, B, A, B, ...), take medians and
ratios from that same run, and print the load average before and after. Child CPU
time (user + system, from ``getrusage``) is printed next to wall time: it is less
sensitive to load, though not immune (shared caches, BLAS threads that spin).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The repository (bench/..): commands run from here."""


@dataclass
class Samples:
    """Wall and CPU seconds of repeated runs of one process."""

    label: str
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    @property
    def wall_median(self) -> float:
        return statistics.median(self.wall)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu)

    def line(self) -> str:
        walls = " ".join(f"{w:.2f}" for w in self.wall)
        return (
            f"{self.label}: median wall {self.wall_median:.3f} s, "
            f"median CPU {self.cpu_median:.3f} s  (walls: {walls})"
        )


def timed(
    cmd: list[str],
    samples: Samples,
    env: dict[str, str] | None = None,
    cwd: str = ROOT,
) -> str:
    """Run ``cmd`` from ``cwd`` (the repository; another checkout to compare with);
    record its wall and CPU time; return stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    samples.wall.append(wall)
    samples.cpu.append(cpu)
    return proc.stdout


def ratios(a: list[float], b: list[float]) -> list[float]:
    """Per-round ratios a[i] / b[i]."""
    return [x / y for x, y in zip(a, b)]


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def header(title: str) -> None:
    print(f"== {title}")
    print(
        f"   python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}, "
        f"FADSL_THREADS={os.environ.get('FADSL_THREADS', '(unset)')}"
    )
    print(f"   load average before: {load_average()}", flush=True)


def footer() -> None:
    print(f"   load average after: {load_average()}")
