"""The two views of the CPU runtime's headers (fadsl/backends/sim/rt_split.py)."""

from __future__ import annotations

import re
from pathlib import Path

from fadsl.backends.sim import rt_split
from fadsl.runtime import include_dir

HEADER = """#pragma once
inline thread_local int t_x = 0;
inline constexpr int kY = 1;
inline int One(int a) { return a + 1; }
template <typename T>
inline T Twice(T a) {
    return a + a;
}
inline const char* Brace(const char* s = "{", Site at = {}) {
    if (s[0] == '}') return "}";  // a } in a comment
    return s;
}
inline void Declared(int a);
struct S {
    inline int Member() {
        return 3;
    }
};
"""


def test_multi_line_definitions_are_declared_and_defined_once() -> None:
    split = rt_split.split_header(HEADER)
    assert split.moved == 1
    assert 'const char* Brace(const char* s = "{", Site at = {});' in split.declared
    assert "return s;" not in split.declared
    assert '\nconst char* Brace(const char* s = "{", Site at = {}) {' in split.defined
    assert "return s;" in split.defined


def test_everything_else_is_left_as_written() -> None:
    split = rt_split.split_header(HEADER)
    for view in (split.declared, split.defined):
        for kept in (
            "inline thread_local int t_x = 0;",
            "inline constexpr int kY = 1;",
            "inline int One(int a) { return a + 1; }",  # one line: stays inlinable
            "template <typename T>\ninline T Twice(T a) {\n    return a + a;\n}",
            "inline void Declared(int a);",
            "    inline int Member() {\n        return 3;\n    }",
        ):
            assert kept in view, kept


def test_the_runtime_headers_split_into_the_same_lines_but_the_moved_bodies(
    tmp_path: Path,
) -> None:
    moved = rt_split.write_views(
        include_dir(), str(tmp_path / "declared"), str(tmp_path / "defined")
    )
    assert moved > 50  # most of the runtime's non-template functions
    total = 0
    for orig in sorted(Path(include_dir()).rglob("*.h")):
        rel = orig.relative_to(include_dir())
        text = orig.read_text()
        declared = (tmp_path / "declared" / rel).read_text()
        defined = (tmp_path / "defined" / rel).read_text()
        bare = re.sub(r"(?m)^inline ", "", text)
        assert re.sub(r"(?m)^inline ", "", defined) == bare, rel
        total += text.count("\ninline ") - defined.count("\ninline ")
        assert rt_split.split_header(declared).moved == 0, rel  # no body left
    assert total == moved
