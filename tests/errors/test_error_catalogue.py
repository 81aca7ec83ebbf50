"""The error catalogue (docs/errors.md): every mistake's full message is a golden file.

Each mistake of ``catalogue.CATALOGUE`` is made in a scratch folder and run through the
CLI; the rendered message (paths relative to that folder) must equal
``tests/golden/test_error_catalogue/test_message-<id>.err``. docs/errors.md is rendered
from the catalogue and those files; ``pytest --update-golden`` rewrites both.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest
from catalogue import CATALOGUE, IR_SAMPLE_EDIT, Mistake

from fadsl.cli import main
from fadsl.error_codes import CODES, code_text

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "errors.md"
GOLDEN = ROOT / "tests" / "golden" / "test_error_catalogue"


def make_files(mistake: Mistake, folder: Path) -> None:
    (folder / "attn.py").write_text(mistake.kernel_text(), encoding="utf-8")
    for name, text in mistake.files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if text.startswith("zeros:"):
            path.write_bytes(bytes(int(text.split(":")[1])))
        elif text.startswith("nested:"):
            depth = int(text.split(":")[1])
            path.write_text("[" * depth + "]" * depth, encoding="utf-8")
        elif text.startswith("i32:"):
            values = [int(x) for x in text.split(":")[1].split(",")]
            path.write_bytes(
                b"".join(x.to_bytes(4, "little", signed=True) for x in values)
            )
        elif text == "IR_SAMPLE":
            sample = (ROOT / "tests" / "ir_samples" / "varlen.fir").read_text()
            path.write_text(sample.replace(*IR_SAMPLE_EDIT), encoding="utf-8")
        elif text == "IR_SAMPLE_LATIN1":
            sample = (ROOT / "tests" / "ir_samples" / "varlen.fir").read_text()
            path.write_bytes(sample.replace("%mx =", "%m\xe9x =").encode("latin-1"))
        else:
            path.write_text(text, encoding="utf-8")


def provoke(mistake: Mistake, folder: Path) -> tuple[int, str]:
    """Exit code and stderr of the mistake's command, run in ``folder`` (for an API
    mistake, 1 and the rendered FadslError its script raises)."""
    make_files(mistake, folder)
    err = io.StringIO()
    old = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = run_script(mistake, folder) if mistake.script else None
            if code is None:
                code = main(list(mistake.argv))
    finally:
        os.chdir(old)
    text = err.getvalue().replace(f"{folder}{os.sep}", "").replace(str(folder), ".")
    # A message that points into fadsl's own library shows the path from the
    # checkout (or site-packages) root, so the golden holds on every machine.
    return code, text.replace(f"{ROOT}{os.sep}", "")


def run_script(mistake: Mistake, folder: Path) -> int:
    """Run the mistake's script as golden.py; print its FadslError as the CLI does."""
    import runpy
    import sys

    from fadsl.errors import FadslError

    path = folder / "golden.py"
    path.write_text(mistake.script, encoding="utf-8")
    sys.path.insert(0, str(folder))
    try:
        runpy.run_path(str(path), run_name="__main__")
    except FadslError as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("attn", None)
    return 0


@pytest.mark.parametrize("mistake", CATALOGUE, ids=lambda m: m.id)
def test_message(mistake: Mistake, tmp_path: Path, golden) -> None:  # type: ignore[no-untyped-def]
    if mistake.needs:
        pytest.importorskip(
            mistake.needs, reason=f"this mistake's script needs {mistake.needs}"
        )
    assert mistake.id in CODES, (
        f"`{mistake.id}` has no code: add it at the end of fadsl/error_codes.py with "
        f"the next number, {max(CODES.values()) + 1}"
    )
    code, message = provoke(mistake, tmp_path)
    assert code == 1, message
    head = re.match(r"fadsl: [a-zA-Z ]*error\[(E\d+)\]: ", message)
    assert head, f"the message does not print its code:\n{message}"
    assert head[1] == code_text(mistake.id), (
        f"the message prints {head[1]}, but fadsl/error_codes.py gives "
        f"`{mistake.id}` {code_text(mistake.id)}: pass code={mistake.id!r} where "
        "this error is raised"
    )
    assert "internal error" not in message
    golden(message, "err")


def test_the_catalogue_has_at_least_20_distinct_mistakes() -> None:
    ids = [m.id for m in CATALOGUE]
    assert len(set(ids)) == len(ids) >= 20


def render_doc() -> str:
    """docs/errors.md from the catalogue and its golden messages."""
    parts = [DOC_HEADER]
    parts += [f"- {code_text(m.id)} [{m.title}](#{m.id})" for m in CATALOGUE]
    parts.append("")
    for m in CATALOGUE:
        golden = GOLDEN / f"test_message-{m.id}.err"
        message = (
            golden.read_text(encoding="utf-8") if golden.exists() else "(no golden)\n"
        )
        parts.append(
            f'<a id="{m.id}"></a>\n\n## {code_text(m.id)} {m.title}\n\nYou wrote:\n\n'
            f"<!-- run-by: {RUN_BY} -->\n"
            f"```{_lang(m)}\n{m.snippet()}\n```\n\nfadsl says:\n\n```text\n{message}```\n\n"
            f"**Fix:** {m.fix}\n"
        )
    return "\n".join(parts)


def _lang(m: Mistake) -> str:
    if m.script:
        return "python"
    if m.snippet().startswith("fadsl "):
        return "shell"
    return "text" if m.id.startswith("ir_") else "python"


RUN_BY = "tests/errors/test_error_catalogue.py"
"""Marks each mistake's snippet in docs/errors.md: this test runs it, not the docs test."""

DOC_HEADER = """\
# Error catalogue

Every mistake below is a test (`tests/errors/test_error_catalogue.py`): the message
shown is the golden file it must produce, word for word, so this page cannot drift
from what fadsl prints. Kernel mistakes are one-line edits of this small kernel,
saved as `attn.py`; paths are shown relative to the folder the command runs in.
Mistakes in calls of the Python API ([docs/api.md](api.md)) are made by a script
`golden.py` beside it, which raises the same errors, located at its call.

<!-- file: attn.py -->
```python
{base}```

As it is, it compiles, runs in the interpreter and runs as generated C++ on the CPU
runtime (each block of this page is run by a test, `tests/test_docs_code.py`):

```shell
fadsl compile attn.py -o out/attn
fadsl run attn.py -o out/run
fadsl sim attn.py -o out/sim
```

Every message has the same parts: the kind of error and its code (`usage
error[E21]`), what is wrong (what was expected, what was found), `-->` the file,
line and column, the line with a caret under the culprit, `= note:` lines with
context, and `= hint:` with a fix. Exit
status: 0 success, 1 a user error (or a numerical FAIL), 2 an argparse usage error,
70 a fadsl bug (the message says so and asks for a report), 130 interrupted, 141
stdout closed (`fadsl ... | head`). `FADSL_DEBUG=1` adds the Python traceback.

Files fadsl reads must be regular files in UTF-8 and at most: a kernel `.py` and
textual IR (`.fir`) 4 MiB each, a run folder's `meta.json` and a `--target-file`
1 MiB each (such files are a few KB; `fadsl/io/files.py`). Input `.bin` files must have exactly the size
of their tensor. A line of the user's file wider than 120 characters is shown cut
around the caret, and a message line is cut at 1,000 characters.

`fadsl explain E21` prints an entry of this page (the code as the message prints
it); `fadsl explain` lists them all. A code stays with its kind of error for good
(`fadsl/error_codes.py`): a new kind takes the next free number.

Regenerate this page and the messages with
`python3 -m pytest tests/errors --update-golden`, and review the diff.

## The mistakes
"""


def test_docs_errors_md_is_current(request: pytest.FixtureRequest) -> None:
    from catalogue import BASE

    text = render_doc().replace("{base}", BASE)
    if request.config.getoption("--update-golden"):
        DOC.write_text(text, encoding="utf-8")
        return
    assert DOC.exists() and DOC.read_text(encoding="utf-8") == text, (
        "docs/errors.md is out of date: run `python3 -m pytest tests/errors "
        "--update-golden` and review the diff"
    )
