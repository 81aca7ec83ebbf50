"""Dots wider than L0 run as sub-dots (fadsl/plan/memory/l0_split.py, issue 16 "Long KV
rounds", the cube half): the plan, what `fadsl check` and the .fir show, and the
generated kernel run by the CPU runtime against the interpreter. At block_kv = 512
S = Q K^T is split along N (each Fixpipe writes its columns of the workspace) and
P @ V along K (the sub-dots accumulate in one L0C tile)."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fadsl import cli

ROOT = Path(__file__).resolve().parents[3]

WIDE_DOTS = '''"""S = Q K^T and O = P V at block_kv = 512: dots wider than L0."""

import fadsl as fd


@fd.kernel(default_shape=dict(B=1, Sq=128, Skv=512, D=128))
def wide_dots(
    q: fd.In("B", "Sq", "D"),
    k: fd.In("B", "Skv", "D"),
    p: fd.In("B", "Sq", "Skv"),
    v: fd.In("B", "Skv", "D"),
    s: fd.Out("B", "Sq", "Skv", dtype=fd.f32),
    o: fd.Out("B", "Sq", "D", dtype=fd.f32),
    block_q: int = 128,
    block_kv: int = 512,
):
    B, Sq, D = q.shape
    for b, i in fd.grid(B, fd.cdiv(Sq, block_q)):
        rows = fd.ds(i * block_q, block_q)
        cols = fd.ds(0, block_kv)
        qt = fd.load(q[b, rows, :], pad=0)
        kt = fd.load(k[b, cols, :], pad=0)
        fd.store(s[b, rows, cols], fd.dot(qt, kt, transpose_b=True))
        pt = fd.load(p[b, rows, cols], pad=0)
        vt = fd.load(v[b, cols, :], pad=0)
        fd.store(o[b, rows, :], fd.dot(pt, vt))
'''

needs_gxx = pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("cmake") is None,
    reason="needs g++ and cmake",
)


def _program(tmp_path: Path) -> Path:
    src = tmp_path / "wide_dots.py"
    src.write_text(WIDE_DOTS, encoding="utf-8")
    return src


def test_fa2_at_block_kv_512_fits_l0_as_sub_dots(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fa2 = ROOT / "examples" / "fa2.py"
    shape = "B=1,N=8,Sq=4096,Skv=4096,D=128"
    args = ["check", str(fa2), "--target", "ascend910b2", "--shape", shape]
    cli.main(args + ["--set", "block_kv=512"])
    out = capsys.readouterr().out
    rows = {
        ln.split()[0]: ln.split()
        for ln in out.splitlines()
        if ln[:3] in ("L0A", "L0B", "L0C") and ln.split()[1] == "AIC"
    }
    for space in ("L0A", "L0B", "L0C"):
        used, cap = (int(x.replace(",", "")) for x in rows[space][2:4])
        assert used <= cap, rows[space]
    assert "%dot (fa2.py:77) runs as 4 sub-dots of 128 x 128 x 128 (4 along N)" in out
    assert "%dot_1 (fa2.py:88) runs as 8 sub-dots of 128 x 128 x 64 (8 along K)" in out


def test_check_json_lists_the_sub_dots_only_when_there_are_any(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fa2 = ROOT / "examples" / "fa2.py"
    shape = "B=1,N=8,Sq=4096,Skv=4096,D=128"
    args = ["check", str(fa2), "--target", "ascend910b2", "--shape", shape, "--json"]
    assert cli.main(args + ["--set", "block_kv=512"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["sub_dots"] == [
        {"dot": "dot", "source": "fa2.py:77", "m": 128, "n": 128, "k": 128}
        | {"counts": [1, 4, 1]},
        {"dot": "dot_1", "source": "fa2.py:88", "m": 128, "n": 128, "k": 64}
        | {"counts": [1, 1, 8]},
    ]
    assert any("single-buffered (stages 2 -> 1)" in n for n in got["notes"])
    assert cli.main(args + ["--set", "block_kv=128"]) == 0  # fits L0 and L1 whole
    assert not {"sub_dots", "notes"} & set(json.loads(capsys.readouterr().out))


def test_fa2_at_block_kv_512_single_buffers_k_and_v_to_fit_l1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fa2 = ROOT / "examples" / "fa2.py"
    shape = "B=1,N=8,Sq=4096,Skv=4096,D=128"
    args = ["check", str(fa2), "--target", "ascend910b2", "--shape", shape]
    cli.main(args + ["--set", "block_kv=512"])
    out = capsys.readouterr().out
    l1 = next(ln.split() for ln in out.splitlines() if ln.startswith("L1 "))
    assert int(l1[2].replace(",", "")) <= int(l1[3].replace(",", "")), l1
    assert "loop `j` (fa2.py:73) are single-buffered (stages 2 -> 1)" in out
    slots = {ln.split()[0]: ln.split()[6] for ln in out.splitlines() if " L1 " in ln}
    assert slots["ktQ"] == slots["vtQ"] == "1"


def test_the_model_charges_each_sub_dot() -> None:
    """The kernel model reads the plan: one MTE1 and one CUBE step per sub-dot, one
    Fixpipe per written window, and the single-buffered loads."""
    from fadsl.commands import common
    from fadsl.perf.kernel import KernelModel
    from fadsl.target import get

    ns = argparse.Namespace(
        file=str(ROOT / "examples" / "fa2.py"),
        kernel=None,
        sets=["block_kv=512", "block_q=64"],
        dtype=None,
        shape="B=1,N=8,Sq=8192,Skv=8192,D=128",
    )
    binding = common.build(ns)
    model = KernelModel(binding.kernel, get("ascend910b2")).at(binding.env())
    names = [s.name for s in model.body]
    assert model.stages == 1
    assert sum("cube dot = qt @ kt^T [" in n for n in names) == 4
    assert sum("cube dot_1 = p_1 @ vt [" in n for n in names) == 4
    fix = [s for s in model.body if s.lane == "FIXPIPE"]
    assert [s.name for s in fix].count("ws dot write (cube -> vector) [4/4]") == 1
    # Q is resident: the sub-dots of S move only K windows ([D=128 x 128] fp16)
    first = next(s for s in model.body if s.name.startswith("L1->L0 qt @ kt^T [1/4]"))
    assert dict(first.work) == {"l0b_bytes": 128 * 128 * 2}


def test_a_dot_that_fits_whole_is_not_split(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["check", str(_program(tmp_path)), "--target", "ascend910b2"]
    assert cli.main(args + ["--set", "block_kv=128"]) == 0
    assert "sub-dots" not in capsys.readouterr().out


def test_the_fir_shows_the_split_and_reads_it_back(tmp_path: Path) -> None:
    out = tmp_path / "proj"
    assert cli.main(["compile", str(_program(tmp_path)), "-o", str(out)]) == 0
    fir = (out / "wide_dots.fir").read_text()
    # split dimensions as numbers, whole ones as their extents
    assert "{transpose_b = true, l0_tile = [block_q, 128, D]}" in fir
    cpp = (out / "wide_dots_kernel.cpp").read_text()
    flat = " ".join(cpp.split())  # clang-format wraps long calls
    assert (
        "fadsl::LoadBTransposedPart(bL0Tile, kt, BLOCK_KV, nSub, 0, 128, 128);" in flat
    )
    assert (
        "dotWsGm[nSub]" in flat and '(BLOCK_KV, "FixpipeParamsV220.dstStride")' in flat
    )
    assert "false, kSub == 0});" in flat  # the K sub-dots accumulate after the first
    again = tmp_path / "again"
    fir_args = [str(out / "wide_dots.fir"), "--shape", "B=1,Sq=128,Skv=512,D=128"]
    assert cli.main(["compile", *fir_args, "-o", str(again)]) == 0
    assert (again / "wide_dots.fir").read_text() == fir


def _sim(src: Path, out: Path, shape: str) -> dict[str, dict[str, float]]:
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "--target", "ascend910b2"]
    proc = subprocess.run(
        cmd + ["--shape", shape, "-o", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((out / "meta.json").read_text())["vs_interpreter"]


def _agree(got: dict[str, dict[str, float]]) -> None:
    for name in ("s", "o"):
        a = got[name]
        assert a["nonfinite_mismatch"] == 0
        assert a["max_abs"] > 1.0
        # the same products: only the order of the f32 additions differs
        assert a["max_abs_diff"] <= 1e-5 * a["max_abs"], (name, a)


@pytest.mark.cpu_runtime
@needs_gxx
def test_sim_of_sub_dots_along_n_and_k_agrees_with_the_interpreter(
    tmp_path: Path,
) -> None:
    """Tails in Sq and Skv (300 keys of a 512-key block: the padding is zero in L1);
    a wrong Fixpipe column or destination stride, or an accumulation flag that clears
    L0C at every K sub-dot, makes s or o differ by far more than rounding."""
    _agree(_sim(_program(tmp_path), tmp_path / "sim", "B=2,Sq=200,Skv=300,D=128"))


@pytest.mark.slow
@pytest.mark.cpu_runtime
@needs_gxx
def test_sim_of_sub_dots_along_m_n_and_k_set_in_the_fir(tmp_path: Path) -> None:
    """l0_tile of a .fir: M, N and K windows together (LoadAPart at a row offset,
    LoadBPart at a column offset, Fixpipe at row and column offsets)."""
    out = tmp_path / "proj"
    assert cli.main(["compile", str(_program(tmp_path)), "-o", str(out)]) == 0
    fir = (out / "wide_dots.fir").read_text()
    fir = fir.replace(
        "{transpose_b = true, l0_tile = [128, 128, 128]}",
        "{transpose_b = true, l0_tile = [64, 256, 64]}",
    ).replace(
        "dot(%pt, %vt) {l0_tile = [128, 128, 128]}",
        "dot(%pt, %vt) {l0_tile = [64, 64, 256]}",
    )
    src = tmp_path / "wide_m.fir"
    src.write_text(fir, encoding="utf-8")
    _agree(_sim(src, tmp_path / "sim", "B=1,Sq=200,Skv=300,D=128"))


@pytest.mark.cpu_runtime
@needs_gxx
def test_sim_of_fa2_at_block_kv_512_agrees_with_the_interpreter(tmp_path: Path) -> None:
    """fa2 at block_kv = 512 on 910B2: sub-dots on the cube, K and V single-buffered in
    L1 under the workspace ring, row chunks and the deferred update on the vector
    cores; causal with tails (Sq = 333, Skv = 777: a partial second round)."""
    fa2 = ROOT / "examples" / "fa2.py"
    args = ["sim", str(fa2), "--target", "ascend910b2", "--set", "block_kv=512"]
    args += ["--set", "causal=True", "--shape", "B=1,N=2,Sq=333,Skv=777,D=128"]
    assert cli.main(args + ["-o", str(tmp_path / "sim")]) == 0
    meta = json.loads((tmp_path / "sim" / "meta.json").read_text())
    agree = meta["vs_interpreter"]["o"]
    assert agree["nonfinite_mismatch"] == 0 and agree["max_abs_diff"] <= 1e-3


def test_the_written_fir_still_compiles_at_another_head_dim(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """compile writes the planner's split into the .fir; a dimension it does not split
    is written as its extent (D), so the .fir planned at D=128 checks at D=64 (it used
    to stop with "l0_tile = [128, 128, 128] does not split this dot")."""
    out = tmp_path / "c"
    assert cli.main(["compile", str(ROOT / "examples" / "fa2.py"), "-o", str(out)]) == 0
    fir = (out / "fa2.fir").read_text()
    assert "l0_tile = [block_q, 128, D]" in fir and "l0_tile = [block_q, D, 64]" in fir
    capsys.readouterr()
    shape = "B=1,N=2,Sq=300,Skv=600,D=64"
    assert cli.main(["check", str(out / "fa2.fir"), "--shape", shape]) == 0
    shown = capsys.readouterr().out
    assert "4 sub-dots of 128 x 128 x 64 (4 along N)" in shown
