"""Vector tiles of two row blocks (plan/memory/row_split.py): the backward's P and dS are
[block_q, block_kv] tiles, its dK/dV accumulators [block_kv, D] dots whose M is block_kv.
Each tile is split between the two AIVs by its own row block; a [block_kv] vector used
as columns (kv_idx[None, :]) stays whole. `fadsl sim` of a backward that computes dK
and dV only (dQ needs atomic_add, lowered separately) runs the generated kernel against
the interpreter and the float64 gradients, with tails in Sq and Skv."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fadsl import target as targets
from fadsl.driver.binding import bind
from fadsl.driver.lower import lower
from fadsl.driver.source import load_source, select
from fadsl.ir import nodes as ir
from fadsl.ir.expr import isym
from fadsl.plan.memory.plan_buffers import Lowering
from fadsl.plan.schedule.sides import walk

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "fa2_bwd.py"

DQ_LINES = (
    "            fd.atomic_add(dq[b, h, rows, :], fd.dot(ds, kt) * scale)\n",
    '    dq: fd.Out("B", "N", "Sq", "D"),\n',
)


def dk_dv_only() -> str:
    """The example without dQ (its reference's dq is then not compared)."""
    text = EXAMPLE.read_text(encoding="utf-8")
    for line in DQ_LINES:
        assert text.count(line) == 1, line
        text = text.replace(line, "")
    return text


def _values(kernel: ir.Kernel) -> dict[str, ir.Value]:
    grid = next(op for op in kernel.body if isinstance(op, ir.Grid))
    return {r.name: r for op in walk(grid.body) for r in op.results()}


def _lowering(target: str) -> Lowering:
    shape = dict(B=1, N=2, Sq=256, Skv=256, D=64)
    chosen = select(load_source(str(EXAMPLE)), "fa2_bwd")
    low = lower(bind(chosen, lambda k, d: dict(shape), target=targets.get(target)))
    assert low.lowering is not None
    return low.lowering


def test_each_tile_is_split_by_its_own_row_block() -> None:
    low = _lowering("ascend910b2")
    bq, bkv = isym("block_q"), isym("block_kv")
    assert low.split.blocks == (bq, bkv)
    values = _values(low.kernel)
    # scores and P: [block_q, block_kv], split by block_q
    assert low.core_shape(values["p"]) == (bq / 2, bkv)
    # the dot results dV and dK accumulate: [block_kv, D], split by block_kv
    assert low.split.block_of(values["dot_3"]) == bkv  # dV's dot
    assert low.core_shape(values["dot_4"])[0] == bkv / 2  # dK's dot
    # kv_idx is a row of columns (kv_idx[None, :]): every AIV holds all of it
    assert "kv_idx" in low.split.whole
    assert low.core_shape(values["kv_idx"]) == (bkv,)
    # q_idx and delta are row vectors of the Q block
    assert low.core_shape(values["q_idx"]) == (bq / 2,)
    assert low.core_shape(values["delta"]) == (bq / 2,)


def test_a_coupled_chip_splits_nothing() -> None:
    low = _lowering("ascend910a")
    assert low.split.blocks == ()


@pytest.mark.cpu_runtime
@pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("cmake") is None,
    reason="needs g++ and cmake",
)
@pytest.mark.parametrize(
    "dtype, causal, shape",
    [
        ("fp16", False, "B=1,N=2,Sq=300,Skv=200,D=64"),
        ("bf16", True, "B=2,N=1,Sq=150,Skv=230,D=64"),
    ],
)
def test_sim_of_dk_dv_agrees_with_the_interpreter(
    tmp_path: Path, dtype: str, causal: bool, shape: str
) -> None:
    src = tmp_path / "dkdv.py"
    src.write_text(dk_dv_only(), encoding="utf-8")
    out = tmp_path / "sim"
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "--dtype", dtype]
    cmd += ["--set", f"causal={causal}", "--shape", shape, "-o", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout  # the section-4 rule against the float64 gradients
    meta = json.loads((out / "meta.json").read_text())
    for g in ("dk", "dv"):
        agree = meta["vs_interpreter"][g]
        assert agree["nonfinite_mismatch"] == 0
        # both run the same f32 products; the sums differ in order, and the output
        # rounds to fp16/bf16 once: at most a unit or so in its last place
        assert agree["max_abs"] > 0.05
        assert agree["max_abs_diff"] <= 2**-7 * agree["max_abs"]


@pytest.mark.cpu_runtime
@pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("cmake") is None,
    reason="needs g++ and cmake",
)
def test_sim_of_the_backward_with_a_kv_tail_has_finite_dq(tmp_path: Path) -> None:
    """dP = dO V^T reads V's tail rows as columns of dP that no mask removes: the cube
    zeroes the tail of every pad=0 load, as the interpreter pads (dQ was all NaN)."""
    out = tmp_path / "sim"
    cmd = [sys.executable, "-m", "fadsl", "sim", str(EXAMPLE)]
    cmd += ["--shape", "B=1,N=2,Sq=150,Skv=200,D=64", "-o", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    for g in ("dq", "dk", "dv"):
        agree = meta["vs_interpreter"][g]
        assert agree["nonfinite_mismatch"] == 0, g
        # dQ's f32 atomic sums add in another order than the interpreter's
        assert agree["max_abs_diff"] <= 2**-7 * agree["max_abs"], g


BLOCK_MASKED = """import fadsl as fd


def same_doc(b, h, q_idx, kv_idx):
    return (q_idx // 100) == (kv_idx // 100)


kernel = fd.attention_backward(name="bwd_doc", mask_mod=same_doc)
"""


def test_the_loops_of_a_block_masked_backward_share_l1_queues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its cut and whole KV-block loops each hold Q, dO, P and dS in L1: one queue per
    operand overflowed the TPipe's 8 event IDs (plan/memory/l1_share.py)."""
    from fadsl.cli import main

    (tmp_path / "bwd.py").write_text(BLOCK_MASKED, encoding="utf-8")
    argv = ["check", str(tmp_path / "bwd.py"), "--target", "ascend910b2"]
    argv += ["--shape", "B=1,N=8,Nkv=2,Sq=300,Skv=200,D=64", "--set", "block_q=64"]
    code = main(argv)
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    assert "bwd_doc fits on ascend910b2" in out.out
    l1 = [x for x in out.out.splitlines() if " L1 " in x and "operand" in x]
    # K, V; Q, dO, P and dS: dS is made before dV's matmul reads P (three cube/vector
    # hand-overs per Q step instead of five), so P and dS are live together
    assert len(l1) == 6, l1


def test_the_loops_of_a_block_masked_backward_share_flag_ids(tmp_path: Path) -> None:
    """16 exchanges in two loops: 8 flag IDs, below SyncAll's 11-14 (flag_ids.py)."""
    (tmp_path / "bwd.py").write_text(BLOCK_MASKED, encoding="utf-8")
    out = tmp_path / "gen"
    cmd = [sys.executable, "-m", "fadsl", "compile", str(tmp_path / "bwd.py")]
    cmd += ["--set", "block_q=64", "--set", "block_kv=64", "-o", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    text = (out / "bwd_doc_kernel.cpp").read_text()
    ids = re.findall(r"constexpr uint16_t FLAG_\w+ =\s*(\d+);", text)
    assert len(ids) == 16
    assert sorted(set(int(i) for i in ids)) == list(range(8))
