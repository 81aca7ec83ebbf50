"""The FadslError hierarchy and the one place that formats diagnostics.

Every error a user can cause is a FadslError with a source location. Rendering
follows the rustc style: a headline, ``--> file:line:col``, the source line with
a caret span, then ``= note:`` and ``= hint:`` lines. No other module formats
errors; they build a FadslError and let the boundary (CLI or public API) render it.
"""

from __future__ import annotations

import linecache
import os
from dataclasses import dataclass, field

from fadsl.error_codes import CODES, code_text


@dataclass(frozen=True, slots=True)
class Loc:
    """A span in a user's file (a kernel .py, a textual-IR .fir, a CLI argument)."""

    file: str
    line: int
    col: int = 0
    """0-based column of the first character."""
    end_col: int | None = None
    """0-based column one past the last character; None means to the end of the token."""
    by: str | None = None
    """Name of the pass that synthesised the node this loc belongs to."""
    text: str | None = None
    """The source line, when the file is not on disk (a --set argument, an IR string)."""

    def derived(self, by: str) -> Loc:
        """The same span, marked as produced by pass ``by``."""
        return Loc(self.file, self.line, self.col, self.end_col, by, self.text)

    def short(self) -> str:
        return f"{os.path.basename(self.file)}:{self.line}"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col + 1}"

    def source_line(self) -> str:
        if self.text is not None:
            return self.text
        return linecache.getline(self.file, self.line).rstrip("\n")


class FadslError(Exception):
    """Base of every user-facing error; carries a location, notes and a fix hint.

    ``code`` names the catalogued kind of error (docs/errors.md; the name is the
    entry's id in fadsl/error_codes.py), whose number the headline prints.
    """

    kind = "error"

    def __init__(
        self,
        message: str,
        loc: Loc | None = None,
        hint: str | None = None,
        notes: tuple[str, ...] | list[str] = (),
        *,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        if code is not None and code not in CODES:
            raise ValueError(f"error code {code!r} is not in fadsl/error_codes.py")
        self.message = message
        self.loc = loc
        self.hint = hint
        self.notes = tuple(notes)
        self.code = code

    def render(self) -> str:
        return render(self)

    def __str__(self) -> str:
        return render(self)


class KernelSyntaxError(FadslError):
    """The kernel's Python uses a construct or name the DSL does not accept."""


class ShapeError(FadslError):
    """Operand shapes do not fit an op's rule."""


class DTypeError(FadslError):
    """Operand dtypes do not fit an op's rule."""


class ResourceError(FadslError):
    """On-chip buffers or cores do not fit the chosen target."""


class ScheduleError(FadslError):
    """A loop, pipeline or queue is used in a way the schedule cannot honour."""


class IRParseError(FadslError):
    """Textual IR does not parse."""


class BackendError(FadslError):
    """A backend cannot lower the program for the chosen target."""


class UsageError(FadslError):
    """Bad command-line input: arguments, files, shapes, --set values."""


class ExecutionError(FadslError):
    """The program faulted while running (interpreter or CPU runtime)."""


class InternalError(FadslError):
    """A fadsl bug: the message asks for a report and carries the IR."""

    def __init__(self, message: str, loc: Loc | None = None, ir_text: str = "") -> None:
        notes = ("this is a fadsl bug, please report it with the IR below",)
        if ir_text:
            notes += ("IR:\n" + ir_text,)
        super().__init__(message, loc, None, notes)


_TITLES: dict[type, str] = {
    KernelSyntaxError: "kernel syntax error",
    ShapeError: "shape error",
    DTypeError: "dtype error",
    ResourceError: "resource error",
    ScheduleError: "schedule error",
    IRParseError: "IR parse error",
    BackendError: "backend error",
    UsageError: "usage error",
    ExecutionError: "execution error",
    InternalError: "internal error",
}


def _title(err: FadslError) -> str:
    for cls in type(err).__mro__:
        if cls in _TITLES:
            return _TITLES[cls]
    return "error"


def _indent_block(label: str, text: str, pad: str) -> list[str]:
    lines = text.split("\n")
    out = [f"{pad} = {label}: {lines[0]}"]
    cont = " " * (len(label) + 2)
    out += [f"{pad}   {cont}{ln}" for ln in lines[1:]]
    return out


LINE_LIMIT = 1000
"""Longest line of a rendered message, note or hint; longer ones (quoting a huge
token or line of the user's file) are shortened, so a message stays readable."""
SNIPPET_WIDTH = 120
"""Widest source line shown under ``-->``; a longer one is cut around the caret."""


def _printable(line: str) -> str:
    """``line`` with control characters (a terminal's escapes) shown as ``?``."""
    return "".join(c if c.isprintable() or c == "\t" else "?" for c in line)


def _clip(text: str) -> str:
    """``text`` with each line printable and at most LINE_LIMIT characters."""
    out = []
    for line in text.split("\n"):
        if len(line) > LINE_LIMIT:
            line = f"{line[:LINE_LIMIT]}... ({len(line):,} characters)"
        out.append(_printable(line))
    return "\n".join(out)


def _window(src: str, start: int, end: int) -> tuple[str, int, int]:
    """``src`` cut to SNIPPET_WIDTH around ``start``, with the caret span moved."""
    if len(src) <= SNIPPET_WIDTH:
        return _printable(src), start, end
    end = min(end, start + SNIPPET_WIDTH // 2)
    left = max(0, min(start - SNIPPET_WIDTH // 4, len(src) - SNIPPET_WIDTH))
    right = min(len(src), left + SNIPPET_WIDTH)
    head = "..." if left else ""
    tail = "..." if right < len(src) else ""
    shift = len(head) - left
    shown = head + _printable(src[left:right]) + tail
    return shown, start + shift, min(end, right) + shift


def _snippet(loc: Loc, pad: str) -> list[str]:
    src = loc.source_line()
    if not src:
        return []
    start = max(0, loc.col)
    end = loc.end_col if loc.end_col is not None and loc.end_col > start else None
    if end is None:
        end = start + max(1, _token_len(src, start))
    end = min(end, max(len(src), start + 1))
    src, start, end = _window(src, start, end)
    caret = " " * start + "^" * max(1, end - start)
    num = str(loc.line)
    return [
        f"{pad} |",
        f"{num.rjust(len(pad))} | {src}",
        f"{pad} | {caret}",
    ]


def _token_len(src: str, start: int) -> int:
    n = 0
    while start + n < len(src) and (src[start + n].isalnum() or src[start + n] in "_."):
        n += 1
    return n


def render(err: FadslError) -> str:
    """The full multi-line diagnostic for ``err``."""
    shown = f"[{code_text(err.code)}]" if err.code else ""
    lines = [f"fadsl: {_title(err)}{shown}: {_clip(err.message)}"]
    loc = err.loc
    pad = " " * (len(str(loc.line)) if loc is not None else 1)
    if loc is not None:
        where = str(loc)
        if loc.by:
            where += f" (in code synthesised by pass '{loc.by}')"
        lines.append(f"{pad}--> {where}")
        lines += _snippet(loc, pad)
    for note in err.notes:
        lines += _indent_block("note", _clip(note), pad)
    if err.hint:
        lines += _indent_block("hint", _clip(err.hint), pad)
    return "\n".join(lines)


@dataclass
class ErrorGroup:
    """Accumulates errors within one phase; ``raise_if_any`` raises them together."""

    errors: list[FadslError] = field(default_factory=list)

    def add(self, err: FadslError) -> None:
        self.errors.append(err)

    def raise_if_any(self) -> None:
        if not self.errors:
            return
        if len(self.errors) == 1:
            raise self.errors[0]
        first = self.errors[0]
        rest = tuple(render(e) for e in self.errors[1:])
        raise type(first)(
            f"{first.message} (and {len(rest)} more error(s) below)",
            first.loc,
            first.hint,
            first.notes + rest,
            code=first.code,
        )
