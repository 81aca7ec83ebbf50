"""Reading the user's text and JSON files: size-limited, UTF-8, clear errors.

Every text file fadsl reads (textual IR, a run folder's meta.json, a --target-file)
goes through ``read_text`` or ``read_json``, which refuse what is not a regular file
(``/dev/zero``, a pipe, a folder), a file larger than its limit, text that is not
UTF-8 (pointing at the first bad byte) and JSON nested too deeply, each with a
UsageError naming the file. The limits are far above anything fadsl writes
(docs/errors.md, "Limits on files fadsl reads").
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

from fadsl.errors import Loc, UsageError

MiB = 1 << 20
IR_LIMIT = 4 * MiB
"""Textual IR (.fir); the printed IR of the largest example is about 6 KB."""
JSON_LIMIT = 1 * MiB
"""meta.json and --target-file; fadsl writes a few KB."""
PY_LIMIT = 4 * MiB
"""A kernel .py file (imported by Python, which reads its own encodings); the
examples are a few KB."""


def check_size(path: str, what: str, limit: int) -> None:
    """Refuse ``path`` when it is larger than ``limit`` bytes."""
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise UsageError(
            f"cannot read {_name(what, path)}: {exc.strerror or exc}"
        ) from None
    if size > limit:
        raise _too_large(path, what, limit)


def read_text(path: str, what: str, limit: int, hint: str | None = None) -> str:
    """The UTF-8 text of the regular file ``path`` (at most ``limit`` bytes)."""
    data = _read_bytes(path, what, limit, hint)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, what, data, exc.start) from None


def read_json(
    path: str, what: str = "", limit: int = JSON_LIMIT, hint: str | None = None
) -> Any:
    """The JSON value in ``path`` (see ``read_text``); errors point into the file."""
    text = read_text(path, what, limit, hint)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{_name(what, path)} is not valid JSON: {exc.msg}",
            Loc(path, exc.lineno, exc.colno - 1),
            hint=hint,
        ) from None
    except RecursionError:
        raise UsageError(
            f"{_name(what, path)} nests arrays or objects too deeply to read",
            hint=hint or "fadsl's JSON files nest a few levels",
            code="meta_json_too_deep",
        ) from None


def _read_bytes(path: str, what: str, limit: int, hint: str | None) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block
    except FileNotFoundError:
        raise UsageError(f"{_name(what, path)}: no such file", hint=hint) from None
    except IsADirectoryError:
        raise UsageError(
            f"{_name(what, path)} is a folder, not a file", hint=hint
        ) from None
    except OSError as exc:
        raise UsageError(
            f"cannot read {_name(what, path)}: {exc.strerror or exc}", hint=hint
        ) from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise UsageError(f"{_name(what, path)} is a folder, not a file", hint=hint)
        if not stat.S_ISREG(mode):
            raise UsageError(
                f"{_name(what, path)} is not a regular file (a pipe or a device?)",
                hint=hint,
                code="target_file_device",
            )
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise UsageError(
                f"cannot read {_name(what, path)}: {exc.strerror or exc}", hint=hint
            ) from None
    if len(data) > limit:
        raise _too_large(path, what, limit)
    return data


def _too_large(path: str, what: str, limit: int) -> UsageError:
    return UsageError(
        f"{_name(what, path)} is larger than {limit // MiB} MiB, the most fadsl reads "
        "from such a file",
        hint="is this the right file? such files are a few KB",
    )


def _name(what: str, path: str) -> str:
    return f"{what} {path}" if what else path


def _not_utf8(path: str, what: str, data: bytes, start: int) -> UsageError:
    line = data.count(b"\n", 0, start) + 1
    line_start = data.rfind(b"\n", 0, start) + 1
    line_end = data.find(b"\n", start)
    raw = data[line_start : line_end if line_end >= 0 else len(data)]
    shown = raw.decode("utf-8", errors="backslashreplace")
    col = len(data[line_start:start].decode("utf-8", errors="backslashreplace"))
    return UsageError(
        f"{_name(what, path)} is not UTF-8 text: byte 0x{data[start]:02x} on line {line}",
        Loc(path, line, col, col + 1, text=shown),
        hint="save the file as UTF-8; names and keywords in it are ASCII",
        code="fir_not_utf8",
    )
