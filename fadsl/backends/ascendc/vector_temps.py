"""Temporaries of a vector rule: their local names (by role, numbered when a role
repeats) and declarations, and the rule's nested statements as view nodes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fadsl.backends.ascendc.names import ctype
from fadsl.backends.ascendc.view import Block, Line, Stmt

if TYPE_CHECKING:
    from fadsl.backends.ascendc.vector import VectorEmitter


_TEMP_NAMES = {
    "broadcast": "bcast",
    "reduce-work": "work",
    "reduce-top": "top",
    "mask": "mask",
    "dup": "dup",
}


def names(form: Any) -> tuple[str, ...]:
    """Local names of an op's temporaries: by role, numbered when a role repeats."""
    out: list[str] = []
    for spec in form.temps:
        base = _TEMP_NAMES.get(spec.role, "tmp")
        name, n = base, 1
        while name in out:
            n += 1
            name = f"{base}{n}"
        out.append(name)
    return tuple(out)


def decls(e: VectorEmitter, pos: int, form: Any) -> list[str]:
    """``AscendC::LocalTensor`` declarations of the temporaries of the op at ``pos``."""
    out = []
    for slot, spec, name in zip(e.vec.temps.get(pos, ()), form.temps, names(form)):
        ct = ctype(spec.dtype)
        member = e.names.buf(slot)
        out.append(f"AscendC::LocalTensor<{ct}> {name} = {member}.Get<{ct}>();")
    return out


def stmt(x: Any) -> Stmt:
    """A rule's line, or ``(header, body)`` nested, as a view statement."""
    if isinstance(x, tuple):
        header, body = x
        return Block(header, tuple(stmt(b) for b in body))
    return Line(x)
