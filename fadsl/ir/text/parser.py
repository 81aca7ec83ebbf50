"""Textual IR -> ir.Kernel: the lark grammar, the cached parser and the entry points.

``parse_kernel`` parses with ``grammar.lark`` (LALR, positions on), builds nodes from
the tree (``from_tree``), checks the structure (``verify``) and the type rules of
every op, and raises IRParseError / ShapeError / DTypeError pointing into the text.
Nothing in the text is executed: expressions are built from the parse tree. lark is
imported on first use only, so commands that never read IR do not pay for it.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from fadsl.errors import IRParseError, Loc
from fadsl.ir.expr import Expr
from fadsl.ir.text.from_tree import TreeReader
from fadsl.ir.nodes import Kernel
from fadsl.ir.text.parse_errors import syntax_error
from fadsl.ir.text.tree_values import Mismatch, ValueReader
from fadsl.ir.verify import verify

_GRAMMAR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grammar.lark")
_LARK: Any = None


def _lark() -> Any:
    """The LALR parser for grammar.lark, built once per process."""
    global _LARK
    if _LARK is None:
        import lark

        with open(_GRAMMAR, encoding="utf-8") as f:
            grammar = f.read()
        _LARK = lark.Lark(
            grammar,
            parser="lalr",
            propagate_positions=True,
            maybe_placeholders=True,
            start=["kernel", "expr_only"],
        )
    return _LARK


def parse_tree(text: str, start: str, file: str) -> Any:
    """The lark tree of ``text`` from rule ``start``; raises IRParseError."""
    import lark

    parser = _lark()
    try:
        return parser.parse(text, start=start)
    except lark.UnexpectedInput as exc:
        examples = start == "kernel"

        def parse_fn(t: str) -> Any:
            return parser.parse(t, start=start)

        raise syntax_error(
            exc, text, file, parse_fn, parser.get_terminal, examples
        ) from None


def parse_kernel(text: str, file: str = "<ir>") -> Kernel:
    """Parse one kernel in textual IR; ``file`` names it in error messages."""
    tree = parse_tree(text, "kernel", file)
    reader = TreeReader(text, file)
    kernel = reader.kernel(tree)
    verify(kernel, parsed=True)
    reader.errors.raise_if_any()
    return kernel


def parse_expr(text: str, loc: Loc, float_names: frozenset[str] = frozenset()) -> Expr:
    """Parse an IR expression (``cdiv(Sq, block_q)``) written at ``loc``.

    Names in ``float_names`` become float symbols, the rest integer symbols. Errors
    point into ``loc``'s line, shifted by the column where the text starts.
    """
    try:
        tree = parse_tree(text, "expr_only", loc.file)
        reader = ValueReader(text, loc.file)
        reader.floats = float_names
        return reader.expr(tree)
    except IRParseError as err:
        raise _shifted(err, loc, text) from None
    except Mismatch as exc:
        raise IRParseError(str(exc), loc) from None


def _shifted(err: IRParseError, loc: Loc, text: str) -> IRParseError:
    inner = err.loc
    if inner is None or "\n" in text.strip():
        return IRParseError(err.message, loc, err.hint, err.notes, code=err.code)
    col = loc.col + inner.col
    end = None if inner.end_col is None else loc.col + inner.end_col
    moved = replace(
        inner, file=loc.file, line=loc.line, col=col, end_col=end, text=loc.text
    )
    return IRParseError(err.message, moved, err.hint, err.notes, code=err.code)


__all__ = ["parse_kernel", "parse_expr", "parse_tree"]
