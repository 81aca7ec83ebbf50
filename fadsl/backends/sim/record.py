"""Reading the CPU runtime's executed-instruction record.

The runtime writes it when ``FADSL_RECORD`` names a file (``fadsl/runtime/cpu/README.md``,
"Executed-instruction record"): one row per executed Ascend C call, per core, in that
core's program order; tab-separated text, a header line naming the columns, ``#``
comment lines, ``-`` where a column does not apply. ``read_record`` turns it into typed
rows; the sanitizer's reports and the pipe-level timer both read it through here, and
``tests/backends/sim/test_record.py`` pins the format.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

COLUMNS: tuple[str, ...] = tuple(
    (
        "core block sub seq pipe api file line elems repeats bytes src dst dtype m k n "
        "blocks blocklen gm gmoff gmend event id mode flag from queue"
    ).split()
)
"""The columns, in the order the runtime writes them (record.h ``kRecordColumns``)."""

FORMAT = 2
"""The format number the runtime writes in its first comment line."""

PIPES = frozenset({"S", "V", "M", "MTE1", "MTE2", "MTE3", "FIX", "ALL"})
MEMORIES = frozenset({"UB", "L1", "L0A", "L0B", "L0C", "GM"})

Source = tuple[str, int]
"""A row another row depends on: (core, seq), e.g. ("AIV3", 17)."""


class RecordError(ValueError):
    """The file is not a well-formed record (names the file and line)."""


@dataclass(frozen=True)
class Row:
    """One executed call. ``None`` where the record has ``-``."""

    core: str
    """``AIC3`` / ``AIV7``: the kind and the core's index among the launch's cores of
    that kind."""
    block: int
    sub: int
    seq: int
    pipe: str | None
    api: str
    file: str | None
    """Basename of the source file of the call (the generated kernel, or
    ``fadsl_tile.h`` for calls inside its helpers); ``None`` for the runtime's own."""
    line: int | None
    elems: int | None
    repeats: int | None
    bytes: int | None
    src: str | None
    dst: str | None
    dtype: str | None
    m: int | None
    k: int | None
    n: int | None
    blocks: int | None
    blocklen: int | None
    gm: int | None
    gmoff: int | None
    gmend: int | None
    """End (exclusive) of the furthest access into buffer ``gm``: with ``gmoff``, the
    span of a strided copy."""
    event: str | None
    id: int | None
    mode: int | None
    flag: int | None
    sources: tuple[Source, ...]
    """The ``from`` column: the Set(s) this Wait consumed (same core for a WaitFlag)."""
    queue: str | None


@dataclass(frozen=True)
class Record:
    """A whole record: its comment header facts and every core's rows."""

    kernel: str
    soc: str
    rows: tuple[Row, ...]

    def cores(self) -> dict[str, tuple[Row, ...]]:
        """Rows per core, in program order."""
        out: dict[str, list[Row]] = {}
        for r in self.rows:
            out.setdefault(r.core, []).append(r)
        return {c: tuple(sorted(rs, key=lambda r: r.seq)) for c, rs in out.items()}


def read_record(path: str | os.PathLike[str]) -> Record:
    """Parse the record the runtime wrote to ``path``."""
    with open(path, encoding="utf-8") as f:
        return parse_record(f.read(), str(path))


def parse_record(text: str, name: str = "<record>") -> Record:
    meta: dict[str, str] = {}
    rows: list[Row] = []
    header = False
    for no, line in enumerate(text.splitlines(), 1):
        if not line:
            continue
        if line.startswith("#"):
            _comment(line, meta)
            continue
        cells = line.split("\t")
        if not header:
            if tuple(cells) != COLUMNS:
                raise RecordError(f"{name}:{no}: expected the header line {COLUMNS}")
            header = True
            continue
        if len(cells) != len(COLUMNS):
            raise RecordError(
                f"{name}:{no}: {len(cells)} columns, expected {len(COLUMNS)}"
            )
        rows.append(_row(dict(zip(COLUMNS, cells)), f"{name}:{no}"))
    if not header:
        raise RecordError(f"{name}: no header line (is it a record?)")
    if meta.get("format") != str(FORMAT):
        raise RecordError(f"{name}: format {meta.get('format')!r}, expected {FORMAT}")
    return Record(meta.get("kernel", ""), meta.get("soc", ""), tuple(rows))


def _comment(line: str, meta: dict[str, str]) -> None:
    body = line[1:].strip()
    if body.startswith("fadsl executed-instruction record, format "):
        meta["format"] = body.rsplit(" ", 1)[1]
    for key in ("kernel", "soc"):
        if body.startswith(key + " "):
            meta[key] = body[len(key) + 1 :]


def _opt(conv: Callable[[str], object], cell: str, where: str, col: str):
    if cell == "-":
        return None
    try:
        return conv(cell)
    except ValueError:
        raise RecordError(f"{where}: column {col}: {cell!r} is not valid") from None


def _member(allowed: frozenset[str]) -> Callable[[str], str]:
    def conv(cell: str) -> str:
        if cell not in allowed:
            raise ValueError(cell)
        return cell

    return conv


def _sources(cell: str, core: str) -> tuple[Source, ...]:
    out = []
    for part in cell.split(","):
        who, _, seq = part.rpartition(":")
        out.append((who or core, int(seq)))
    return tuple(out)


_INTS = (
    "elems repeats bytes m k n blocks blocklen gm gmoff gmend id mode flag line"
).split()


def _row(c: dict[str, str], where: str) -> Row:
    ints = {k: _opt(int, c[k], where, k) for k in _INTS}
    text = {k: _opt(str, c[k], where, k) for k in ("file", "dtype", "event", "queue")}
    required = {k: _opt(int, c[k], where, k) for k in ("block", "sub", "seq")}
    if (
        None in required.values()
        or c["api"] == "-"
        or c["core"][:3] not in ("AIC", "AIV")
    ):
        raise RecordError(f"{where}: core, block, sub, seq and api are required")
    src = _opt(_member(MEMORIES), c["src"], where, "src")
    dst = _opt(_member(MEMORIES), c["dst"], where, "dst")
    pipe = _opt(_member(PIPES), c["pipe"], where, "pipe")
    sources = _opt(lambda s: _sources(s, c["core"]), c["from"], where, "from")
    return Row(
        core=c["core"],
        api=c["api"],
        pipe=pipe,  # type: ignore[arg-type]
        src=src,  # type: ignore[arg-type]
        dst=dst,  # type: ignore[arg-type]
        sources=sources or (),  # type: ignore[arg-type]
        **required,  # type: ignore[arg-type]
        **ints,  # type: ignore[arg-type]
        **text,  # type: ignore[arg-type]
    )


__all__ = ["COLUMNS", "FORMAT", "Record", "RecordError", "Row", "Source", "read_record"]
