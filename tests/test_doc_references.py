"""Docs, docstrings and data cite only files in the repository or public sources
(issue 13, item 6).

They used to cite the project's private notes (design.md, reference/ascendc.md,
native-fa.md), which a reader of the repository cannot open; each citation now names
the public repository and file (asc-devkit, ops-transformer, catlass, ...) or a file
of this repository.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRIVATE = re.compile(
    r"design\.md|reference/|ascendc\.md|native-fa\.md|anchors\.md|house-style\.md"
    r"|/work/shared|shared reference"
)
TEXT = (".md", ".py", ".json", ".h", ".j2", ".txt", ".toml", ".lark", ".fir")


def tracked() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / f for f in out if f.endswith(TEXT) and (ROOT / f).is_file()]


def test_nothing_cites_the_private_notes() -> None:
    found = []
    for path in tracked():
        if path.name == Path(__file__).name:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if PRIVATE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:120]}")
    assert not found, "citations of files not in the repository:\n" + "\n".join(found)
