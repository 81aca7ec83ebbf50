"""``fadsl sim``'s small default shape and its progress lines."""

from __future__ import annotations

import io
import logging

from fadsl.commands import sim_cmd
from fadsl.backends.sim import run as sim_run
from fadsl.progress import reporter
from fadsl.backends.sim.progress import (
    Progress,
    default_shape,
    running_text,
    task_count,
    tasks_done,
)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_default_shape_caps_sequence_lengths_only() -> None:
    text = default_shape(dict(B=1, N=8, Sq=4096, Skv=4096, D=128))
    assert text == "B=1,N=8,Sq=512,Skv=512,D=128"
    assert default_shape(dict(B=2, N=4, Nkv=2, Sq=300, Skv=64, D=64)) == (
        "B=2,N=4,Nkv=2,Sq=300,Skv=64,D=64"
    )


def test_sim_without_shape_binds_the_small_default() -> None:
    import argparse

    p = argparse.ArgumentParser()
    sim_cmd.add_arguments(p)
    args = p.parse_args(["examples/fa2.py", "-o", "unused"])
    binding = sim_cmd._bind(args, None)
    assert binding.shape["Sq"] == 512 and binding.shape["Skv"] == 512
    assert task_count(binding) == 1 * 8 * (512 // 128)  # B * N * Sq / block_q
    assert "capped at 512" in p.format_help()


def test_progress_ticks_only_on_a_terminal() -> None:
    piped, tty = io.StringIO(), _Tty()
    for stream in (piped, tty):
        progress = Progress(reporter("sim", stream))
        progress.note("building fa2")
        progress.tick("running... 3 s")
        progress.done()
    assert piped.getvalue() == "fadsl sim: building fa2\n"
    assert tty.getvalue() == "fadsl sim: building fa2\n\rfadsl sim: running... 3 s\n"


def test_running_line_counts_finished_tasks() -> None:
    assert running_text(12.4, 37, 128) == "running... 12 s, 37 of 128 tasks done"
    assert running_text(1.0, None, 128) == "running... 1 s, 0 of 128 tasks done"
    assert running_text(3.0, 5, None) == "running... 3 s"


def test_tasks_done_reads_the_runtime_counter(tmp_path) -> None:
    path = tmp_path / "progress"
    assert tasks_done(str(path)) is None
    path.write_text(
        f"{42:20d}\n"
    )  # the runtime's fixed-width line (fadsl_rt/progress.h)
    assert tasks_done(str(path)) == 42
    path.write_text("")
    assert tasks_done(str(path)) is None


# Stands in for the built host program: writes the runtime's counter when asked to.
_FAKE_RUN = """#!/bin/sh
if [ -n "$FADSL_PROGRESS_FILE" ]; then printf '%20d\\n' 3 > "$FADSL_PROGRESS_FILE"; fi
sleep 1.5
if [ -n "$FADSL_PROGRESS_FILE" ]; then printf '%20d\\n' 4 > "$FADSL_PROGRESS_FILE"; fi
"""


def test_sim_shows_tasks_done_and_logs_them(tmp_path, monkeypatch, caplog) -> None:
    monkeypatch.delenv("FADSL_PROGRESS_FILE", raising=False)
    fake = tmp_path / "fake_main"
    fake.write_text(_FAKE_RUN)
    fake.chmod(0o755)
    piped, tty = io.StringIO(), _Tty()
    caplog.set_level(logging.DEBUG, logger="fadsl")
    for stream in (piped, tty, False):
        work = tmp_path / str(id(stream))
        work.mkdir()
        sim_run._execute(
            str(fake), str(work), 60.0, Progress(reporter("sim", stream)), 4
        )
        assert (work / "progress").exists() == (stream is not False)
    assert piped.getvalue() == ""  # ticks only: on a pipe, heartbeats alone
    assert tty.getvalue().endswith(", 4 of 4 tasks done\n")
    ticks = [r for r in caplog.records if r.name == "fadsl.sim"]
    assert ticks and all(r.levelno == logging.DEBUG for r in ticks)
    assert ticks[-1].getMessage().endswith(", 4 of 4 tasks done")
    assert len(ticks) == 2 * len([ln for ln in tty.getvalue().split("\r") if ln])
