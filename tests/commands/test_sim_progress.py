"""``fadsl sim``'s small default shape and its progress lines (terminal only)."""

from __future__ import annotations

import io

from fadsl.commands import sim_cmd
from fadsl.commands.sim_progress import Progress, default_shape, task_count


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
    binding = sim_cmd._bind(args)
    assert binding.shape["Sq"] == 512 and binding.shape["Skv"] == 512
    assert task_count(binding) == 1 * 8 * (512 // 128)  # B * N * Sq / block_q
    assert "capped at 512" in p.format_help()


def test_progress_is_quiet_unless_stderr_is_a_terminal() -> None:
    quiet, tty = io.StringIO(), _Tty()
    for stream in (quiet, tty):
        progress = Progress(stream)
        progress.note("building fa2")
        progress.tick("running... 3 s")
        progress.done()
    assert quiet.getvalue() == ""
    assert tty.getvalue() == "fadsl sim: building fa2\n\rfadsl sim: running... 3 s\n"
