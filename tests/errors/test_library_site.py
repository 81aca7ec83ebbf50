"""A problem found at a line of fadsl's own library program (fadsl/lib) is reported at
the user's ``fd.attention`` call, with the library line named in a note: the dot-operand
fractal check here (the API-field proof and the backend's refusals have catalogue
goldens: api_field_overflow, int8_cache_not_compiled)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from fadsl.cli import main

KERNEL = """import fadsl as fd

kernel = fd.attention(name="attn", causal=True)
"""


def test_library_fractal_refusal_points_at_the_users_call(tmp_path: Path) -> None:
    (tmp_path / "attn.py").write_text(KERNEL, encoding="utf-8")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(
            [
                "check",
                str(tmp_path / "attn.py"),
                "--shape",
                "B=1,N=2,Sq=256,Skv=256,D=64",
                "--set",
                "block_kv=40",
            ]
        )
    text = err.getvalue()
    assert code != 0
    assert "[E30]" in text
    assert re.search(r"--> .*attn\.py:3:", text), text
    assert re.search(
        r"note: the tile is loaded by `kt = fd\.load\(.*\)` in fadsl's library program "
        r"\(flash\.py:\d+\), for the kernel declared here",
        text,
    ), text
    assert "Traceback" not in text
