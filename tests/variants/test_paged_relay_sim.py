"""Paged decode with V read by the vector cores (``--set v_cores=2``,
``fadsl/lib/paged.py`` ``relayed``) in the CPU runtime: each AIV loads its half of
the block's V rows, copies them and hands them to the cube through GM workspace.
The output passes the tolerance rule and agrees with the interpreter, on the seeded
inputs of ``test_paged_sim.py`` (pages in a shuffled order, uneven lengths, the last
sequence of length 1, every unused row poisoned)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.variants.test_paged_sim import (
    EXAMPLE,
    ROOT,
    SHAPE,
    UNPACKED,
    _check,
    _sim,
)
from tests.variants.test_paged_sim import pytestmark as _marks

pytestmark = _marks  # needs g++ and cmake; the cpu_runtime mark


def _handovers(tmp: Path, v_cores: int) -> int:
    """GM workspaces the vector cores fill for the cube in the generated kernel."""
    out = tmp / f"gen{v_cores}"
    cmd = [sys.executable, "-m", "fadsl", "compile", str(EXAMPLE), "-o", str(out)]
    cmd += ["--quiet", "--set", f"v_cores={v_cores}"]
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
    text = (out / "decode_paged_kernel.cpp").read_text()
    return len(re.findall(r"constexpr int64_t \w+_OFFSET = .*\(vector -> cube\)", text))


def test_v_goes_over_with_p(tmp_path: Path) -> None:
    """v_cores=2 adds one vector -> cube workspace (V) to the one of P."""
    assert _handovers(tmp_path, 2) == _handovers(tmp_path, 1) + 1


def test_relayed_v_split_three_ways(tmp_path: Path) -> None:
    """The example (causal, BSND, GQA packed), blocks of two pages, kv_splits=3."""
    out = tmp_path / "sim"
    sets = ["--set", "v_cores=2", "--set", "block_kv=256", "--set", "kv_splits=3"]
    meta = _sim(EXAMPLE, SHAPE.format(nkv=8, sq=1), out, sets)
    assert meta["consts"]["v_cores"] == 2
    _check(meta, out)


def test_relayed_v_unpacked_with_lse(tmp_path: Path) -> None:
    """Heads not packed, causal, with the LSE, Sq = 4."""
    src = tmp_path / "decode_heads.py"
    src.write_text(UNPACKED)
    out = tmp_path / "sim"
    meta = _sim(src, SHAPE.format(nkv=8, sq=4), out, ["--set", "v_cores=2"])
    assert meta["consts"]["v_cores"] == 2
    _check(meta, out)
