"""What `fadsl run`, `sim` and `verify` print (issue 13, item 8).

The report used to name loops the pipeline pass made ("loop j_pre", "j_pre_1") and
print "max rel 3.7e+01" beside PASS. It now names the loops the user wrote (with
their line), shows the figures that decide PASS/FAIL (max|err| against the bound
and how the bound is made), and leaves the relative error to meta.json.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

from fadsl.cli import main

ROOT = Path(__file__).resolve().parents[2]
SHAPE = "B=1,N=2,Sq=300,Skv=256,D=64"


def run(tmp_path: Path, *argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(list(argv))
    return code, out.getvalue().replace(str(tmp_path), "<tmp>")


def test_run_names_the_users_loops_and_the_deciding_figures(
    tmp_path: Path, golden
) -> None:  # type: ignore[no-untyped-def]
    fa2 = str(ROOT / "examples" / "fa2.py")
    argv = (
        "run",
        fa2,
        "--shape",
        SHAPE,
        "--set",
        "causal=true",
        "--set",
        "block_kv=128",  # 12 KV blocks of 128 keys, 2 skipped by the causal bound
        "-o",
        str(tmp_path / "r"),
    )
    code, text = run(tmp_path, *argv)
    assert code == 0, text
    assert "j_pre" not in text and "max rel" not in text, text
    line = next(
        n
        for n, src in enumerate(
            (ROOT / "examples" / "fa2.py").read_text().splitlines(), 1
        )
        if re.match(r"\s*for j in fd\.pipelined", src)
    )
    assert f"loop j (fa2.py:{line}): 10 of 12 iterations run, 2 (16.7%) skipped" in text
    assert re.search(r"o: max\|err\| \S+ <= bound \S+ = 2 x same-precision error", text)
    meta = json.loads((tmp_path / "r" / "meta.json").read_text())
    assert "max_rel" in meta["check"]["o"]  # still recorded, just not printed
    golden(text, "txt")


def test_run_of_a_variant_reports_kv_blocks_only(tmp_path: Path, golden) -> None:  # type: ignore[no-untyped-def]
    causal = str(ROOT / "examples" / "causal.py")
    code, text = run(
        tmp_path, "run", causal, "--shape", SHAPE, "-o", str(tmp_path / "r")
    )
    assert code == 0, text
    assert "loop " not in text and "max rel" not in text, text
    assert "KV blocks: 10 of 12 computed (16.7% skipped)" in text
    golden(text, "txt")


def test_a_failing_output_says_which_figure_fails(tmp_path: Path) -> None:
    fa2 = str(ROOT / "examples" / "fa2.py")
    small = "B=1,N=1,Sq=64,Skv=64,D=64"
    assert (
        run(tmp_path, "run", fa2, "--shape", small, "-o", str(tmp_path / "a"))[0] == 0
    )
    data = bytearray((tmp_path / "a" / "o.bin").read_bytes())
    data[0:2] = b"\x00\x3c"  # o[0] = 1.0 in fp16, far off
    data[2:4] = b"\x00\x7e"  # o[1] = NaN
    (tmp_path / "o.bin").write_bytes(bytes(data))
    a_o = str(tmp_path / "a" / "o.bin")
    code, text = run(tmp_path, "verify", str(tmp_path / "o.bin"), a_o)
    assert code == 1 and "max rel" not in text, text
    assert re.search(r"o: max\|err\| \S+ > bound \S+ = .*; 1 NaN  FAIL", text), text


def test_loops_that_skip_nothing_are_not_listed(tmp_path: Path) -> None:
    fa2 = str(ROOT / "examples" / "fa2.py")
    code, text = run(tmp_path, "run", fa2, "--shape", SHAPE, "-o", str(tmp_path / "r"))
    assert code == 0 and "loop " not in text, text
