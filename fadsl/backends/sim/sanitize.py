"""The sanitizer's reports, located in the user's kernel.

With ``FADSL_SANITIZE=1`` the CPU runtime reports cross-pipe races, uninitialised reads
and unpaired flags (``fadsl/runtime/cpu/README.md``, "Sanitizer"), each naming the
generated lines (``at fa2_bwd_kernel.cpp:740``). The backend writes a comment
``// <file>.py:<line>  <statement>`` above the code of each DSL statement, so a generated
line maps to the DSL line whose comment is the nearest one above it. ``locate`` adds
that DSL line to every generated line a runtime message names.
"""

from __future__ import annotations

import os
import re
from typing import Mapping

ENV = "FADSL_SANITIZE"
"""The runtime's switch; ``fadsl sim --sanitize`` and ``fd.sim(sanitize=True)`` set it."""

REPORT = "fadsl-cpu-runtime: sanitize:"
"""The prefix of every sanitizer line on stderr."""

_SITE = re.compile(r"\b([\w.-]+\.(?:cpp|h)):(\d+)\b")
_DSL = re.compile(r"//\s*([\w./-]+\.py):(\d+)\b")


def requested(flag: bool) -> bool:
    """On when asked for, or when the environment already turns it on (the test suite)."""
    value = os.environ.get(ENV, "")
    return flag or (value not in ("", "0"))


def dsl_line(source: str, line: int) -> str | None:
    """The ``file.py:N`` of the DSL statement generated line ``line`` of ``source``
    belongs to, or None (a line before the first statement comment)."""
    lines = source.splitlines()
    for no in range(min(line, len(lines)), 0, -1):
        m = _DSL.search(lines[no - 1])
        if m:
            return f"{os.path.basename(m.group(1))}:{m.group(2)}"
    return None


def locate(message: str, sources: Mapping[str, str]) -> str:
    """``message`` with ``[fa2_bwd.py:106]`` after each ``<generated file>:<line>`` whose
    file is in ``sources`` (basename -> text) and maps to a DSL line."""

    def add(m: re.Match[str]) -> str:
        text = sources.get(m.group(1))
        where = dsl_line(text, int(m.group(2))) if text is not None else None
        return m.group(0) + (f" [{where}]" if where else "")

    return _SITE.sub(add, message)


def kernel_sources(folder: str) -> dict[str, str]:
    """The generated C++ files of a built project folder, by basename."""
    out: dict[str, str] = {}
    for dirpath, _, names in os.walk(folder):
        if os.path.basename(dirpath) == "build":
            continue
        for n in names:
            if n.endswith((".cpp", ".h")) and n not in out:
                with open(os.path.join(dirpath, n), encoding="utf-8") as f:
                    out[n] = f.read()
    return out


__all__ = ["ENV", "REPORT", "dsl_line", "kernel_sources", "locate", "requested"]
