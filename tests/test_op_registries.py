"""Every IR op class has an entry in every per-op table that applies to it.

The tables (``fadsl.ir.op_table.OpTable``): the interpreter's impls, the vector
instruction forms, the Ascend C vector rules, the cost entries, and any table added
later, found by importing every fadsl module. An op class either has an entry or is
marked not applicable with a reason; the failure message names the file and decorator
that would add the missing entry (docs/architecture.md, "Adding an op").
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

import fadsl
from fadsl.errors import InternalError
from fadsl.ir import nodes as ir
from fadsl.ir.op_table import TABLES, OpTable


def _import_everything() -> None:
    """Import every fadsl module (but __main__), so that every table exists and is
    filled; a module needing an optional dependency that is not installed (torch) is
    skipped."""
    for module in pkgutil.walk_packages(fadsl.__path__, "fadsl."):
        if module.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(module.name)
        except ModuleNotFoundError as err:
            if err.name is None or err.name.split(".")[0] == "fadsl":
                raise


def _missing(tables: list[OpTable]) -> list[str]:  # type: ignore[type-arg]
    return [t.how_to_add(cls) for t in tables for cls in t.missing()]


def test_every_op_class_has_an_entry_in_every_table() -> None:
    _import_everything()
    missing = _missing(TABLES)
    assert not missing, (
        "IR op classes without an entry in a per-op table "
        "(docs/architecture.md, 'Adding an op'):\n  " + "\n  ".join(missing)
    )


def test_the_check_sees_the_tables() -> None:
    """The check above is not vacuous: the four tables of today are found (and any
    later one: TABLES lists every table created)."""
    _import_everything()
    names = [t.name for t in TABLES]
    assert {"COST", "FORMS", "IMPLS", "RULES"} <= set(names)
    assert len(names) == len(set(names)), names


@pytest.mark.parametrize("name", ["COST", "FORMS", "IMPLS", "RULES"])
def test_a_removed_entry_is_named_with_its_file_and_decorator(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _import_everything()
    table = next(t for t in TABLES if t.name == name)
    table.load()
    cls = ir.Exp
    monkeypatch.delitem(table, cls)
    (message,) = _missing([table])
    assert f"`@{table.decorator}(ir.Exp)`" in message
    assert table.home.split()[0] in message
    assert f"`{name}.not_applicable(ir.Exp" in message


def test_a_rule_is_needed_wherever_a_form_is(monkeypatch: pytest.MonkeyPatch) -> None:
    _import_everything()
    rules = next(t for t in TABLES if t.name == "RULES")
    forms = next(t for t in TABLES if t.name == "FORMS")
    assert not rules.applies_to(ir.Dot)  # FORMS: not applicable (the cube emits it)
    monkeypatch.delitem(forms, ir.Tanh)
    monkeypatch.delitem(rules, ir.Tanh)
    assert forms.missing() == [ir.Tanh] and rules.missing() == [ir.Tanh]


def test_entries_and_exemptions_do_not_overlap() -> None:
    table: OpTable[int] = OpTable("test entry", "T", "t", "nowhere.py")
    TABLES.remove(table)
    table.add(ir.Exp, 1)
    with pytest.raises(InternalError, match="a second test entry for Exp"):
        table.add(ir.Exp, 2)
    with pytest.raises(InternalError, match="Exp is already in T"):
        table.not_applicable(ir.Exp, why="-")
    table.not_applicable(ir.Log, why="-")
    with pytest.raises(InternalError, match="Log has a test entry and is marked"):
        table.add(ir.Log, 3)
    assert not table.applies_to(ir.Log) and table.applies_to(ir.Tanh)


def test_every_table_names_a_file_that_exists() -> None:
    _import_everything()
    root = Path(fadsl.__file__).resolve().parents[1]
    stale = [t.name for t in TABLES if not (root / t.home.split()[0]).is_file()]
    assert not stale, f"tables whose `home` is not a file: {stale}"


# Unary ops a kernel reaches through a Python operator rather than an fd function.
_OPERATORS: dict[type[ir.Op], str] = {ir.Neg: "-x", ir.Not: "~x"}


def _unexported_unary_ops() -> list[str]:
    from fadsl.ir.op_base import op_name

    unary = [c for c in ir.all_op_classes() if issubclass(c, ir.Unary)]
    return [
        f"{c.__name__} has no user function: add `def {op_name(c)}(x)` calling "
        f"_unary(ir.{c.__name__}, x) in fadsl/frontend/tile_ops.py and export it in "
        "fadsl/__init__.py (import and __all__)"
        for c in unary
        if c not in _OPERATORS
        and not (op_name(c) in fadsl.__all__ and callable(getattr(fadsl, op_name(c))))
    ]


def test_every_unary_op_has_an_fd_function() -> None:
    """The last two files of a new unary op (the frontend function and its export) are
    named too, so the messages of this module name every file but the IR class."""
    missing = _unexported_unary_ops()
    assert not missing, "\n".join(missing)


def test_an_unexported_unary_op_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fadsl, "__all__", [n for n in fadsl.__all__ if n != "sigmoid"])
    assert _unexported_unary_ops() == [
        "Sigmoid has no user function: add `def sigmoid(x)` calling "
        "_unary(ir.Sigmoid, x) in fadsl/frontend/tile_ops.py and export it in "
        "fadsl/__init__.py (import and __all__)"
    ]
