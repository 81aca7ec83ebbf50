"""Loading a kernel file writes nothing beside it (issue 13, defect 4): no __pycache__
for the file or for a helper module it imports from its own folder, and Python's
process-wide bytecode setting is left as it was."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from fadsl.cli import main

ROOT = Path(__file__).resolve().parents[2]
FA2 = ROOT / "examples" / "fa2.py"


def test_importing_a_kernel_writes_no_bytecode_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # Python's default
    (tmp_path / "helper_for_kern.py").write_text("BLOCK = 64\n", encoding="utf-8")
    text = FA2.read_text(encoding="utf-8")
    (tmp_path / "kern.py").write_text(
        "import helper_for_kern\n" + text, encoding="utf-8"
    )
    before = sorted(os.listdir(tmp_path))
    monkeypatch.chdir(tmp_path)
    try:
        assert main(["ir", str(tmp_path / "kern.py")]) == 0
    finally:
        sys.modules.pop("helper_for_kern", None)
    assert sorted(os.listdir(tmp_path)) == before
    assert sys.dont_write_bytecode is False
