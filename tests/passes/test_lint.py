"""The lint flags exp of unnormalised 16-bit scores, and not the FA2 pattern."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

RISKY = textwrap.dedent("""
    import fadsl as fd

    @fd.kernel
    def naive(q: fd.In("S D"), o: fd.Out("S D"), block: int = 16):
        S, D = q.shape
        for i in fd.grid(fd.cdiv(S, block)):
            qt = fd.load(q[fd.ds(i * block, block), :], pad=0)
            e = fd.exp(qt)
            fd.store(o[fd.ds(i * block, block), :], e)
""")


def test_exp_of_fp16_tile_warns_with_location(tmp_path: Path) -> None:
    src = tmp_path / "naive.py"
    src.write_text(RISKY)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fadsl",
            "run",
            str(src),
            "--shape",
            "S=32,D=16",
            "-o",
            str(tmp_path / "out"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "fadsl: warning: exp of an unnormalised f16 tile" in proc.stderr
    assert "naive.py:9" in proc.stderr
    assert "subtract the row maximum" in proc.stderr


def test_fa2_has_no_lint_warning() -> None:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import fa2
    finally:
        sys.path.pop(0)
    from fadsl.passes import lint

    for dtype in ("fp16", "bf16"):
        from fadsl.ir.types import DType

        assert lint.warnings(fa2.fa2.build({"causal": True}, DType.parse(dtype))) == []
