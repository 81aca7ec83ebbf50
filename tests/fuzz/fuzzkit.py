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
"""Seconds one example may take before it counts as a hang (generous for slow CI).
``fadsl tune`` plans each of its ~2,000 configurations exactly since sub-dots, row
chunks and the L1 fit (21 s idle for fa2 at a tiny shape, 30 s+ on a loaded CI
machine, against 5 s before them): a slow search, not a hang. Making tune faster is a
follow-up (stop 14's note)."""

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
    """Raise Hang in the main thread when the block runs longer than ``seconds``."""

    def on_alarm(signum: int, frame: object) -> None:
        raise Hang(f"no answer within {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


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
