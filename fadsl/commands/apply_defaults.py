"""``fadsl tune --apply``: rewrite the default literals of a kernel's tile constants.

Finds the kernel's ``def`` in the user's file through the AST, replaces exactly the
integer literals that are the defaults of the tuned parameters (``block_q: int = 128``),
re-parses the result to prove that only those defaults changed, and writes the file
atomically (a temporary file in the same folder, then ``os.replace``). Refuses textual
IR (.fir) and kernels whose tile program is not in the file (``fd.attention``).
"""

from __future__ import annotations

import ast
import os
import re
import tempfile
from collections.abc import Sequence
from typing import Any

from fadsl.errors import Loc, UsageError


def refuse_unless_editable(path: str, chosen: Any, names: Sequence[str] = ()) -> None:
    """Raise a UsageError unless ``--apply`` can edit ``chosen``'s defaults in ``path``:
    a Python kernel defined in that file whose ``names`` (those it has) default to
    integer literals."""
    if path.endswith(".fir"):
        raise UsageError(
            f"--apply edits the defaults of a Python kernel; {path} is textual IR",
            None,
            hint="pass the tuned values with --set, or edit the constants in the "
            ".fir file by hand",
        )
    fdef = _function(path, chosen)
    params = {
        a.arg for a in fdef.args.posonlyargs + fdef.args.args + fdef.args.kwonlyargs
    }
    for name in names:
        if name in params:
            _default_node(fdef, name, path)


def apply(path: str, chosen: Any, values: dict[str, int]) -> list[str]:
    """Write ``values`` as the defaults; return ``name: old -> new`` for each change."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    fdef = _function(path, chosen, text)
    edits = []
    changed = []
    for name, value in values.items():
        node = _default_node(fdef, name, path)
        if node.value != value:
            edits.append((node, str(value)))
            changed.append(f"{name}: {node.value} -> {value}")
    if not edits:
        return []
    new_text = _replace(text, edits)
    _verify(new_text, chosen, values, path)
    _write_atomic(path, new_text)
    return changed


def _function(path: str, chosen: Any, text: str | None = None) -> ast.FunctionDef:
    fn = getattr(chosen, "fn", None)
    name = getattr(chosen, "name", "?")
    if fn is None:
        raise UsageError(f"--apply: kernel `{name}` has no Python function to edit")
    if text is None:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    same_file = os.path.abspath(fn.__code__.co_filename) == os.path.abspath(path)
    found = _find_def(ast.parse(text), fn.__name__, fn.__code__.co_firstlineno)
    if not same_file or found is None:
        raise UsageError(
            f"--apply: kernel `{name}` is built by fd.attention (its tile program lives "
            f"in the fadsl library, not in {os.path.basename(path)}), so it has no "
            "defaults to rewrite",
            None,
            hint="pass the tuned values with --set block_q=... to compile/run",
        )
    return found


def _find_def(tree: ast.Module, name: str, first_line: int) -> ast.FunctionDef | None:
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef) or node.name != name:
            continue
        lines = [node.lineno] + [d.lineno for d in node.decorator_list]
        if first_line in lines:
            return node
    return None


def _default_node(fdef: ast.FunctionDef, name: str, path: str) -> ast.Constant:
    args = fdef.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
    pairs += [
        (a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None
    ]
    for arg, default in pairs:
        if arg.arg != name:
            continue
        if (
            isinstance(default, ast.Constant)
            and type(default.value) is int
            and default.lineno == default.end_lineno
        ):
            return default
        raise UsageError(
            f"--apply: the default of `{name}` is `{ast.unparse(default)}`, not an "
            "integer literal; fadsl only rewrites literals",
            Loc(
                os.path.abspath(path),
                default.lineno,
                default.col_offset,
                default.end_col_offset,
            ),
            hint=f"write `{name}: int = <number>`",
        )
    raise UsageError(
        f"--apply: kernel `{fdef.name}` has no parameter `{name}` with a " "default",
        Loc(os.path.abspath(path), fdef.lineno, fdef.col_offset),
    )


def _replace(text: str, edits: list[tuple[ast.Constant, str]]) -> str:
    """Replace each node's source span (ast offsets are UTF-8 bytes) with its new text."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)
    for node, new in sorted(
        edits, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True
    ):
        raw = lines[node.lineno - 1].encode("utf-8")
        end = node.end_col_offset if node.end_col_offset is not None else len(raw)
        raw = raw[: node.col_offset] + new.encode("utf-8") + raw[end:]
        lines[node.lineno - 1] = raw.decode("utf-8")
    return "".join(lines)


def _verify(new_text: str, chosen: Any, values: dict[str, int], path: str) -> None:
    fn = chosen.fn
    fdef = _find_def(ast.parse(new_text), fn.__name__, fn.__code__.co_firstlineno)
    if fdef is None or any(
        _default_node(fdef, n, path).value != v for n, v in values.items()
    ):
        from fadsl.errors import InternalError

        raise InternalError(
            f"--apply produced a file whose defaults are not {values}; "
            f"{path} was left unchanged"
        )


def _write_atomic(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    mode = os.stat(path).st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=".fadsl-apply-", suffix=".py", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
