"""A tile of several rows narrower than a 32-byte block ([rows, 1] f32) cannot be
stored with DataCopyPad from a dense UB tile: every row of the copy starts at a 32-byte
boundary of UB, so the generated kernel read the wrong elements (found with the LSE of
packed GQA heads, issue 18). The backend refuses it at the user's line."""

from __future__ import annotations

from pathlib import Path

import pytest

from fadsl.cli import main

COLUMN = """import fadsl as fd


@fd.kernel(default_shape=dict(B=1, N=2, Sq=64, Skv=64, D=64))
def col(
    q: fd.In("B", "N", "Sq", "D"),
    o: fd.Out("B", "N", "Sq", 1, dtype=fd.f32),
    block_q: int = 64,
):
    B, N, Sq, D = q.shape
    for b, h, i in fd.grid(B, N, fd.cdiv(Sq, block_q)):
        rows = fd.ds(i * block_q, block_q)
        m = fd.row_max(fd.cast(fd.load(q[b, h, rows, :], pad=0), fd.f32))
        fd.store(o[b, h, rows, :], m[:, None] + fd.zeros((block_q, 1), fd.f32))
"""


def test_a_column_tile_store_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "col.py").write_text(COLUMN, encoding="utf-8")
    assert main(["compile", str(tmp_path / "col.py"), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "each row is 4 bytes, not whole 32-byte blocks" in err
    assert "col.py:14" in err
