"""The prebuilt runtime library's cache entry (fadsl/backends/sim/prebuilt.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fadsl.backends.sim import prebuilt
from fadsl.errors import InternalError


def test_a_library_that_does_not_compile_is_a_fadsl_bug_and_leaves_no_entry(
    tmp_path: Path,
) -> None:
    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    root = tmp_path / "cache"
    root.mkdir()
    declared, defined = prebuilt.views(str(root))
    flags = ["-std=gnu++17", "-fno-such-option-fadsl"]
    with pytest.raises(InternalError, match="runtime library") as caught:
        prebuilt.Maker(str(root), flags, defined).finish()
    assert "fno-such-option-fadsl" in str(caught.value)
    assert prebuilt.cached(str(root), flags) is None
    assert sorted(p.name for p in root.iterdir()) == [Path(declared).parent.name]


def test_the_views_entry_is_checked_and_remade_when_edited(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "cache"
    root.mkdir()
    declared, _ = prebuilt.views(str(root))
    header = Path(declared) / "tikicpulib.h"
    text = header.read_text()
    header.write_text(text + "// edited\n")
    again, _ = prebuilt.views(str(root))
    assert again == declared
    assert header.read_text() == text
    assert "ignoring the damaged cache entry" in capsys.readouterr().err
