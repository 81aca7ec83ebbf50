"""The README's and docs' commands, run in a clone, leave nothing git shows as new,
and their install lines work from a clone and from a wheel.

Every output folder or file a command names (``-o``, ``--output``, ``pip wheel -w``)
must be one .gitignore covers; ``fadsl compile`` without ``-o`` writes
``generated/<kernel>/``, checked in for ``examples/`` only, so other files need ``-o``.
fadsl is not on PyPI, so no line installs it by name; PyTorch comes from its CPU index.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from test_docs_code import PAGES, blocks, commands

ROOT = Path(__file__).resolve().parents[1]
OUTPUT_FLAGS = {"-o", "--output"}
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _commands() -> list[tuple[str, list[str]]]:
    """(where, words) of every command in a shell-like block a user would run: the
    catalogue's mistakes (``run-by``) are left out, ``not-run`` blocks are not."""
    out = []
    for page in PAGES:
        for block in blocks(page):
            if block.lang not in ("shell", "sh", "bash", "indented", ""):
                continue
            if (block.mark or ("",))[0] == "run-by":
                continue
            try:
                found = commands(block.text)
            except ValueError:  # a block of prose or a tree, not commands
                continue
            out += [(block.where, w) for w in found if w[0] in ("fadsl", "python3")]
    return out


def _fadsl(words: list[str]) -> list[str] | None:
    if words[0] == "fadsl":
        return words[1:]
    if words[:3] == ["python3", "-m", "fadsl"]:
        return words[3:]
    return None


def _outputs(words: list[str]) -> list[str]:
    args = _fadsl(words)
    if args is None:
        if words[:4] == ["python3", "-m", "pip", "wheel"] and "-w" in words:
            return [words[words.index("-w") + 1]]
        return []
    found = [args[i + 1] for i, w in enumerate(args[:-1]) if w in OUTPUT_FLAGS]
    if args[0] == "compile" and not found:
        kernel = next((w for w in args[1:] if not w.startswith("-")), "")
        if not kernel.startswith("examples/"):
            found.append(f"generated/<kernel of {kernel}>")
    return found


@pytest.mark.skipif(
    not (ROOT / ".git").exists() or shutil.which("git") is None,
    reason="needs the git checkout",
)
def test_what_the_docs_commands_write_is_ignored() -> None:
    loose = []
    for where, words in _commands():
        for path in _outputs(words):
            folder = "." not in Path(path).name  # a picture file, or a folder
            asked = path.rstrip("/") + "/" if folder else path
            ignored = subprocess.run(
                ["git", "check-ignore", "-q", "--no-index", asked], cwd=ROOT
            )
            if ignored.returncode != 0:
                loose.append(f"{where}: `{shlex.join(words)}` writes {path}")
    assert not loose, (
        "outputs .gitignore does not cover (write them under out/, or add them to "
        ".gitignore):\n" + "\n".join(loose)
    )


def test_the_docs_commands_were_found() -> None:
    writers = [w for _, w in _commands() if _outputs(w)]
    assert len(writers) >= 6, writers
    assert ["python3", "-m", "pip", "wheel"] in [w[:4] for w in writers]


def _installs() -> list[tuple[str, list[str]]]:
    return [
        (where, words)
        for where, words in _commands()
        if words[:4] == ["python3", "-m", "pip", "install"]
    ]


def test_install_lines_work_from_a_clone_and_a_wheel() -> None:
    """No line installs fadsl by name (it is not on PyPI); fadsl comes from the clone
    (``.``) or a wheel file; torch from its CPU index."""
    wrong = []
    for where, words in _installs():
        targets = [w for w in words[4:] if not w.startswith("-")]
        targets = [t for t in targets if t != CPU_INDEX]
        for t in targets:
            name = t.split("[", 1)[0]
            from_clone = name in (".", "./")
            from_wheel = name.endswith(".whl") or "dist/fadsl-" in name
            if name.startswith("torch"):
                if CPU_INDEX not in words:
                    wrong.append(f"{where}: {t} without --index-url {CPU_INDEX}")
            elif not (from_clone or from_wheel):
                wrong.append(f"{where}: `{t}` is neither the clone nor a wheel")
    assert not wrong, "\n".join(wrong)
    shown = " ".join(shlex.join(w) for _, w in _installs())
    assert "-e '.[torch]'" in shown and ".whl)[torch]" in shown, shown
    assert f"torch --index-url {CPU_INDEX}" in shown, shown
