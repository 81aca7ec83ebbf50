"""``fadsl compile --configs``: an attribute whose default depends on a fixed dim
(``scale = D ** -0.5``) cannot have one default in the shared OpDef, so it is REQUIRED
there; one that every key agrees on keeps it (``backends/ascendc/op_multi.py``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _scale_attr(tmp_path: Path, configs: str) -> str:
    out = tmp_path / "pkg"
    cmd = [sys.executable, "-m", "fadsl", "compile", "examples/fa2.py", "--kernel"]
    cmd += ["fa2", "--configs", configs, "-o", str(out), "--quiet"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    host = (out / "op" / "op_host" / "fa2.cpp").read_text()
    hit = re.search(r'this->Attr\("scale"\)[^;]*;', host)
    assert hit is not None, host[-2000:]
    return hit.group(0)


@pytest.mark.parametrize(
    "configs, expected",
    [
        (
            "dtype=fp16,D=64;dtype=fp16,D=128",
            'this->Attr("scale").AttrType(REQUIRED).Float();',
        ),
        (
            "dtype=fp16,D=64;dtype=bf16,D=64",
            'this->Attr("scale").AttrType(OPTIONAL).Float(0.125f);',
        ),
    ],
)
def test_a_default_the_keys_disagree_on_is_required(
    tmp_path: Path, configs: str, expected: str
) -> None:
    assert _scale_attr(tmp_path, configs) == expected
