"""Every code block of README.md and docs/*.md runs (issue 12, defect 10).

Fenced ``python`` blocks are executed as a file (each kernel they define is also
built to IR);
fenced ``shell`` / ``sh`` / ``bash`` blocks, and indented blocks of commands, run line by
line: ``fadsl ...`` as ``python3 -m fadsl ...`` and must exit 0. The blocks of one page
run in order in one scratch folder, where ``examples/`` is the repository's. A comment
on the line before a block changes what happens to it:

- ``<!-- file: NAME -->``: the block is also saved as NAME, for the commands after it;
- ``<!-- not-run: REASON -->``: a deliberately partial or illustrative block (few);
- ``<!-- run-by: PATH -->``: another test runs it (docs/errors.md's mistakes are made
  by tests/errors/test_error_catalogue.py).

``python3 -m pip install ...`` in a command chain is the install step this suite runs
after; it is not repeated. Any other command, and a fenced block of commands without a
language, fails the test: mark it or make it runnable.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
RUN_LANGS = {"python", "shell", "sh", "bash"}
MARK = re.compile(r"^<!--\s*(file|not-run|run-by):\s*(.*?)\s*-->$")
COMMAND = re.compile(r"^(\$ )?(fadsl|python3?) ")


@dataclass(frozen=True)
class CodeBlock:
    page: Path
    line: int
    lang: str
    text: str
    mark: tuple[str, str] | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[CodeBlock]:
    """Fenced blocks, and indented blocks of commands, with the mark before each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    out: list[CodeBlock] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^(```+)\s*([\w-]*)", lines[i])
        if fence:
            end = next(
                j for j in range(i + 1, len(lines)) if lines[j].startswith(fence[1])
            )
            text = "\n".join(lines[i + 1 : end]) + "\n"
            out.append(CodeBlock(page, i + 1, fence[2], text, _mark(lines, i)))
            i = end + 1
            continue
        if _indented_start(lines, i):
            end = i
            while end < len(lines) and lines[end].startswith("    "):
                end += 1
            text = "\n".join(x[4:] for x in lines[i:end]) + "\n"
            out.append(CodeBlock(page, i + 1, "indented", text, _mark(lines, i)))
            i = end
            continue
        i += 1
    return out


def _indented_start(lines: list[str], i: int) -> bool:
    return (
        lines[i].startswith("    ")
        and (i == 0 or not lines[i - 1].strip())
        and bool(COMMAND.match(lines[i][4:]))
    )


def _mark(lines: list[str], i: int) -> tuple[str, str] | None:
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    found = MARK.match(lines[j].strip()) if j >= 0 else None
    return (found[1], found[2]) if found else None


def _runs(block: CodeBlock) -> bool:
    if block.lang in RUN_LANGS or block.lang == "indented":
        return True
    first = next((x for x in block.text.splitlines() if x.strip()), "")
    return block.lang == "" and bool(COMMAND.match(first.strip()))


# ----------------------------------------------------------------------------
# Running
# ----------------------------------------------------------------------------


def run_python(block: CodeBlock, folder: Path, name: str) -> None:
    """Run the block as the file ``name`` (kernels need their source on disk)."""
    import runpy

    from fadsl.frontend.kernel import KernelDef

    path = folder / name
    path.write_text(block.text, encoding="utf-8")
    old = os.getcwd()
    os.chdir(folder)
    try:
        scope = runpy.run_path(str(path), run_name="__doc_block__")
        for value in list(scope.values()):
            if isinstance(value, KernelDef):
                value.build()
    finally:
        os.chdir(old)


def commands(text: str) -> list[list[str]]:
    """The commands of a shell block: continuation lines joined, `&&` chains split,
    comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line.strip().removeprefix("$ "), comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            out.append(words[:cut])
            words = words[cut + 1 :]
    return [c for c in out if c]


def run_shell(block: CodeBlock, folder: Path) -> None:
    for words in commands(block.text):
        if words[:4] == ["python3", "-m", "pip", "install"]:
            continue  # the install step: this suite runs in the installed checkout
        if words[0] == "fadsl":
            argv = [sys.executable, "-m", "fadsl"] + words[1:]
        elif words[:3] == ["python3", "-m", "fadsl"]:
            argv = [sys.executable] + words[1:]
        else:
            pytest.fail(
                f"{block.where}: `{shlex.join(words)}` is not a fadsl command; "
                "run it some other way and mark the block <!-- not-run: why -->"
            )
        proc = subprocess.run(  # conftest points PYTHONPATH at this checkout
            argv, cwd=folder, capture_output=True, text=True, timeout=1200
        )
        assert proc.returncode == 0, (
            f"{block.where}: `{shlex.join(words)}` exited {proc.returncode}\n"
            f"{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        )


# ----------------------------------------------------------------------------
# Tests
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_code_block_of_the_page_runs(page: Path, tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    for block in blocks(page):
        if not _runs(block):
            continue
        kind, value = block.mark or ("", "")
        if kind in ("not-run", "run-by"):
            assert value, f"{block.where}: say why in the <!-- {kind}: ... --> mark"
            if kind == "run-by":
                assert (ROOT / value).is_file(), f"{block.where}: no test {value}"
            continue
        assert block.lang, (
            f"{block.where}: a fenced block of commands needs a language (shell) "
            "or a <!-- not-run: why --> mark"
        )
        if kind == "file":
            (tmp_path / value).write_text(block.text, encoding="utf-8")
        if block.lang == "python":
            run_python(block, tmp_path, value if kind == "file" else "block.py")
        else:
            run_shell(block, tmp_path)


def test_few_blocks_are_marked_not_run() -> None:
    marked = [
        b.where for p in PAGES for b in blocks(p) if (b.mark or ("",))[0] == "not-run"
    ]
    assert len(marked) <= 5, marked


def test_the_extractor_finds_marks_chains_and_indented_commands(
    tmp_path: Path,
) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Intro:\n\n    fadsl run a.py -o out && fadsl verify out out\n\n"
        "<!-- not-run: partial -->\n```python\n...\n```\n\n```\nfadsl ir a.py\n```\n"
        "\n```text\nfadsl: error\n```\n",
        encoding="utf-8",
    )
    found = blocks(page)
    assert [(b.lang, b.mark) for b in found] == [
        ("indented", None),
        ("python", ("not-run", "partial")),
        ("", None),
        ("text", None),
    ]
    assert commands(found[0].text) == [
        ["fadsl", "run", "a.py", "-o", "out"],
        ["fadsl", "verify", "out", "out"],
    ]
    assert [_runs(b) for b in found] == [True, True, True, False]
