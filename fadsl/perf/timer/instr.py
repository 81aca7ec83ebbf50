"""One executed Ascend C call as the timer reads it.

The CPU runtime writes the executed-instruction record (``FADSL_RECORD``; the format is
``fadsl/runtime/cpu/README.md``, "Executed-instruction record", parsed by
``fadsl/backends/sim/record.py``). ``from_record`` turns its rows into ``Instr``s; tests
build ``Instr``s directly.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

PIPES = ("S", "MTE2", "MTE1", "M", "FIX", "V", "MTE3")
"""Pipes top to bottom in the trace (the order msprof's timeline uses)."""

CROSS_WAITS = ("CrossCoreWaitFlag", "SyncAll")
"""Calls that wait for a set on another core (their ``deps`` name it)."""


@dataclass(frozen=True)
class Instr:
    """One row of the record: what the timer needs of it (``None``: not given)."""

    core: str
    """``AIC3`` / ``AIV7``."""
    seq: int
    pipe: str
    api: str
    block: int = 0
    line: int = 0
    file: str | None = None
    elems: int | None = None
    repeats: int | None = None
    nbytes: int | None = None
    src: str | None = None
    dst: str | None = None
    dtype: str | None = None
    m: int | None = None
    k: int | None = None
    n: int | None = None
    blocks: int | None = None
    gm: str | None = None
    """The GM buffer of a GM access (its id in the record)."""
    offset: int | None = None
    span: int | None = None
    """Bytes from ``offset`` to the end of the furthest access (the record's gmend -
    gmoff): more than ``nbytes`` for a strided copy."""
    event: str | None = None
    event_id: int | None = None
    deps: tuple[str, ...] = ()
    """``core:seq`` of each set a wait consumed (WaitFlag: its SetFlag on the same
    core; a cross-core wait or SyncAll: the sets on other cores)."""
    queue: str | None = None

    @property
    def kind(self) -> str:
        """``AIC`` or ``AIV``."""
        return self.core.rstrip("0123456789")


def _num(v: Any) -> int | None:
    if v is None or v == "-" or v == "":
        return None
    return int(v)


def _text(v: Any) -> str | None:
    if v is None or v == "-" or v == "":
        return None
    return str(v)


def _span(start: int | None, end: int | None) -> int | None:
    return end - start if start is not None and end is not None else None


def _deps(v: Any, core: str) -> tuple[str, ...]:
    """``core:seq`` of each set a wait consumed (a bare seq: the same core)."""
    if v is None or v == "-" or v == "":
        return ()
    if isinstance(v, str):
        v = [x for x in v.split(",") if x]
    out = []
    for x in v:
        if isinstance(x, (list, tuple)):
            out.append(f"{x[0]}:{int(x[1])}")
        else:
            who, _, seq = str(x).rpartition(":")
            out.append(f"{who or core}:{int(seq)}")
    return tuple(out)


def _get(row: Any, *names: str) -> Any:
    for name in names:
        if isinstance(row, dict) and name in row:
            return row[name]
        if hasattr(row, name):
            return getattr(row, name)
    return None


def from_row(row: Any) -> Instr:
    """An ``Instr`` from one parsed record row (a dataclass or a dict of columns)."""
    core = str(_get(row, "core"))
    return Instr(
        core=core,
        seq=int(_get(row, "seq")),
        pipe=str(_get(row, "pipe") or "S"),
        api=str(_get(row, "api")),
        block=_num(_get(row, "block")) or 0,
        line=_num(_get(row, "line")) or 0,
        file=_text(_get(row, "file")),
        elems=_num(_get(row, "elems")),
        repeats=_num(_get(row, "repeats")),
        nbytes=_num(_get(row, "bytes", "nbytes")),
        src=_text(_get(row, "src")),
        dst=_text(_get(row, "dst")),
        dtype=_text(_get(row, "dtype")),
        m=_num(_get(row, "m")),
        k=_num(_get(row, "k")),
        n=_num(_get(row, "n")),
        blocks=_num(_get(row, "blocks")),
        gm=_text(_get(row, "gm")),
        offset=_num(_get(row, "gmoff", "offset")),
        span=_span(_num(_get(row, "gmoff", "offset")), _num(_get(row, "gmend"))),
        event=_text(_get(row, "event")),
        event_id=_num(_get(row, "id", "event_id")),
        deps=_deps(_get(row, "sources", "from", "deps"), core),
        queue=_text(_get(row, "queue")),
    )


def from_rows(rows: Iterable[Any]) -> list[Instr]:
    return [from_row(r) for r in rows]
