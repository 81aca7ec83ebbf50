"""Split-KV decode built with the CPU runtime (``fadsl sim --set kv_splits=3``): the
first grid's parts, ``SyncAll<false>()``, then the post-phase class that merges them.

The decode grid of issue 18 (B=4, N=32, Nkv=8 GQA or 32, D=128, Sq 1 or 4, lengths
uneven with the last of length 1, pages shuffled), causal or not, packed or not, with
and without the LSE: each passes the tolerance rule and agrees with the interpreter.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.variants.test_paged_sim import (
    EXAMPLE,
    SHAPE,
    UNPACKED,
    WITH_LSE,
    _check,
    _sim,
    pytestmark,  # noqa: F401  (needs g++ and cmake)
)

SPLIT = ["--set", "kv_splits=3"]


@pytest.mark.parametrize("sq", [1, 4])
@pytest.mark.parametrize("nkv", [8, 32])
def test_split_decode_example_in_the_cpu_runtime(
    nkv: int, sq: int, tmp_path: Path
) -> None:
    out = tmp_path / "sim"
    meta = _sim(EXAMPLE, SHAPE.format(nkv=nkv, sq=sq), out, SPLIT)
    assert meta["consts"]["kv_splits"] == 3, meta["consts"]
    _check(meta, out)


@pytest.mark.parametrize("sq", [1, 4])
@pytest.mark.parametrize("packed", [True, False])
def test_split_decode_with_lse_in_the_cpu_runtime(
    packed: bool, sq: int, tmp_path: Path
) -> None:
    src = tmp_path / "decode_lse.py"
    src.write_text(WITH_LSE if packed else UNPACKED)
    out = tmp_path / "sim"
    _check(_sim(src, SHAPE.format(nkv=8, sq=sq), out, SPLIT), out)
