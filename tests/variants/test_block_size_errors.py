"""A block size the cube cannot tile points at the user's line and names the constant.

For an ``fd.attention`` kernel the tile is loaded in fadsl's own program
(fadsl/lib/flash.py); the error pointed there, with no word of which constant to change.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fadsl.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_fd_attention_block_size_error_points_at_the_users_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    causal = ROOT / "examples" / "causal.py"
    assert main(["check", str(causal), "--set", "block_kv=40"]) == 1
    err = capsys.readouterr().err
    assert "causal.py:15" in err
    assert "-->" in err and "flash.py" not in err.split("-->")[1].splitlines()[0]
    assert re.search(
        r"note: the tile is loaded by `kt = fd\.load\(.*\)` in fadsl's library program "
        r"\(flash\.py:\d+\), for the kernel declared here",
        err,
    ), err
    assert "block_kv = 40: choose a multiple of 16, e.g. --set block_kv=48" in err
