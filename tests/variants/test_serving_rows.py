"""bench/serving_rows.py (MODELLED): issue 30's rows of bench/decode_model.py. The append
row is a PROXY (the kernel model refuses the append kernel's three KV loops): the
unpacked paged decode kernel at the append kernel's defaults, one task per query head."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_append_proxy_rows() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from serving_rows import N, append_rows
    finally:
        sys.path.remove(str(ROOT / "bench"))
    rows = append_rows()
    assert [r[0] for r in rows] == ["append PROXY"] * 2
    for case, b, sq, skv, tasks, time, hbm, tflops in rows:
        assert int(tasks) == int(b) * N  # unpacked, no split-KV
        assert 0 < float(hbm) < 1 and time.endswith(" us")
    # more sequences fill more of the 24 cores: a larger fraction of HBM
    assert float(rows[1][6]) > float(rows[0][6])


def test_the_model_refuses_the_append_kernel_itself() -> None:
    """Why the row is a proxy: if this starts to pass, model the kernel itself."""
    import fadsl as fd
    from fadsl import target as targets
    from fadsl.errors import UsageError
    from fadsl.perf.kernel import KernelModel

    kdef = fd.attention(name="app", paged_kv=True, page_size=128, append_kv=True)
    with pytest.raises(UsageError, match="one KV loop"):
        KernelModel(kdef.build({}), targets.get("ascend910b2"))
