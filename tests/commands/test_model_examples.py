"""``fadsl tune`` and ``fadsl timeline`` on every example: a modelled answer or a clear
refusal, never an internal error (varlen failed with ``KeyError: 'cu_seqlens_kv_s'``:
the model had no value for the sequence offsets the kernel reads at run time)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fadsl.cli import main
from fadsl.driver.source import load_source, select

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(
    p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("test_")
)
UNMODELLED = {"document_mask.py": "KV loop", "fa1.py": "KV loop"}
"""Examples the kernel model refuses, and words their message must hold: the model
needs one KV loop in the grid body (document_mask has two, fa1 three)."""


def _argv(path: Path) -> list[str]:
    """Small shapes, and block_q fixed so that tune searches 64 configurations."""
    chosen = select(load_source(str(path)), None)
    shape = {
        k: min(v, 512) if k in ("Sq", "Skv") else v
        for k, v in chosen.default_shape.items()
    }
    argv = [str(path), "--shape", ",".join(f"{k}={v}" for k, v in shape.items())]
    if "block_q" in chosen.const_defaults:
        argv += ["--set", f"block_q={chosen.const_defaults['block_q']}"]
    return argv


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("command", ["tune", "timeline"])
def test_tune_and_timeline_model_every_example(
    command: str, path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ["--top", "2"] if command == "tune" else []
    status = main([command, *_argv(path), *extra])
    out, err = capsys.readouterr()
    assert "internal error" not in err, err
    if path.name in UNMODELLED:
        assert status == 1, out + err
        assert UNMODELLED[path.name] in err and path.name in err, err
        return
    assert status == 0, out + err
    assert "MODELLED" in out


def test_varlen_is_modelled_with_sequences_of_one_length(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """B=4 sequences of 512 // 4 = 128 tokens: the timeline's task is a Q block that
    holds rows (one KV block of 128), not the grid's last block (past its sequence's
    end, no work), and the output says what the model assumed."""
    path = ROOT / "examples" / "varlen.py"
    shape = "B=4,N=2,Sq=512,Skv=512,D=64"
    argv = [str(path), "--shape", shape, "--set", "block_q=64", "--set", "block_kv=64"]
    assert main(["timeline", *argv]) == 0
    out = capsys.readouterr().out
    assert "grid point b=3, h=1, i=1) on one core of 24: 2 KV iterations" in out
    assert "all of one length, 128 query and 128 key tokens each" in out
    # K and V of a sequence are shared by its Q blocks; no two tasks read the same
    # Q block (q was counted as shared by the sequences, since its address goes
    # through cu_seqlens_q[b], not b)
    hits = out.split("L2 hits: ")[1].split("\n")[0]
    assert hits.startswith("k ") and "q " not in hits, hits
