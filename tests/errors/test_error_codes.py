"""Error codes (fadsl/error_codes.py): stable, one per kind, and printed by the messages.

test_error_catalogue.py checks that each catalogued mistake's message prints its code;
here: no two kinds share a number, numbers only grow (a new kind is appended), the
catalogue and the registry hold the same kinds, every ``code=`` in fadsl names a
registered kind, and ``fadsl explain`` finds every code's entry in docs/errors.md.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path

import pytest
from catalogue import CATALOGUE

from fadsl.cli import main
from fadsl.error_codes import CODES, code_text, name_of
from fadsl.errors import FadslError, UsageError

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "fadsl"
DOC = ROOT / "docs" / "errors.md"


def test_no_two_kinds_share_a_number() -> None:
    numbers = list(CODES.values())
    shared = {n for n in numbers if numbers.count(n) > 1}
    assert not shared, f"kinds sharing a number: {sorted(shared)}"
    assert all(n > 0 for n in numbers)


def test_new_kinds_are_appended() -> None:
    """A number never moves: each kind's number is above every number before it."""
    numbers = list(CODES.values())
    wrong = [
        name
        for name, n in list(CODES.items())[1:]
        if n <= max(numbers[: numbers.index(n)])
    ]
    assert not wrong, f"append new kinds at the end with the next number: {wrong}"


def test_the_catalogue_and_the_registry_hold_the_same_kinds() -> None:
    ids = [m.id for m in CATALOGUE]
    next_number = max(CODES.values()) + 1
    missing = [i for i in ids if i not in CODES]
    assert not missing, (
        f"catalogue entries without a code: {missing}; append them to "
        f"fadsl/error_codes.py from E{next_number:02d} on"
    )
    stale = [name for name in CODES if name not in ids]
    assert not stale, f"codes without a catalogue entry: {stale}"


def _code_values(node: ast.AST) -> list[ast.expr]:
    """What ``node`` gives a code: the value of a ``code=`` keyword, or of an
    assignment to a name ``code`` (``hint, code = None, "shape_syntax"`` too)."""
    if isinstance(node, ast.Call):
        return [kw.value for kw in node.keywords if kw.arg == "code"]
    if not isinstance(node, ast.Assign):
        return []
    out: list[ast.expr] = []
    for target in node.targets:
        if isinstance(target, ast.Name) and target.id == "code":
            out.append(node.value)
        elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
            out += [
                v
                for t, v in zip(target.elts, node.value.elts)
                if isinstance(t, ast.Name) and t.id == "code"
            ]
    return out


def _code_arguments() -> list[tuple[str, str]]:
    """(where, name) of every string fadsl gives an error as its code."""
    out = []
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            out += [
                (where, c.value)
                for value in _code_values(node)
                for c in ast.walk(value)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            ]
    return out


def test_every_code_argument_names_a_kind_and_every_kind_is_raised() -> None:
    given = _code_arguments()
    unknown = [f"{where}: {name}" for where, name in given if name not in CODES]
    assert not unknown, "code= names no kind of fadsl/error_codes.py:\n" + "\n".join(
        unknown
    )
    raised = {name for _, name in given}
    never = [name for name in CODES if name not in raised]
    assert not never, f"kinds no fadsl code raises (pass code=NAME there): {never}"


def test_an_unregistered_code_is_refused_where_it_is_raised() -> None:
    with pytest.raises(ValueError, match="not in fadsl/error_codes.py"):
        UsageError("x", code="no_such_kind")


@pytest.mark.smoke
def test_the_headline_prints_the_code_and_a_group_keeps_it() -> None:
    err = UsageError("bad", code="shape_syntax")
    assert err.render().startswith(f"fadsl: usage error[{code_text('shape_syntax')}]: ")
    assert UsageError("bad").render().startswith("fadsl: usage error: bad")
    from fadsl.errors import ErrorGroup

    group = ErrorGroup([err, UsageError("other")])
    with pytest.raises(FadslError) as caught:
        group.raise_if_any()
    assert caught.value.code == "shape_syntax"


def test_docs_head_each_entry_with_its_code() -> None:
    text = DOC.read_text(encoding="utf-8")
    heads = re.findall(r'<a id="(\w+)"></a>\n\n## (E\d+) ', text)
    assert heads and all(code == code_text(name) for name, code in heads), heads
    assert [name for name, _ in heads] == [m.id for m in CATALOGUE]


def _explain(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["explain", *argv])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("spelling", ["E03", "e3", "3", "E003", "dot_contraction"])
def test_explain_prints_the_entry(spelling: str) -> None:
    code, out, _ = _explain(spelling)
    assert code == 0
    assert out.startswith("## E03 `dot` operands whose inner sizes differ\n")
    assert "fadsl: shape error[E03]: dot: contraction sizes differ" in out
    assert "**Fix:** For `q @ k^T` pass `transpose_b=True`." in out
    assert "<a id=" not in out and "<!--" not in out
    assert "## E04" not in out


def test_explain_finds_every_code() -> None:
    for name in CODES:
        code, out, _ = _explain(code_text(name))
        assert code == 0 and out.startswith(f"## {code_text(name)} "), name


def test_explain_alone_lists_every_code() -> None:
    code, out, _ = _explain()
    lines = out.splitlines()
    assert code == 0 and len(lines) == len(CODES)
    assert lines[2] == "E03  `dot` operands whose inner sizes differ"


def test_name_of_reads_what_users_type() -> None:
    assert name_of("E21") == name_of("21") == name_of("e021") == "shape_syntax"
    assert name_of("E0") is None and name_of("x") is None and name_of("E٣") is None


ERROR_CLASSES = {
    "FadslError",
    "KernelSyntaxError",
    "ShapeError",
    "DTypeError",
    "ResourceError",
    "ScheduleError",
    "IRParseError",
    "BackendError",
    "UsageError",
    "ExecutionError",
}
"""The user-facing error classes (InternalError, a fadsl bug, has no code)."""

UNCODED_LIMIT = 337
"""Errors fadsl raises without a code: the kinds the catalogue does not show yet. It
may only go down: a new error gets a catalogue entry (tests/errors/catalogue.py) and
its code (fadsl/error_codes.py); lower this number when you give old ones theirs."""


def _uncoded() -> list[str]:
    out = []
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else None
            if name is None and isinstance(func, ast.Attribute):
                name = func.attr if func.attr == "error" else None
            if name in ERROR_CLASSES or name == "error":
                if not any(kw.arg == "code" for kw in node.keywords):
                    out.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return out


def test_errors_without_a_code_do_not_grow() -> None:
    uncoded = _uncoded()
    assert len(uncoded) <= UNCODED_LIMIT, (
        f"{len(uncoded)} errors are raised without a code, more than {UNCODED_LIMIT}: "
        "give the new one a catalogue entry and pass its code= (docs/errors.md)"
    )
