"""The only way to create IR ops: fresh per-kernel names, current location, type rules.

``Builder.emit`` constructs an op, runs its ``infer``/``check`` rule (so mistakes are
reported at the user's line while the kernel is being read) and appends it to the
innermost open block.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from fadsl.errors import InternalError, Loc
from fadsl.ir.nodes import (
    DeviceAssert,
    LoadScalar,
    ScalarDef,
    Op,
    Store,
    TypeContext,
    Value,
    ValueOp,
)
from fadsl.ir.types import ErrorType

_IDENT = re.compile(r"[^A-Za-z0-9_]")


class Builder:
    """Accumulates ops into nested blocks, naming values deterministically."""

    def __init__(self, ctx: TypeContext) -> None:
        self.ctx = ctx
        self._used: dict[str, int] = {}
        self._blocks: list[list[Op]] = [[]]

    def fresh(self, hint: str = "t") -> str:
        """A name not used before in this kernel, derived from ``hint``."""
        base = _IDENT.sub("_", hint) or "t"
        if base[0].isdigit():
            base = "v" + base
        n = self._used.get(base)
        if n is None:
            self._used[base] = 0
            return base
        while True:
            n += 1
            cand = f"{base}_{n}"
            if cand not in self._used:
                self._used[base] = n
                self._used[cand] = 0
                return cand

    def reserve(self, name: str) -> None:
        self._used.setdefault(name, 0)

    def emit(
        self, cls: type[Op], loc: Loc, hint: str = "t", **fields: Any
    ) -> Value | None:
        """Build ``cls(**fields)``, type-check it, append it; return its result."""
        if issubclass(cls, ValueOp):
            placeholder = Value("?", ErrorType())
            op = cls(result=placeholder, loc=loc, **fields)
            result = Value(self.fresh(hint), op.infer(self.ctx))
            op = replace(op, result=result)
            self.append(op)
            return result
        op = cls(loc=loc, **fields)
        if isinstance(op, (Store, LoadScalar, ScalarDef, DeviceAssert)):
            op.check(self.ctx)
        self.append(op)
        return None

    def rename_last(self, value: Value, hint: str) -> Value | None:
        """Rename ``value`` if the last op of the open block produced it; else None."""
        block = self._blocks[-1]
        if not block or not isinstance(block[-1], ValueOp):
            return None
        last = block[-1]
        if (
            last.result != value
            or value.name == hint
            or value.name.startswith(hint + "_")
        ):
            return None
        renamed = Value(self.fresh(hint), value.type)
        block[-1] = replace(last, result=renamed)
        return renamed

    def mark(self) -> int:
        """A position in the open block, for ``ops_since``."""
        return len(self._blocks[-1])

    def ops_since(self, mark: int) -> tuple[Op, ...]:
        """The ops appended to the open block after ``mark`` (a traced call's ops)."""
        return tuple(self._blocks[-1][mark:])

    def append(self, op: Op) -> None:
        self._blocks[-1].append(op)

    @contextmanager
    def block(self) -> Iterator[list[Op]]:
        """Collect the ops emitted inside the ``with`` into a fresh list."""
        self._blocks.append([])
        try:
            yield self._blocks[-1]
        finally:
            self._blocks.pop()

    def finish(self) -> tuple[Op, ...]:
        if len(self._blocks) != 1:
            raise InternalError("builder finished with open blocks")
        return tuple(self._blocks[0])
