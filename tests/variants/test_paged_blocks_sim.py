"""KV blocks of several pages built with the CPU runtime (``fadsl sim``).

One build each for 2 and 4 pages per block. The inputs are written out, not seeded:
pages dealt in a shuffled order, lengths not multiples of the page, one of length 1,
last blocks with fewer pages than the block holds, and every block-table column a
sequence does not use poisoned with -1 (no page). The table has an odd number of
columns, so the last block of the full-length last sequence reaches past the table's
end: past the end of the ``block_table`` buffer. A kernel that read a column past a
sequence's last page would stop at its guard (``AscendC::Trap()``) or at the CPU
runtime's bounds check of the GM read.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.variants.test_paged_sim import (
    EXAMPLE,
    ROOT,
    UNPACKED,
    pytestmark,  # noqa: F401  (needs g++ and cmake)
)

PAGE = 128


def _write_inputs(source: Path, shape: str, lengths: list[int], folder: Path) -> None:
    """Seeded q and cache; the block table and lengths above."""
    from fadsl.commands import common
    from fadsl.io import runio

    args = argparse.Namespace(
        file=str(source), kernel=None, sets=[], dtype=None, shape=shape
    )
    binding = common.build(args)
    data = runio.make_inputs(binding, 0)
    b, mp = binding.shape["B"], binding.shape["MaxPages"]
    table = np.random.default_rng(3).permutation(binding.shape["Pages"])[: b * mp]
    used = np.arange(mp)[None, :] < -(-np.array(lengths)[:, None] // PAGE)
    data["block_table"] = np.where(used, table.reshape(b, mp), -1).astype(np.int32)
    data["seqlens_kv"] = np.array(lengths, np.int32)
    folder.mkdir()
    for name, arr in data.items():
        arr.tofile(folder / f"{name}.bin")


def _sim(source: Path, shape: str, lengths: list[int], sets: list[str], tmp: Path):  # type: ignore[no-untyped-def]
    _write_inputs(source, shape, lengths, tmp / "in")
    cmd = [sys.executable, "-m", "fadsl", "sim", str(source), "--shape", shape]
    cmd += [x for s in sets for x in ("--set", s)]
    cmd += ["--inputs", str(tmp / "in"), "-o", str(tmp / "out")]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((tmp / "out" / "meta.json").read_text())
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    for name, agree in meta["vs_interpreter"].items():
        assert agree["nonfinite_mismatch"] == 0, name
        assert agree["max_abs_diff"] <= (4 * 2.0**-10 if name == "o" else 1e-5), agree
    return meta


def test_two_pages_per_block_split_three_ways(tmp_path: Path) -> None:
    """The example (causal, BSND, GQA heads packed) with block_kv = 2 pages and
    kv_splits = 3, MaxPages = 5: 517 keys are blocks of 2, 2 and 1 pages (5 keys in
    the last page), 300 keys 2 and 1; the 640-key sequence's last block would read
    column 5 of a table of 5 columns, its last row."""
    shape = "B=4,N=32,Nkv=8,Sq=1,D=128,Pages=32,MaxPages=5"
    meta = _sim(
        EXAMPLE,
        shape,
        [517, 300, 1, 640],
        ["block_kv=256", "kv_splits=3"],
        tmp_path,
    )
    assert meta["consts"]["block_kv"] == 256 and meta["consts"]["kv_splits"] == 3


@pytest.mark.slow
def test_four_pages_per_block_unpacked_with_lse(tmp_path: Path) -> None:
    """Heads not packed, causal, with the LSE, Sq = 4, block_kv = 4 pages (D = 64, so
    a 512-key block fits L0B without sub-dots): 300 keys are one block of 3 pages, 768 keys (MaxPages
    = 6) two blocks whose second would read columns 6 and 7 of the last row."""
    src = tmp_path / "decode_heads.py"
    src.write_text(UNPACKED)
    shape = "B=3,N=8,Nkv=2,Sq=4,D=64,Pages=24,MaxPages=6"
    meta = _sim(src, shape, [300, 1, 768], ["block_kv=512"], tmp_path)
    assert meta["consts"]["block_kv"] == 512
