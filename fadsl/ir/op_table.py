"""Per-op tables: one entry per IR op class, filled by decorators next to the code.

Each layer owns its tables (the interpreter's impls, the vector instruction forms, the
Ascend C rules, the cost entries); this module is only their shared mechanism:

    RULES: OpTable[Rule] = OpTable(
        "Ascend C vector rule",
        "RULES",
        "rule",
        "fadsl/backends/ascendc/vector_rules.py",
    )
    rule = RULES.register

    @rule(ir.Exp)
    def exp(...): ...

    RULES.not_applicable(ir.ExpandDims, why="a view: the same buffer, no instruction")

An op class either has an entry or is marked not applicable with a reason; a table may
apply only where another table applies (``scope``: an op that can have a vector form
needs an Ascend C rule, so a new op is reported missing from both at once).
``missing()`` lists the classes that have neither, and ``how_to_add()`` says which file
and decorator would add one; tests/test_op_registries.py checks every table this way.
``filled_by`` names the modules whose decorators fill the table, so that checking or
using it never depends on who imported what first.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Generic, TypeVar

from fadsl.errors import InternalError
from fadsl.ir.nodes import Op, all_op_classes

E = TypeVar("E")
F = TypeVar("F")

TABLES: list[OpTable] = []  # type: ignore[type-arg]
"""Every table created so far, in creation order."""


class OpTable(dict[type[Op], E], Generic[E]):
    """A dict from op class to entry, with the bookkeeping that keeps it complete."""

    def __init__(
        self,
        what: str,
        name: str,
        decorator: str,
        home: str,
        *,
        filled_by: tuple[str, ...] = (),
        scope: OpTable | None = None,  # type: ignore[type-arg]
    ) -> None:
        super().__init__()
        self.what = what
        """What an entry is, in a sentence: "Ascend C vector rule"."""
        self.name = name
        """The table's module-level name, for messages: ``RULES``."""
        self.decorator = decorator
        """The decorator that adds an entry: ``rule``."""
        self.home = home
        """The file (or files, in words) where entries are added."""
        self.filled_by = filled_by
        self.scope = scope
        self.exempt: dict[type[Op], str] = {}
        """Op classes the table does not apply to, with the reason."""
        self._loaded = False
        TABLES.append(self)

    def register(self, *classes: type[Op]) -> Callable[[F], F]:
        """Decorator: the function is the entry of every class in ``classes``."""

        def add(fn: F) -> F:
            for cls in classes:
                self.add(cls, fn)  # type: ignore[arg-type]
            return fn

        return add

    def add(self, cls: type[Op], entry: E) -> None:
        if cls in self:
            raise InternalError(f"a second {self.what} for {cls.__name__}")
        if cls in self.exempt:
            raise InternalError(
                f"{cls.__name__} has a {self.what} and is marked not applicable"
            )
        self[cls] = entry

    def not_applicable(self, *classes: type[Op], why: str) -> None:
        """Mark ``classes`` as never reaching this table, saying why."""
        for cls in classes:
            if cls in self or cls in self.exempt:
                raise InternalError(f"{cls.__name__} is already in {self.name}")
            self.exempt[cls] = why

    def load(self) -> OpTable[E]:
        """Import the modules that fill the table (once); returns the table."""
        if not self._loaded:
            self._loaded = True
            for module in self.filled_by:
                importlib.import_module(module)
        return self

    def lookup(self, cls: type[Op]) -> E | None:
        """The entry of ``cls``, None when it has none (loads the table first)."""
        return self.load().get(cls)

    def applies_to(self, cls: type[Op]) -> bool:
        """Not marked not applicable here, nor (with a scope) in the scope table."""
        if cls in self.exempt:
            return False
        return self.scope is None or self.scope.load().applies_to(cls)

    def missing(self) -> list[type[Op]]:
        """Op classes the table applies to that have no entry."""
        self.load()
        return [c for c in all_op_classes() if self.applies_to(c) and c not in self]

    def how_to_add(self, cls: type[Op]) -> str:
        """The fix for a missing entry, naming the file and the decorator."""
        op = f"ir.{cls.__name__}"
        return (
            f"{cls.__name__} has no {self.what}: add `@{self.decorator}({op})` on its "
            f"function in {self.home} (or `{self.name}.not_applicable({op}, "
            "why=...)` there if the op never reaches this table)"
        )
