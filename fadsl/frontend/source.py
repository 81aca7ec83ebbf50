"""Source locations for ops built while reading or tracing user code.

The AST walker sets ``Builder.loc`` for every node it evaluates. When it calls a user
helper (or a traced score_mod), ops are created from inside the user's own frames; then
the location is that of the innermost frame outside the fadsl package.
"""

from __future__ import annotations

import ast
import os
import sys
import sysconfig
from types import FrameType, TracebackType

from fadsl.errors import Loc

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LIB_DIR = os.path.join(_PKG_DIR, "lib") + os.sep
_BOUNDARIES: set[object] = set()


def boundary(fn):  # type: ignore[no-untyped-def]
    """Mark ``fn`` as the walker's call-out point: frames past it are not user frames."""
    _BOUNDARIES.add(fn.__code__)
    return fn


def is_internal(filename: str) -> bool:
    """True for fadsl's own modules (the library of kernels under fadsl/lib is user code)."""
    path = os.path.abspath(filename)
    return path.startswith(_PKG_DIR) and not path.startswith(_LIB_DIR)


def in_package(filename: str) -> bool:
    """True for any file of the fadsl package, its kernel library included."""
    return os.path.abspath(filename).startswith(_PKG_DIR)


def node_loc(
    node: ast.AST, file: str, line_offset: int = 0, col_offset: int = 0
) -> Loc:
    """Loc of an AST node parsed from a snippet that starts at ``line_offset + 1``."""
    line = getattr(node, "lineno", 1) + line_offset
    col = getattr(node, "col_offset", 0) + col_offset
    end_col = getattr(node, "end_col_offset", None)
    if getattr(node, "end_lineno", None) != getattr(node, "lineno", None):
        end_col = None
    elif end_col is not None:
        end_col += col_offset
    return Loc(file, line, col, end_col)


def frame_loc(frame: FrameType) -> Loc:
    code = frame.f_code
    line = frame.f_lineno
    col, end_col = 0, None
    positions = list(code.co_positions())
    idx = frame.f_lasti // 2
    if 0 <= idx < len(positions):
        pl, pel, pc, pec = positions[idx]
        if pl == line and pc is not None:
            col = pc
            end_col = pec if pel == pl else None
    return Loc(code.co_filename, line, col, end_col)


def user_frame_loc() -> Loc | None:
    """Loc of the innermost user frame between here and the AST walker, if any."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code in _BOUNDARIES:
            return None
        if not is_internal(frame.f_code.co_filename):
            return frame_loc(frame)
        frame = frame.f_back
    return None


_LIBRARY_DIRS = tuple(
    os.path.abspath(p) + os.sep
    for p in {
        sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")
    }
)


def traceback_loc(exc: BaseException) -> tuple[Loc, str] | None:
    """Loc and function name of the innermost frame of ``exc``'s traceback in user code.

    Skips fadsl's modules (not its kernel library), the standard library and
    installed packages, so a helper calling numpy points at the helper's line.
    """
    found = None
    tb: TracebackType | None = exc.__traceback__
    while tb is not None:
        path = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if not is_internal(path) and not path.startswith(_LIBRARY_DIRS):
            found = (_tb_loc(tb), tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return found


def _tb_loc(tb: TracebackType) -> Loc:
    code = tb.tb_frame.f_code
    positions = list(code.co_positions())
    idx = tb.tb_lasti // 2
    if 0 <= idx < len(positions):
        line, end_line, col, end_col = positions[idx]
        if line == tb.tb_lineno and col is not None:
            return Loc(
                code.co_filename, line, col, end_col if end_line == line else None
            )
    return Loc(code.co_filename, tb.tb_lineno)
