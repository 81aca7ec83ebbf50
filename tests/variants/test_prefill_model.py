"""bench/prefill_model.py (MODELLED): what docs/decode.md "Chunked prefill" states of
the model. At B=1 the chunked-prefill kernel is within 5% of the same attention on
contiguous K and V and well ahead of the decode program with (s, g) packing (which
reads every page for every tile); with several chunks its grid's Q blocks past each
chunk cost it at most 15%."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_modelled_prefill_rows() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from prefill_model import rows
    finally:
        sys.path.remove(str(ROOT / "bench"))
    table = {(b, name): (s, tasks) for b, _, _, name, s, tasks, _, _ in rows()}
    dense = {b: s for (b, name), (s, _) in table.items() if name == "contiguous"}
    tnd = {b: table[(b, "prefill (TND)")] for b in dense}
    assert tnd[1][0] <= 1.05 * dense[1]
    assert tnd[1][0] <= 0.8 * table[(1, "paged BNSD, (s, g)")][0]
    for b in (4, 8):
        assert tnd[b][0] <= 1.15 * dense[b]
        assert tnd[b][1] > table[(b, "paged BNSD, heads")][1]  # the empty Q blocks
