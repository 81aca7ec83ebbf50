"""The fuzzing harness: run the CLI in-process under a time limit and judge the outcome.

The property every fuzz test checks (issue 7): a command either succeeds or fails with
a FadslError rendered cleanly (``fadsl: <kind> error: ...``, ``error[E21]`` for a
catalogued kind) and a non-zero exit; it never raises another exception, never
reports an internal error and never hangs.
argparse's own usage errors (exit 2, ``error:`` on stderr) count as clean too.

Shared by the hypothesis tests in this folder and by ``scripts/fuzz.py``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from hypothesis import HealthCheck, settings

from fadsl.cli import main
from fadsl.errors import FadslError

T = TypeVar("T")

TIME_LIMIT = 90.0
"""CPU seconds (of this process, all threads) one example may take before it counts as
a hang. CPU time, not wall time: on a loaded machine the wall time of the same work
grows with the load (`fadsl compile fa2.py`, 4.5 s on a quiet machine, passed 90 s of
wall time at load 5-10, issue 32), its CPU time hardly. ``fadsl tune`` plans each of
its ~2,000 configurations exactly (21 s idle for fa2 at a tiny shape): a slow search,
not a hang."""

WALL_LIMIT = 900.0
"""Wall seconds before an example counts as a hang even without using the CPU (blocked
on a pipe or a lock): ten times TIME_LIMIT, which load alone does not reach."""

_CLEAN_HEADLINE = re.compile(r"^fadsl: [a-zA-Z ]*error(\[E\d+\])?: \S", re.MULTILINE)


class Hang(BaseException):
    """Raised by the alarm when an example runs past its time limit.

    A BaseException, so that the CLI's ``except Exception`` boundary cannot hide it.
    """


class FuzzFailure(AssertionError):
    """The property does not hold; the message says what happened instead."""


@dataclass(frozen=True)
class Outcome:
    """What one CLI invocation did."""

    argv: tuple[str, ...]
    code: int | None
    stdout: str
    stderr: str
    escaped: str = ""
    """Traceback of an exception that escaped ``main`` (empty if none)."""


def fuzz_settings(max_examples: int) -> settings:
    """Reproducible CI settings: derandomized, no deadline, no example database."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )


@contextlib.contextmanager
def time_limit(seconds: float = TIME_LIMIT) -> Iterator[None]:
    """Raise Hang in the main thread when the block uses more than ``seconds`` of CPU
    time, or runs for WALL_LIMIT wall seconds (at least ``seconds``) without."""

    def on_cpu(signum: int, frame: object) -> None:
        raise Hang(f"no answer within {seconds:g} s of CPU time")

    def on_wall(signum: int, frame: object) -> None:
        raise Hang(f"no answer within {wall:g} s")

    wall = max(WALL_LIMIT, seconds)
    previous = {
        signal.SIGPROF: signal.signal(signal.SIGPROF, on_cpu),
        signal.SIGALRM: signal.signal(signal.SIGALRM, on_wall),
    }
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, wall)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def working_dir(path: str) -> Iterator[None]:
    """Run in ``path`` so that nothing a command writes lands in the repository."""
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def run_cli(argv: list[str], cwd: str, seconds: float = TIME_LIMIT) -> Outcome:
    """``fadsl ARGV`` in-process, in ``cwd``, with stdout/stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    code: int | None = None
    escaped = ""
    with (
        working_dir(cwd),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            with time_limit(seconds):
                code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Hang as exc:
            escaped = f"hang: {exc}"
        except BaseException:  # noqa: BLE001 - recorded and judged by check_clean
            escaped = traceback.format_exc()
    return Outcome(tuple(argv), code, out.getvalue(), err.getvalue(), escaped)


def problem(o: Outcome) -> str | None:
    """Why ``o`` breaks the property, or None if it is a success or a clean error."""
    if o.escaped:
        return "an exception escaped the CLI:\n" + o.escaped
    if "internal error" in o.stderr or "Traceback (most recent call last)" in o.stderr:
        return f"exit {o.code} with an internal error:\n{o.stderr}"
    if o.code == 0:
        return None
    if o.code == 2 and "error:" in o.stderr:
        return None  # argparse: usage line + "fadsl CMD: error: ..."
    if o.code == 1 and _CLEAN_HEADLINE.search(o.stderr):
        return None
    if o.code == 1 and o.stdout.rstrip().endswith("FAIL") and not o.stderr.strip():
        return None  # numbers out of tolerance: a verdict, not an error
    return f"exit {o.code} without a clean FadslError:\nstdout:\n{o.stdout}\nstderr:\n{o.stderr}"


def check_clean(o: Outcome) -> None:
    """Raise FuzzFailure naming the command if ``o`` breaks the property."""
    why = problem(o)
    if why is not None:
        raise FuzzFailure(f"fadsl {' '.join(o.argv)}\n{why}")


def check_api(
    call: Callable[[], T], what: str, seconds: float = TIME_LIMIT
) -> T | None:
    """Run ``call``: its result, or None if it raised a FadslError that renders."""
    try:
        with time_limit(seconds):
            return call()
    except FadslError as err:
        rendered = err.render()
        if not rendered.startswith("fadsl: ") or "internal error" in rendered:
            raise FuzzFailure(f"{what}\nbad rendering:\n{rendered}") from None
        return None
    except Hang as exc:
        raise FuzzFailure(f"{what}\nhang: {exc}") from None
    except Exception:  # noqa: BLE001 - anything but a FadslError breaks the property
        raise FuzzFailure(f"{what}\n{traceback.format_exc()}") from None


def must(call: Callable[[], T], what: str, seconds: float = TIME_LIMIT) -> T:
    """Run ``call``, which must succeed: any exception or a hang is a FuzzFailure."""
    try:
        with time_limit(seconds):
            return call()
    except Hang as exc:
        raise FuzzFailure(f"{what}\nhang: {exc}") from None
    except Exception:  # noqa: BLE001 - this call has no excuse to fail
        raise FuzzFailure(f"{what}\n{traceback.format_exc()}") from None
