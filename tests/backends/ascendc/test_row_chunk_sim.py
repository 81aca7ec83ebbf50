"""Row chunks (plan/memory/row_chunk.py) in the generated kernel, run by the CPU runtime
against the interpreter. Chunking is forced with ``row_chunk = 16`` in the .fir (64
rows per vector core at block_q = 128: four chunks) at shapes where whole rows fit,
so the chunk loop runs where it is cheap to build. On ascend910b1, the target of the
suite's other sims: its runtime library and precompiled header are shared (the chip's
memory sizes and core counts are ascend910b2's). A chunk loop that addresses the
loop-carried rows at a wrong offset must be caught."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fadsl import cli
from fadsl.backends.ascendc import vector_chunk

ROOT = Path(__file__).resolve().parents[3]
TARGET = "ascend910b1"
HEAD = "pipelined(stages = 2, ring = 3, defer_update = true"

pytestmark = [
    pytest.mark.cpu_runtime,
    pytest.mark.skipif(
        shutil.which("g++") is None or shutil.which("cmake") is None,
        reason="needs g++ and cmake",
    ),
]


def _chunked_fir(tmp: Path, example: str, *sets: str, late: bool = True) -> Path:
    """The .fir ``compile`` writes for ``example``, with row_chunk = 16 on its loop
    (and its update not deferred unless ``late``)."""
    args = ["compile", str(ROOT / "examples" / f"{example}.py"), "-o", str(tmp / "c")]
    if example == "fa2" and not any(s.startswith("block_kv=") for s in sets):
        sets = ("block_kv=128", *sets)  # 128-key rounds: the whole rows would fit
    for s in sets:
        args += ["--set", s]
    assert cli.main(args + ["--target", TARGET]) == 0
    fir = tmp / "c" / f"{example}.fir"
    text = fir.read_text()
    assert text.count(HEAD) == 1  # the deferred update is on
    out = tmp / f"{example}.fir"
    head = HEAD if late else HEAD.replace("true", "false")
    out.write_text(text.replace(HEAD, head + ", row_chunk = 16"))
    return out


def _sim(tmp: Path, fir: Path, shape: str) -> dict:
    """Runs ``fadsl sim`` of ``fir``; each output's |sim - interpreter| (meta.json)."""
    args = ["sim", str(fir), "--target", TARGET, "--shape", shape]
    assert cli.main(args + ["-o", str(tmp / "sim")]) == 0
    return json.loads((tmp / "sim" / "meta.json").read_text())["vs_interpreter"]


def _agree(diffs: dict) -> bool:
    """Within one f16 ulp of each output's largest value (the two run the same
    operations in the same order; one rounding of the output may differ)."""
    return all(
        d["nonfinite_mismatch"] == 0
        and d["max_abs_diff"] <= 2.0**-10 * max(d["max_abs"], 1.0)
        for d in diffs.values()
    )


@pytest.mark.parametrize(
    "shape",
    [
        "B=1,N=2,Sq=333,Skv=200,D=64",  # tails; the first 133 rows see no key
        "B=2,N=1,Sq=1,Skv=300,D=64",  # Sq = 1: one valid row in the first chunk
    ],
)
def test_causal_fa2_in_row_chunks_agrees_with_the_interpreter(
    tmp_path: Path, shape: str
) -> None:
    fir = _chunked_fir(tmp_path, "fa2", "causal=True")
    assert _agree(_sim(tmp_path, fir, shape))


def test_gqa_in_row_chunks_agrees_with_the_interpreter(tmp_path: Path) -> None:
    fir = _chunked_fir(tmp_path, "gqa")
    diffs = _sim(tmp_path, fir, "B=1,N=4,Nkv=2,Sq=130,Skv=260,D=64")
    assert set(diffs) == {"o", "lse"} and _agree(diffs)


def test_a_wrong_chunk_offset_fails_against_the_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every chunk addresses m, l, acc and alpha at the first chunk's rows. (The
    sanitizer stops this kernel earlier, at a read of rows no chunk wrote; it is off
    here so that the numbers themselves are shown to differ.)"""
    monkeypatch.setenv("FADSL_SANITIZE", "0")
    monkeypatch.setattr(vector_chunk, "offset", lambda e, name: "")
    monkeypatch.setattr(vector_chunk, "rows_offset", lambda e, v: "")
    fir = _chunked_fir(tmp_path, "fa2", "causal=True")
    diffs = _sim(tmp_path, fir, "B=1,N=2,Sq=333,Skv=200,D=64")
    assert not _agree(diffs)


@pytest.mark.slow  # one more build; the update then reads alpha kept whole by the region
def test_fa2_in_row_chunks_without_the_deferred_update_agrees(tmp_path: Path) -> None:
    fir = _chunked_fir(tmp_path, "fa2", late=False)
    assert _agree(_sim(tmp_path, fir, "B=1,N=2,Sq=200,Skv=300,D=64"))
