"""fadsl/progress.py: phases and ticks go to the ``fadsl`` logger (ticks at DEBUG but a
heartbeat at INFO), and a display shows them on a terminal in place, elsewhere one line
per phase."""

from __future__ import annotations

import io
import logging

import pytest

from fadsl import progress
from fadsl.errors import UsageError
from fadsl.progress import Display, Reporter, reporter


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _records(caplog: pytest.LogCaptureFixture) -> list[tuple[str, int, str]]:
    return [(r.name, r.levelno, r.getMessage()) for r in caplog.records]


def test_phases_are_info_ticks_debug_and_a_heartbeat_info(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = _Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    caplog.set_level(logging.DEBUG, logger="fadsl")
    r = reporter("tune")
    r.phase("screening 10 configurations")
    clock.now += 1.0
    r.tick("1/10")
    clock.now += progress.HEARTBEAT
    r.tick("9/10")  # nothing at INFO for HEARTBEAT seconds: this one is INFO
    clock.now += 1.0
    r.tick("10/10")
    assert _records(caplog) == [
        ("fadsl.tune", logging.INFO, "screening 10 configurations"),
        ("fadsl.tune", logging.DEBUG, "1/10"),
        ("fadsl.tune", logging.INFO, "9/10"),
        ("fadsl.tune", logging.DEBUG, "10/10"),
    ]


def test_a_display_redraws_on_a_terminal_and_prints_phases_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = _Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    piped, tty = io.StringIO(), _Tty()
    for stream in (piped, tty):
        r = Reporter("sim", Display(stream, "sim"))
        r.phase("building")
        r.tick("building... 1 s")
        clock.now += progress.HEARTBEAT
        r.tick("building... 16 s")
        r.phase("running")
        r.done()
    assert piped.getvalue() == (
        "fadsl sim: building\nfadsl sim: building... 16 s\nfadsl sim: running\n"
    )
    assert tty.getvalue() == (
        "fadsl sim: building\n\rfadsl sim: building... 1 s"
        "\rfadsl sim: building... 16 s\nfadsl sim: running\n"
    )


def test_the_progress_argument(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="fadsl")
    silent = reporter("sim", False)
    silent.phase("nobody sees this")
    assert not silent.on and caplog.records == []
    shown = io.StringIO()
    reporter("sim", shown).phase("both")
    assert shown.getvalue() == "fadsl sim: both\n"
    assert _records(caplog) == [("fadsl.sim", logging.INFO, "both")]
    same = Reporter("sim")
    assert reporter("sim", same) is same
    with pytest.raises(UsageError, match="progress='yes'"):
        reporter("sim", "yes")  # type: ignore[arg-type]


def test_a_closed_stream_never_fails_the_work() -> None:
    stream = io.StringIO()
    stream.close()
    Reporter("sim", Display(stream, "sim")).phase("still fine")
