"""Finding the extra inputs of a mod: every ``fd.tensor`` object that score_mod or
mask_mod can reach through its globals and closure cells, and (recursively) through the
plain functions it calls."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

from fadsl.errors import UsageError
from fadsl.frontend.mods import ExtraTensor


def find_tensors(*fns: Callable[..., Any] | None) -> tuple[ExtraTensor, ...]:
    """Every ExtraTensor a mod can reach: its globals, closure cells, and (recursively)
    the plain functions it calls the same way."""
    found: dict[str, ExtraTensor] = {}
    seen: set[int] = set()
    for fn in fns:
        if fn is not None:
            _scan(fn, found, seen)
    return tuple(found[k] for k in sorted(found))


def _scan(fn: Any, found: dict[str, ExtraTensor], seen: set[int]) -> None:
    if id(fn) in seen or not inspect.isfunction(fn):
        return
    seen.add(id(fn))
    for value in _reachable(fn):
        if isinstance(value, ExtraTensor):
            _add(value, found)
        elif inspect.isfunction(value):
            _scan(value, found, seen)


def _reachable(fn: types.FunctionType) -> list[Any]:
    out = [c.cell_contents for c in (fn.__closure__ or ()) if _filled(c)]
    out += [x for v in out if isinstance(v, tuple) for x in v]  # fd.and_masks' mods
    for name in _names(fn.__code__):
        if name in fn.__globals__:
            out.append(fn.__globals__[name])
    return out


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _names(code: types.CodeType) -> list[str]:
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _names(const)
    return names


def _add(t: ExtraTensor, found: dict[str, ExtraTensor]) -> None:
    other = found.get(t.name)
    if other is not None and other is not t:
        raise UsageError(
            f"two different fd.tensor objects are both named {t.name!r}",
            t.loc,
            notes=(f"the other one is declared at {other.loc}",),
            hint="give every extra input its own name",
        )
    found[t.name] = t
