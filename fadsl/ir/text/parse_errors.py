"""Turns lark's syntax errors on textual IR into IRParseErrors with a caret and a hint.

Common mistakes get a clear label through lark's ``match_examples`` (lark's
``examples/advanced/error_reporting_lalr.py``): each label lists malformed kernels
that fail in the same parser state as the user's text. Unbalanced braces are found
by counting, so the caret points at the brace that is never closed. Everything else
says what was found and which tokens would have been accepted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fadsl.errors import IRParseError, Loc


@dataclass(frozen=True)
class _Label:
    message: str
    hint: str
    at_previous: bool = False
    """Point the caret just after the previous token (something is missing there)."""
    at_line_start: bool = False
    """Point the caret at the first word of the line (the statement's start)."""


_MISSING_TYPE = _Label(
    "missing the result type: a value statement ends with `: type`",
    "e.g. `%p = exp(%s) : f32[block_q, block_kv]`",
    at_previous=True,
)
_MISSING_PERCENT = _Label(
    "an op result must be a value name starting with `%`",
    "write `%x = op(...) : type`; only load_scalar binds a plain symbol "
    "(`q0 = load_scalar() {src = cu_seqlens, index = [b]}`)",
    at_line_start=True,
)
_MISSING_COMMA = _Label(
    "missing `,` between two items",
    "separate operands, attributes and list items with commas: {a = 1, b = 2}",
)
_MISSING_OP = _Label(
    "expected an op call after `=`",
    "write `%x = op_name(operands) {attributes} : type`",
)

_EXAMPLES: tuple[tuple[_Label, tuple[str, ...]], ...] = (
    (
        _MISSING_TYPE,
        (
            "kernel k() { %x = exp(%y) }",
            "kernel k() { %x = exp(%y) {a = 1} }",
        ),
    ),
    (
        _MISSING_PERCENT,
        (
            "kernel k() { x = exp(%y) : f32[4] }",
            "kernel k() { x = exp(%y) {a = 1} : f32[4] }",
            "kernel k() { x, y = for j in 0 .. 4 { } }",
        ),
    ),
    (
        _MISSING_COMMA,
        (
            "kernel k() { %x = f(%y) {a = 1 b = 2} : f32[4] }",
            "kernel k() { %x = f(%y) {a = b c = 2} : f32[4] }",
            "kernel k() { %x = f(%y) {a = true b = 2} : f32[4] }",
            "kernel k() { %x = f(%y %z) : f32[4] }",
            "kernel k() { %x = f(%y) {a = [1 2]} : f32[4] }",
        ),
    ),
    (
        _MISSING_OP,
        (
            "kernel k() { %x = %y : f32[4] }",
            "kernel k() { %x = 1 : f32[4] }",
        ),
    ),
)

_TOKEN_WORDS = {
    "VALUE": "a value (%name)",
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a float",
    "STRING": "a string",
    "$END": "the end of the text",
}


def syntax_error(
    exc: Any,
    text: str,
    file: str,
    parse_fn: Callable[[str], Any],
    terminals: Any,
    examples: bool = True,
) -> IRParseError:
    """The IRParseError for lark exception ``exc`` raised while parsing ``text``.

    ``examples`` enables the labels of common mistakes (whole kernels only).
    """
    brace = _brace_error(exc, text, file)
    if brace is not None:
        return brace
    label = _match(exc, parse_fn) if examples else None
    loc = _loc(text, file, exc)
    if label is not None:
        if label.at_previous:
            loc = _after_previous(text, file, exc)
        if label.at_line_start:
            loc = _line_start(loc)
        return IRParseError(label.message, loc, hint=label.hint)
    return IRParseError(_describe(exc, terminals), loc, hint=_expected(exc, terminals))


def _match(exc: Any, parse_fn: Callable[[str], Any]) -> _Label | None:
    if getattr(exc, "state", None) is None or not hasattr(exc, "token"):
        return None
    exc.state = _SameLALRState(exc.state)
    try:
        label = exc.match_examples(parse_fn, _EXAMPLES, use_accepts=False)
        return label  # type: ignore[no-any-return]
    except AssertionError:
        return None


class _SameLALRState:
    """Wraps lark's ParserState so that only the LALR state number is compared.

    lark's own equality also compares the depth of the state stack, which would tie
    each example to one nesting depth (kernel body, grid body, loop body, ...).
    ``ParserState.__eq__`` returns NotImplemented for this wrapper, so Python falls
    back to ``__eq__`` here.
    """

    def __init__(self, state: Any) -> None:
        self.state = state

    def __eq__(self, other: object) -> bool:
        return bool(getattr(other, "position", None) == self.state.position)

    def __hash__(self) -> int:
        return hash(self.state.position)


def line_loc(text: str, file: str, line: int, col: int, end_col: int | None) -> Loc:
    """A Loc into ``text`` at 1-based ``line`` and 0-based columns."""
    lines = text.splitlines()
    src = lines[line - 1] if 0 < line <= len(lines) else ""
    return Loc(file, line, col, end_col, text=src)


def _loc(text: str, file: str, exc: Any) -> Loc:
    line, col = max(1, exc.line), max(0, exc.column - 1)
    token = getattr(exc, "token", None)
    width = len(str(token)) if token is not None and str(token) else 1
    return line_loc(text, file, line, col, col + width)


def _after_previous(text: str, file: str, exc: Any) -> Loc:
    offset = _offset(text, max(1, exc.line), max(0, exc.column - 1))
    i = offset - 1
    while i >= 0 and text[i].isspace():
        i -= 1
    line = text.count("\n", 0, i + 1) + 1
    col = i + 1 - (text.rfind("\n", 0, i + 1) + 1)
    return line_loc(text, file, line, col, col + 1)


def _line_start(loc: Loc) -> Loc:
    src = loc.text or ""
    col = len(src) - len(src.lstrip())
    end = col
    while end < len(src) and (src[end].isalnum() or src[end] in "_,% "):
        end += 1
    return Loc(loc.file, loc.line, col, max(col + 1, len(src[:end].rstrip())), text=src)


def _offset(text: str, line: int, col: int) -> int:
    pos = 0
    for _ in range(line - 1):
        nl = text.find("\n", pos)
        if nl < 0:
            return len(text)
        pos = nl + 1
    return min(len(text), pos + col)


def _describe(exc: Any, terminals: Any) -> str:
    token = getattr(exc, "token", None)
    if token is None:
        char = getattr(exc, "char", "?")
        return f"unexpected character `{char}`"
    if token.type == "$END":
        return "unexpected end of the text"
    return f"unexpected `{token}`"


def _expected(exc: Any, terminals: Any) -> str | None:
    names = getattr(exc, "accepts", None) or getattr(exc, "expected", None)
    names = names or getattr(exc, "allowed", None)
    if not names:
        return None
    words = sorted({_word(n, terminals) for n in names})
    return "expected " + _or_list(words)


def _word(name: str, terminals: Any) -> str:
    if name in _TOKEN_WORDS:
        return _TOKEN_WORDS[name]
    try:
        pattern = terminals(name).pattern
    except (KeyError, AttributeError):
        return name.lower()
    if type(pattern).__name__ == "PatternStr":
        return f"`{pattern.value}`"
    return name.lower()


def _or_list(words: list[str]) -> str:
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


# ----------------------------------------------------------------------------
# Unbalanced braces
# ----------------------------------------------------------------------------


def _brace_error(exc: Any, text: str, file: str) -> IRParseError | None:
    token = getattr(exc, "token", None)
    if token is None or token.type not in ("$END", "RBRACE"):
        return None
    scan = _scan_braces(text)
    if token.type == "$END" and scan.open:
        line, col = scan.misindented[0] if scan.misindented else scan.open[-1]
        return IRParseError(
            f"missing `}}`: {len(scan.open)} block(s) are never closed",
            line_loc(text, file, line, col, col + 1),
            hint="this `{` has no matching `}` (judging by indentation); close every "
            "kernel, grid and for block",
        )
    if token.type == "RBRACE" and scan.unmatched is not None:
        line, col = scan.misindented[1] if scan.misindented else scan.unmatched
        return IRParseError(
            "unmatched `}`: the text has more `}` than `{`",
            line_loc(text, file, line, col, col + 1),
            hint="remove the extra `}` (judging by indentation, this one)",
        )
    return None


@dataclass
class _Braces:
    open: list[tuple[int, int]]
    """(line, col) of every `{` never closed."""
    unmatched: tuple[int, int] | None
    """The first `}` that closes nothing."""
    misindented: tuple[tuple[int, int], tuple[int, int]] | None
    """The first (`{`, `}`) pair whose lines are indented differently."""


def _scan_braces(text: str) -> _Braces:
    stack: list[tuple[int, int, int]] = []
    found = _Braces([], None, None)
    for lineno, line in enumerate(text.splitlines(), start=1):
        indent = len(line) - len(line.lstrip())
        for col, ch in enumerate(_code_part(line)):
            if ch == "{":
                stack.append((lineno, col, indent))
            elif ch == "}" and not stack:
                found.unmatched = found.unmatched or (lineno, col)
            elif ch == "}":
                o_line, o_col, o_indent = stack.pop()
                if (
                    o_indent != indent
                    and o_line != lineno
                    and found.misindented is None
                ):
                    found.misindented = ((o_line, o_col), (lineno, col))
    found.open = [(line, col) for line, col, _ in stack]
    return found


def _code_part(line: str) -> str:
    """The line without its comment; string contents are blanked."""
    out = []
    in_string = False
    prev = ""
    for ch in line:
        if in_string:
            out.append(" ")
            in_string = not (ch == '"' and prev != "\\")
        elif ch == '"':
            in_string = True
            out.append(" ")
        elif ch == "#":
            break
        else:
            out.append(ch)
        prev = ch
    return "".join(out)
