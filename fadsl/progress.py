"""Progress of long work (``sim``, ``tune``): records on the ``fadsl`` logger, and the
lines the command line shows.

Work that can take more than a few seconds reports through ``logging``, so a program
that calls fadsl sees it like the rest of its log: each kind of work has a child of the
``fadsl`` logger (``fadsl.sim``, ``fadsl.tune``). A *phase* (building, running,
screening ...) is one INFO record. The *ticks* in between (seconds so far, tasks done)
are DEBUG records, except one every ``HEARTBEAT`` seconds without an INFO record, which
is INFO: a log at INFO shows that a long run is alive without filling up.

A ``Display`` shows the same lines on a stream, as the command line does on stderr: on
a terminal every phase is a line and the ticks are redrawn in place; otherwise (a pipe,
a file, a CI log) one line per phase, plus the heartbeat ticks, and never a carriage
return. ``reporter(task, progress)`` reads the ``progress=`` argument of the Python API
(``fd.sim``): None (the default) only logs, True shows the lines on stderr too, a
stream shows them there, False is silent (not even records).
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO, Union

LOGGER = "fadsl"
"""The logger every progress record goes to (through a child per task)."""

HEARTBEAT = 15.0
"""Seconds without an INFO record after which a tick is logged at INFO."""

ProgressArg = Union[bool, TextIO, None]
"""What the API's ``progress=`` takes (see the module docstring)."""


class Display:
    """Progress lines of one task on a stream: ``fadsl <task>: <text>``."""

    def __init__(self, stream: TextIO, task: str) -> None:
        self.stream = stream
        self.prefix = f"fadsl {task}: "
        self.tty = _is_terminal(stream)
        self._ticking = False

    def line(self, text: str) -> None:
        self.end()
        self._write(f"{self.prefix}{text}\n")

    def tick(self, text: str, heartbeat: bool) -> None:
        """On a terminal rewrite the current line; elsewhere show heartbeats only."""
        if self.tty:
            self._write(f"\r{self.prefix}{text}")
            self._ticking = True
        elif heartbeat:
            self._write(f"{self.prefix}{text}\n")

    def end(self) -> None:
        """Finish a line that ticks were drawn on."""
        if self._ticking:
            self._ticking = False
            self._write("\n")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed stream: progress never fails the work
            pass


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):  # no isatty, or a closed stream
        return False


class Reporter:
    """What long work calls: ``phase`` at each step, ``tick`` in between, ``done``."""

    def __init__(
        self, task: str, display: Display | None = None, log: bool = True
    ) -> None:
        self.task = task
        self.logger: logging.Logger | None = (
            logging.getLogger(f"{LOGGER}.{task}") if log else None
        )
        self.display = display
        self._last_line = time.monotonic()

    @property
    def on(self) -> bool:
        """Whether anything may see the progress (records or a display)."""
        return self.logger is not None or self.display is not None

    def phase(self, text: str) -> None:
        self._last_line = time.monotonic()
        if self.logger is not None:
            self.logger.info(text)
        if self.display is not None:
            self.display.line(text)

    def tick(self, text: str) -> None:
        now = time.monotonic()
        heartbeat = now - self._last_line >= HEARTBEAT
        if heartbeat:
            self._last_line = now
        if self.logger is not None:
            self.logger.log(logging.INFO if heartbeat else logging.DEBUG, text)
        if self.display is not None:
            self.display.tick(text, heartbeat)

    def done(self) -> None:
        if self.display is not None:
            self.display.end()


def reporter(task: str, progress: ProgressArg | Reporter = None) -> Reporter:
    """The reporter of ``task`` for an API's ``progress=`` argument (module docstring);
    a Reporter is passed through."""
    if isinstance(progress, Reporter):
        return progress
    if progress is False:
        return Reporter(task, None, log=False)
    if progress is None:
        return Reporter(task)
    stream = sys.stderr if progress is True else progress
    if not callable(getattr(stream, "write", None)):
        from fadsl.errors import UsageError

        raise UsageError(
            f"progress={progress!r}: expected True, False, None or a text stream",
            None,
            hint="progress=True shows progress lines on stderr; every line also goes "
            "to the `fadsl` logger",
        )
    return Reporter(task, Display(stream, task))  # type: ignore[arg-type]
