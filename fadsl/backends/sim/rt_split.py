"""Two views of the CPU runtime's headers, for a runtime compiled once into a library.

The runtime is header-only: every translation unit that includes it compiles the
bodies of its ``inline`` functions again (about a third of a kernel's compile time).
For ``fadsl sim``, two copies of the headers are written instead, differing only in
the runtime's top-level non-template ``inline`` functions whose definition spans
several lines (one-line helpers stay inline everywhere, so they can still be inlined):

- ``declared``: each such definition becomes its declaration (the signature and
  ``;``); the kernel and ``main.cpp`` compile against these;
- ``defined``: each such definition loses its ``inline`` keyword and is compiled
  once, in the library (``libfadsl_rt.a``, prebuilt.py), with the kernel's flags.

Nothing else changes: templates, class bodies, variables and the order of everything
stay as written, so both views declare the same program and the linker joins them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

_INLINE_FN = re.compile(r"^inline (?!(?:thread_local|constexpr)\b)")


@dataclass(frozen=True)
class Split:
    """One header's two views, and how many definitions moved to the library."""

    declared: str
    defined: str
    moved: int


def split_header(text: str) -> Split:
    """The declared and defined views of one header's ``text``."""
    lines = text.split("\n")
    declared: list[str] = []
    defined: list[str] = []
    moved = 0
    i = 0
    while i < len(lines):
        end = _definition_end(lines, i)
        if end is None or end == i:
            declared.append(lines[i])
            defined.append(lines[i])
            i += 1
            continue
        chunk = "\n".join(lines[i : end + 1])
        declared.append(chunk[len("inline ") : _body_start(chunk)].rstrip() + ";")
        defined.append(chunk[len("inline ") :])
        moved += 1
        i = end + 1
    return Split("\n".join(declared), "\n".join(defined), moved)


def _definition_end(lines: list[str], i: int) -> int | None:
    """The last line of the non-template inline function defined from line ``i``,
    or None when line ``i`` does not start one."""
    if not _INLINE_FN.match(lines[i]):
        return None
    if i > 0 and lines[i - 1].lstrip().startswith("template"):
        return None
    depth = 0
    opened = False
    for j in range(i, len(lines)):
        for ch in _code(lines[j]):
            if ch == "{":
                depth += 1
                opened = True
            elif ch == "}":
                depth -= 1
        if opened and depth == 0:
            return j
        if not opened and ";" in _code(lines[j]):
            return None  # a declaration, not a definition
    raise ValueError(f"unbalanced braces after line {i + 1}: {lines[i]!r}")


def _body_start(chunk: str) -> int:
    """Offset of the ``{`` that opens the function body: the first brace outside
    parentheses (default arguments may hold braces)."""
    parens = 0
    for pos, ch in _code_positions(chunk):
        if ch == "(":
            parens += 1
        elif ch == ")":
            parens -= 1
        elif ch == "{" and parens == 0:
            return pos
    raise ValueError(f"no function body in {chunk[:80]!r}")


def _code(line: str) -> str:
    """The characters of ``line`` outside string and character literals and ``//``
    comments (block comments do not occur at these lines' ends in the runtime)."""
    return "".join(ch for _, ch in _code_positions(line))


def _code_positions(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    quote = ""
    k = 0
    while k < len(text):
        ch = text[k]
        if quote:
            if ch == "\\":
                k += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif text.startswith("//", k):
            nl = text.find("\n", k)
            if nl < 0:
                break
            k = nl
            continue
        else:
            out.append((k, ch))
        k += 1
    return out


def write_views(include_dir: str, declared_dir: str, defined_dir: str) -> int:
    """Write both views of every header under ``include_dir``; the number of
    definitions moved to the library."""
    moved = 0
    for dirpath, dirnames, names in os.walk(include_dir):
        dirnames.sort()
        rel_dir = os.path.relpath(dirpath, include_dir)
        for name in sorted(names):
            with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                split = split_header(f.read())
            moved += split.moved
            for root, text in (
                (declared_dir, split.declared),
                (defined_dir, split.defined),
            ):
                folder = os.path.normpath(os.path.join(root, rel_dir))
                os.makedirs(folder, exist_ok=True)
                with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
                    f.write(text)
    return moved
