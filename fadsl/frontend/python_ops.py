"""What a kernel may do with Python values: operators, safe builtins, call checks, and
the names used in error messages for Python constructs and values."""

from __future__ import annotations

import ast
import builtins
import difflib
import inspect
from typing import Any

import sympy

from fadsl.errors import KernelSyntaxError, Loc
from fadsl.frontend import ops, tile_ops
from fadsl.frontend.source import in_package, traceback_loc
from fadsl.ir.expr import as_expr

SAFE_BUILTINS = {
    name: getattr(builtins, name)
    for name in (
        "min",
        "max",
        "abs",
        "float",
        "int",
        "len",
        "tuple",
        "range",
        "isinstance",
        "print",
        "bool",
        "round",
    )
}
SAFE_BUILTINS.update({"True": True, "False": False, "None": None})

BINOPS: dict[type, Any] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: python_floordiv(a, b),
    ast.Mod: lambda a, b: python_mod(a, b),
    ast.Pow: lambda a, b: a**b,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b,
}
CMPOPS: dict[type, Any] = {
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.Eq: lambda a, b: python_eq(a, b),
    ast.NotEq: lambda a, b: python_ne(a, b),
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
}


def python_floordiv(a: Any, b: Any) -> Any:
    if isinstance(a, ops.Tile) or isinstance(b, ops.Tile):
        return a // b
    if isinstance(a, sympy.Basic) or isinstance(b, sympy.Basic):
        return tile_ops.floordiv(a, b)
    return a // b


def python_mod(a: Any, b: Any) -> Any:
    if isinstance(a, ops.Tile) or isinstance(b, ops.Tile):
        return a % b
    if isinstance(a, sympy.Basic) or isinstance(b, sympy.Basic):
        return sympy.Mod(as_expr(a), as_expr(b))
    return a % b


def python_eq(a: Any, b: Any) -> Any:
    if isinstance(a, ops.Tile) or isinstance(b, ops.Tile):
        return a == b
    if isinstance(a, sympy.Basic) or isinstance(b, sympy.Basic):
        return sympy.Eq(as_expr(a), as_expr(b))
    return a == b


def python_ne(a: Any, b: Any) -> Any:
    if isinstance(a, ops.Tile) or isinstance(b, ops.Tile):
        return a != b
    if isinstance(a, sympy.Basic) or isinstance(b, sympy.Basic):
        return sympy.Ne(as_expr(a), as_expr(b))
    return a != b


def binds_arguments(fn: Any, args: list[Any], kwargs: dict[str, Any]) -> bool:
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return False
    except ValueError:  # no signature to check (a C function): let the call decide
        return True
    return True


def bad_arguments(
    fn: Any, args: list[Any], kwargs: dict[str, Any], loc: Loc
) -> KernelSyntaxError:
    """fd.op(...) called with arguments its signature does not take."""
    sig = inspect.signature(fn)
    names = list(sig.parameters)
    unknown = [k for k in kwargs if k not in names]
    hint = f"fd.{fn.__name__}({plain_params(sig)})"
    if unknown:
        close = difflib.get_close_matches(unknown[0], names, n=1)
        problem = f"fd.{fn.__name__} has no keyword `{unknown[0]}`"
        hint = (f"did you mean `{close[0]}`? " if close else "") + "it takes " + hint
    else:
        problem = f"fd.{fn.__name__} does not take {len(args)} positional argument(s)"
        hint = "it takes " + hint
    code = "unknown_keyword" if unknown else None
    return KernelSyntaxError(problem, loc, hint=hint, code=code)


def plain_params(sig: inspect.Signature) -> str:
    """``block, pad=None`` (``*, `` before keyword-only ones): no annotations."""
    parts: list[str] = []
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and "*" not in parts:
            parts.append("*")
        prefix = "*" if p.kind is p.VAR_POSITIONAL else ""
        default = "" if p.default is p.empty else f"={p.default!r}"
        parts.append(f"{prefix}{p.name}{default}")
    return ", ".join(parts)


def qualified_name(fn: Any) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(
        fn, "__name__", type(fn).__name__
    )
    module = getattr(fn, "__module__", None) or ""
    if module in ("builtins", "") or module.startswith("numpy"):
        module = "numpy" if module.startswith("numpy") else module
    return f"{module}.{name}" if module and module != "builtins" else name


def type_text(v: Any) -> str:
    if isinstance(v, ops.Tile):
        return f"a tile {v.type}"
    return (
        f"the scalar {v}"
        if isinstance(v, (int, float, sympy.Basic))
        else type(v).__name__
    )


def helper_error(fn: Any, exc: Exception, call: Loc) -> KernelSyntaxError:
    """A Python error inside a helper (or a mod) the kernel calls, at the user's line."""
    where, name = traceback_loc(exc) or (call, fn.__name__)
    shown = where != call and not in_package(call.file)  # not from fadsl's FA2 library
    notes = (f"called from {call}",) if shown else ()
    return KernelSyntaxError(
        f"`{name}` raised {type(exc).__name__}: {exc}",
        where,
        notes=notes,
        hint="helpers and mods run while the kernel is traced, on tiles: use fd ops and "
        "Python arithmetic; numpy, math and I/O cannot see tile values",
        code="score_mod_calls_numpy",
    )


def ops_grid() -> Any:
    from fadsl.frontend import loops

    return loops.grid


def ops_pipelined() -> Any:
    from fadsl.frontend import loops

    return loops.pipelined


def is_fadsl_op(fn: Any) -> bool:
    module = getattr(fn, "__module__", "") or ""
    return module.startswith("fadsl.frontend") or module.startswith("sympy")


def describe(node: ast.AST) -> str:
    name = type(node).__name__
    return {
        "Lambda": "a lambda",
        "ListComp": "a list comprehension",
        "While": "a while loop",
        "With": "a with statement",
        "Try": "try/except",
        "Yield": "yield",
        "GeneratorExp": "a generator expression",
        "Dict": "a dict literal",
        "Starred": "*-unpacking",
        "JoinedStr": "an f-string",
        "Await": "await",
        "NamedExpr": "the walrus operator",
        "Return": "return with a value",
        "FunctionDef": "a nested function definition",
        "Global": "global",
        "Nonlocal": "nonlocal",
        "Delete": "del",
        "Import": "import",
        "ImportFrom": "import",
        "Raise": "raise",
        "ClassDef": "a class definition",
        "Set": "a set literal",
        "DictComp": "a dict comprehension",
        "SetComp": "a set comprehension",
        "Match": "match",
        "MatMult": "@ (use fd.dot)",
        "Pow": "**",
        "LShift": "<<",
        "RShift": ">>",
        "BitXor": "^",
        "In": "`in`",
        "NotIn": "`not in`",
    }.get(name, name)


def describe_value(v: Any) -> str:
    name = getattr(v, "__qualname__", None) or getattr(v, "__name__", None)
    return f"`{name}`" if name else f"a {type(v).__name__}"


def is_plain_const(v: Any) -> bool:
    return isinstance(v, (int, float, bool, str)) or v is None


def const_value(v: Any) -> Any:
    return "None" if v is None else v
