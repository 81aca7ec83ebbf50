"""(s, g) packing of a paged decode kernel (BNSD, GQA heads packed): the rows of one Q
tile are the pairs (query head g, position s) of one KV head's group, row g * Sq + s,
so a task reads each page once for every position of its group (``fadsl/lib/paged.py``,
docs/decode.md "GQA packing").

In the interpreter against the float64 reference that gathers the pages itself: rows
past the group (a tail), a group spanning two tiles whose second starts in the middle
of a head's positions, causal and window masks that use each row's own position,
softcap, bf16, the LSE and split-KV's merge. In the model: one task per block_q rows of
a group, and the pages read once for all positions. One build in the CPU runtime.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fadsl import target as targets
from fadsl.backends.interp import interpret
from fadsl.driver.binding import Binding
from fadsl.io import runio
from fadsl.io.input_checks import check_index_inputs
from fadsl.ir.types import DType
from fadsl.passes import run_pipeline
from tests.variants.test_paged import SHAPE, _inputs, _kernel, _passes
from attkit import symbol_values

BNSD = """import fadsl as fd

kernel = fd.attention(name="decode_bnsd", paged_kv=True, page_size=128, causal=True,
                      return_lse=True)
"""
CASES = [  # (shape, kernel keywords, kv_splits, dtype)
    # G=3, Sq=4: 12 rows of a 16-row tile, the last 4 a tail
    (dict(N=24, Sq=4), dict(causal=True, return_lse=True), 3, DType.F16),
    # G=4, Sq=5: 20 rows, two tiles; the second holds 4 rows and a tail of 12
    (dict(Sq=5), dict(causal=True, window=(200, 0), return_lse=True), 1, DType.F16),
    # MQA, G=8, Sq=3: 24 rows; the second tile starts at head 5, position 1
    (dict(N=8, Nkv=1, Sq=3), dict(softcap=5.0, return_lse=True), 3, DType.BF16),
]


def run(kdef: Any, shape: dict[str, int], splits: int, dtype: DType) -> Any:
    kernel = kdef.build({"block_q": 16, "kv_splits": splits}, dtype)
    kdef.check_shape(shape)
    b = Binding(kernel, symbol_values(kernel, shape), {}, kdef)
    data = runio.make_inputs(b, 0)
    data.update(_inputs(shape))
    check_index_inputs(b, data)
    out = interpret(run_pipeline(kernel), b.env(), data).outputs
    return out, runio.check_outputs(b, data, out)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_packed_positions_pass_the_tolerance_rule(case: int) -> None:
    shape, kw, splits, dtype = CASES[case]
    out, check = run(_kernel(**kw), dict(SHAPE, **shape), splits, dtype)
    _passes(check)
    assert np.isfinite(out["o"].astype(np.float32)).all()
    # a causal row sees no key when its position i has i + len - Sq < 0
    sq, lengths = shape["Sq"], _inputs(dict(SHAPE, **shape))["seqlens_kv"]
    empty = np.arange(sq)[None, :] + lengths[:, None] - sq < 0
    empty = np.broadcast_to(
        empty[:, None, :] & kw.get("causal", False), out["lse"].shape
    )
    np.testing.assert_array_equal(np.isneginf(out["lse"]), empty)


def _source(tmp_path: Path) -> Path:
    src = tmp_path / "decode_bnsd.py"
    src.write_text(BNSD)
    return src


def _model(src: Path, sq: int, b: int = 4) -> Any:
    from fadsl.commands import common
    from fadsl.perf.kernel import KernelModel

    t = targets.get("ascend910b2")
    args = argparse.Namespace(
        file=str(src),
        kernel=None,
        sets=[],
        dtype=None,
        shape=f"B={b},N=32,Nkv=8,Sq={sq},D=128,Pages={b * 64},MaxPages=64",
    )
    binding = common.build(args)
    return KernelModel(binding.kernel, t).estimate(binding.model_env())


def test_a_task_reads_each_page_once_for_all_positions(tmp_path: Path) -> None:
    """Sq=4, G=4: a group's 16 rows are one task (B * Nkv tasks, as for Sq=1; one
    position per task made B * Nkv * Sq), and the modelled K/V reads and time equal
    Sq=1's: each page is read once per (b, head group)."""
    src = _source(tmp_path)
    one, four = _model(src, 1), _model(src, 4)
    assert four.tasks == one.tasks == 4 * 8
    assert four.l2_bytes <= 1.01 * one.l2_bytes, (four.l2_bytes, one.l2_bytes)
    assert four.time_s <= 1.05 * one.time_s, (four.time_s, one.time_s)


@pytest.mark.cpu_runtime
@pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("cmake") is None,
    reason="needs g++ and cmake",
)
def test_packed_positions_in_the_cpu_runtime(tmp_path: Path) -> None:
    """Sq=4 packed (G=3: a tail of 4 rows), causal, LSE, kv_splits=3."""
    from tests.variants.test_paged_sim import _check, _sim

    src = _source(tmp_path)
    shape = "B=4,N=24,Nkv=8,Sq=4,D=128,Pages=32,MaxPages=8"
    out = tmp_path / "sim"
    meta = _sim(src, shape, out, ["--set", "kv_splits=3"])
    assert meta["consts"]["kv_splits"] == 3, meta["consts"]
    _check(meta, out)


def test_a_view_moves_rows_across_heads(tmp_path: Path) -> None:
    """tests/ir_samples/view.fir copies q to o in blocks of 16 rows of [B, N * S, D]
    (7 positions a head: blocks start inside heads; the last is a tail)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    sample = root / "tests" / "ir_samples" / "view.fir"
    cmd = [sys.executable, "-m", "fadsl", "run", str(sample), "--shape"]
    cmd += ["B=2,N=3,S=7,D=16", "-o", str(tmp_path)]
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    q, o = (np.fromfile(tmp_path / f"{n}.bin", np.float16) for n in ("q", "o"))
    assert q.size == 2 * 3 * 7 * 16 and np.array_equal(q, o)
