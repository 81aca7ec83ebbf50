"""Random DSL programs as Python source: typed so most are valid, then maybe broken.

A program is one ``@fd.kernel`` over ``x[B, S, D]`` and ``y[B, T, D]`` writing
``o[B, S, D]``: a grid over (batch, row block), a few straight-line statements, a KV
loop (pipelined, serial or ``range``) with loop-carried ``acc``, more statements, and a
store. Statements are drawn from the op set (unary and binary elementwise ops,
comparisons and mask logic, ``where``, ``cast``, row reductions, ``dot``, ``full``,
``arange``, broadcasting with ``[:, None]``, compile-time ``if``) with types tracked,
so the unbroken program type-checks. ``BREAKAGES`` then names one typical mistake a
user makes; ``broken_programs`` applies one of them, or a random token edit.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from hypothesis import strategies as st

SHAPES = {
    "QD": "(bq, D)",
    "KD": "(bk, D)",
    "QK": "(bq, bk)",
    "Q": "(bq,)",
    "K": "(bk,)",
}
ROW_OF = {"QD": "Q", "QK": "Q", "KD": "K"}
FLOATS = ("f16", "f32")
UNARY = ("exp", "exp2", "log", "tanh", "sqrt", "abs")
BINARY = ("+", "-", "*", "/", "fd.maximum", "fd.minimum")
COMPARE = ("<", "<=", ">", ">=", "==", "!=")
LITERALS = ("0.5", "2.0", "1", "-1.5", "scale", "-fd.inf", "0.0")
SHAPE_ARG = "B=1,S=40,T=24,D=16"
"""The shape the CLI runs programs at: a tail block in S and T, two KV blocks."""

HEADER = """\
import fadsl as fd


@fd.kernel(dtype="{dtype}", default_shape=dict(B=1, S=40, T=24, D=16))
def {name}(
    x: fd.In("B", "S", "D"),
    y: fd.In("B", "T", "D"),
    o: fd.Out("B", "S", "D"),
    scale: fd.Scalar = 0.5,
    bq: int = 16,
    bk: int = 16,
    flag: bool = {flag},
):
    B, S, D = x.shape
    T = y.shape[1]
    for b, i in fd.grid(B, fd.cdiv(S, bq)):
        rows = fd.ds(i * bq, bq)
        xt = fd.load(x[b, rows, :], pad=0)
        qi = fd.arange(i * bq, bq)
        acc = fd.zeros((bq, D), fd.f32)
"""


@dataclass(frozen=True)
class Var:
    """A name bound to a tile of a shape tag (see SHAPES) and dtype."""

    name: str
    shape: str
    dtype: str


@dataclass
class Scope:
    """The variables visible at a point of the program, and fresh names."""

    vars: list[Var] = field(default_factory=list)
    counter: int = 0

    def fresh(self) -> str:
        self.counter += 1
        return f"t{self.counter}"

    def of(self, pred: Callable[[Var], bool]) -> list[Var]:
        return [v for v in self.vars if pred(v)]


class Writer:
    """Draws typed statements into source lines (``draw`` is hypothesis's)."""

    def __init__(self, draw: Callable, dtype: str) -> None:  # type: ignore[type-arg]
        self.draw = draw
        self.elem = "f16" if dtype == "fp16" else ("f32" if dtype == "fp32" else "bf16")
        self.lines: list[str] = []

    def pick(self, options: list[Var]) -> Var:
        return options[self.draw(st.integers(0, len(options) - 1))]

    def emit(self, scope: Scope, indent: str, expr: str, shape: str, dtype: str) -> Var:
        var = Var(scope.fresh(), shape, dtype)
        self.lines.append(f"{indent}{var.name} = {expr}")
        scope.vars.append(var)
        return var

    def statement(self, scope: Scope, indent: str) -> None:
        makers = [
            self._unary,
            self._binary,
            self._compare,
            self._logic,
            self._where,
            self._cast,
            self._reduce,
            self._full,
            self._dot,
            self._if,
        ]
        maker = makers[self.draw(st.integers(0, len(makers) - 1))]
        maker(scope, indent)

    def _floats(self, scope: Scope) -> list[Var]:
        return scope.of(lambda v: v.dtype in FLOATS or v.dtype == "bf16")

    def _unary(self, scope: Scope, indent: str) -> None:
        a = self.pick(self._floats(scope))
        op = self.draw(st.sampled_from(UNARY + ("-",)))
        expr = f"-{a.name}" if op == "-" else f"fd.{op}({a.name})"
        self.emit(scope, indent, expr, a.shape, a.dtype)

    def _binary(self, scope: Scope, indent: str) -> None:
        a = self.pick(self._floats(scope))
        rhs = self._partner(scope, a)
        op = self.draw(st.sampled_from(BINARY))
        expr = (
            f"{op}({a.name}, {rhs})" if op.startswith("fd.") else f"{a.name} {op} {rhs}"
        )
        self.emit(scope, indent, expr, a.shape, a.dtype)

    def _partner(self, scope: Scope, a: Var) -> str:
        """A second operand for ``a``: a literal, a same-typed tile or a row broadcast."""
        same = scope.of(lambda v: v.shape == a.shape and v.dtype == a.dtype)
        rows = scope.of(lambda v: v.shape == ROW_OF.get(a.shape) and v.dtype == a.dtype)
        kind = self.draw(st.sampled_from(("literal", "same", "row")))
        if kind == "same" and same:
            return self.pick(same).name
        if kind == "row" and rows:
            return f"{self.pick(rows).name}[:, None]"
        return self.draw(st.sampled_from(LITERALS))

    def _compare(self, scope: Scope, indent: str) -> None:
        a = self.pick(scope.vars)
        if a.dtype == "bool":
            a = self.pick(self._floats(scope))
        op = self.draw(st.sampled_from(COMPARE))
        rhs = "S" if a.dtype == "i32" else self._partner(scope, a)
        self.emit(scope, indent, f"{a.name} {op} {rhs}", a.shape, "bool")

    def _logic(self, scope: Scope, indent: str) -> None:
        masks = scope.of(lambda v: v.dtype == "bool")
        if not masks:
            return self._compare(scope, indent)
        a = self.pick(masks)
        same = scope.of(lambda v: v.dtype == "bool" and v.shape == a.shape)
        b = self.pick(same)
        expr = self.draw(
            st.sampled_from(
                (f"{a.name} & {b.name}", f"{a.name} | {b.name}", f"~{a.name}")
            )
        )
        self.emit(scope, indent, expr, a.shape, "bool")
        return None

    def _where(self, scope: Scope, indent: str) -> None:
        masks = scope.of(lambda v: v.dtype == "bool")
        if not masks:
            return self._compare(scope, indent)
        c = self.pick(masks)
        values = self._floats(scope)
        fits = [v for v in values if v.shape == c.shape]
        if not fits:
            other = self.draw(st.sampled_from(("0.5", "-1.5", "scale", "-fd.inf")))
            ones = f"fd.full({SHAPES[c.shape]}, 1.0, fd.f32)"
            expr = f"fd.where({c.name}, {ones}, {other})"
            self.emit(scope, indent, expr, c.shape, "f32")
            return None
        a = self.pick(fits)
        other = self.draw(st.sampled_from(("0.0", "-fd.inf", a.name)))
        self.emit(
            scope, indent, f"fd.where({c.name}, {a.name}, {other})", a.shape, a.dtype
        )
        return None

    def _cast(self, scope: Scope, indent: str) -> None:
        a = self.pick(scope.vars)
        to = self.draw(st.sampled_from(FLOATS))
        fd_name = {"f16": "fd.f16", "f32": "fd.f32"}[to]
        self.emit(scope, indent, f"fd.cast({a.name}, {fd_name})", a.shape, to)

    def _reduce(self, scope: Scope, indent: str) -> None:
        twod = scope.of(lambda v: v.shape in ROW_OF and v.dtype in ("f16", "f32"))
        if not twod:
            return self._full(scope, indent)
        a = self.pick(twod)
        op = self.draw(st.sampled_from(("row_max", "row_sum")))
        self.emit(scope, indent, f"fd.{op}({a.name})", ROW_OF[a.shape], a.dtype)
        return None

    def _full(self, scope: Scope, indent: str) -> None:
        shapes = sorted({v.shape for v in scope.vars} | {"QD", "Q"})
        shape = self.draw(st.sampled_from(shapes))
        dtype = self.draw(st.sampled_from(FLOATS))
        value = self.draw(st.sampled_from(("0.0", "1.0", "-fd.inf", "scale")))
        self.emit(
            scope,
            indent,
            f"fd.full({SHAPES[shape]}, {value}, fd.{dtype})",
            shape,
            dtype,
        )

    def _dot(self, scope: Scope, indent: str) -> None:
        halves = scope.of(lambda v: v.dtype == self.elem)
        qd = [v for v in halves if v.shape == "QD"]
        kd = [v for v in halves if v.shape == "KD"]
        qk = [v for v in halves if v.shape == "QK"]
        if qd and kd:
            expr = (
                f"fd.dot({self.pick(qd).name}, {self.pick(kd).name}, transpose_b=True)"
            )
            self.emit(scope, indent, expr, "QK", "f32")
        elif qk and kd:
            self.emit(
                scope,
                indent,
                f"fd.dot({self.pick(qk).name}, {self.pick(kd).name})",
                "QD",
                "f32",
            )
        else:
            self._unary(scope, indent)

    def _if(self, scope: Scope, indent: str) -> None:
        a = self.pick(self._floats(scope))
        self.lines.append(f"{indent}if flag:")
        self.lines.append(f"{indent}    {a.name} = {a.name} * 2.0")


def _to_acc(v: Var) -> str:
    """An expression of ``v`` (a QD tile) as f32, for ``acc = acc + ...``."""
    if v.dtype == "bool":
        return f"fd.where({v.name}, fd.full((bq, D), 1.0, fd.f32), 0.0)"
    return v.name if v.dtype == "f32" else f"fd.cast({v.name}, fd.f32)"


@st.composite
def valid_programs(draw: Callable) -> str:  # type: ignore[type-arg]
    """The source of a kernel that type-checks (see the module docstring)."""
    dtype = draw(st.sampled_from(("fp16", "fp32", "bf16")))
    w = Writer(draw, dtype)
    scope = Scope(
        [Var("xt", "QD", w.elem), Var("qi", "Q", "i32"), Var("acc", "QD", "f32")]
    )
    pre = draw(st.integers(0, 4))
    for _ in range(pre):
        w.statement(scope, " " * 8)
    loop = draw(
        st.sampled_from(
            ("fd.pipelined(n_kv, stages=2)", "range(n_kv)", "fd.serial(n_kv)")
        )
    )
    w.lines.append("        n_kv = fd.cdiv(T, bk)")
    w.lines.append(f"        for j in {loop}:")
    inner = Scope(list(scope.vars), scope.counter + 100)
    inner.vars += [Var("yt", "KD", w.elem), Var("ki", "K", "i32")]
    w.lines.append("            yt = fd.load(y[b, fd.ds(j * bk, bk), :], pad=0)")
    w.lines.append("            ki = fd.arange(j * bk, bk)")
    for _ in range(draw(st.integers(0, 5))):
        w.statement(inner, " " * 12)
    qd = inner.of(lambda v: v.shape == "QD" and v.name != "acc")
    w.lines.append(f"            acc = acc + {_to_acc(w.pick(qd))}")
    for _ in range(draw(st.integers(0, 3))):
        w.statement(scope, " " * 8)
    out = w.pick(scope.of(lambda v: v.shape == "QD"))
    w.lines.append(f"        fd.store(o[b, rows, :], fd.cast({_to_acc(out)}, o.dtype))")
    flag = draw(st.sampled_from(("False", "True")))
    return (
        HEADER.format(dtype=dtype, name="fuzzed", flag=flag) + "\n".join(w.lines) + "\n"
    )


# ----------------------------------------------------------------------------
# Breakages: one typical user mistake each (text -> text)
# ----------------------------------------------------------------------------


def _sub_first(pattern: str, repl: str) -> Callable[[str], str]:
    return lambda src: re.sub(pattern, repl, src, count=1)


def _insert_in_loop(line: str) -> Callable[[str], str]:
    anchor = "            ki = fd.arange(j * bk, bk)\n"
    return lambda src: src.replace(anchor, anchor + "            " + line + "\n", 1)


def _insert_in_grid(line: str) -> Callable[[str], str]:
    anchor = "        qi = fd.arange(i * bq, bq)\n"
    return lambda src: src.replace(anchor, anchor + "        " + line + "\n", 1)


BREAKAGES: dict[str, Callable[[str], str]] = {
    "unknown_op": _sub_first(r"fd\.(cast|load|arange|zeros)\(", r"fd.\1x("),
    "unknown_keyword": _sub_first(r"pad=0\)", "pad=0, padding=1)"),
    "dot_shapes": _insert_in_loop("bad = fd.dot(xt, yt)"),
    "dot_rank": _insert_in_loop("bad = fd.dot(qi, yt)"),
    "dtype_mix": _insert_in_grid("bad = fd.cast(xt, fd.f16) + acc"),
    "loop_type_change": _insert_in_loop("acc = fd.cast(acc, fd.f16)"),
    "loop_shape_change": _insert_in_loop("acc = fd.row_sum(acc)"),
    "while_loop": _insert_in_grid("while flag:\n            pass"),
    "lambda": _insert_in_grid("f = lambda t: t"),
    "comprehension": _insert_in_grid("ts = [xt for _ in range(2)]"),
    "import_in_kernel": _insert_in_grid("import os"),
    "undefined_name": _insert_in_grid("bad = fd.exp(xtt)"),
    "loop_local_after_loop": lambda src: src.replace(
        "        fd.store(", "        bad = yt\n        fd.store(", 1
    ),
    "store_to_input": _sub_first(r"fd\.store\(o\[", "fd.store(x["),
    "store_not_tile": _sub_first(
        r"fd\.store\(o\[b, rows, :\], .*\)\n", "fd.store(o[b, rows, :], 1.0)\n"
    ),
    "wrong_index_rank": _sub_first(r"x\[b, rows, :\]", "x[b, rows]"),
    "branch_on_tile": _insert_in_grid("if xt:\n            pass"),
    "python_call": _insert_in_grid("bad = open('x')"),
    "no_grid": lambda src: src.replace(
        "for b, i in fd.grid(B, fd.cdiv(S, bq)):", "for b, i in [(0, 0)]:", 1
    ),
    "no_kernel": lambda src: src.replace("@fd.kernel(", "_unused = dict(", 1).replace(
        "def fuzzed(", ")\ndef fuzzed(", 1
    ),
    "bad_kernel_name": _sub_first(r'dtype="', 'name="../evil", dtype="'),
    "missing_annotation": _sub_first(r"    scale: fd\.Scalar = 0\.5,", "    scale,"),
    "syntax_error": _sub_first(r"\)\n", "\n"),
    "raises_at_import": lambda src: src.replace(
        "import fadsl as fd\n", "import fadsl as fd\n1 / 0\n", 1
    ),
    "bad_dtype_arg": _sub_first(r'dtype="\w+"', 'dtype="fp8"'),
    "bad_cast_dtype": _insert_in_grid('bad = fd.cast(xt, "float16")'),
    "non_constant_range": _insert_in_grid("for z in range(xt):\n            pass"),
    "tuple_unpack": _insert_in_grid("p, q = xt"),
    "chained_compare": _insert_in_grid("bad = 0 < xt < 1"),
    "full_bad_shape": _insert_in_grid("bad = fd.full((bq, xt), 0.0)"),
}


def token_edit(draw: Callable, src: str) -> str:  # type: ignore[type-arg]
    """Replace, delete or duplicate one token of ``src`` at a drawn position."""
    tokens = list(re.finditer(r"[A-Za-z_][A-Za-z0-9_.]*|\d+(\.\d+)?|\S", src))
    m = tokens[draw(st.integers(0, len(tokens) - 1))]
    pool = (
        "fd.exp",
        "xt",
        "acc",
        "bq",
        "0",
        "-1",
        "(",
        ")",
        "[",
        "]",
        ",",
        ":",
        "None",
        "fd.f16",
        "fd.grid",
        "yt",
        "j",
        "1e30",
        "True",
        "*",
        "=",
        "fd.dot",
        ".shape",
    )
    action = draw(st.sampled_from(("replace", "delete", "duplicate")))
    if action == "replace":
        return src[: m.start()] + draw(st.sampled_from(pool)) + src[m.end() :]
    if action == "delete":
        return src[: m.start()] + src[m.end() :]
    return src[: m.end()] + " " + m.group(0) + src[m.end() :]


@st.composite
def broken_programs(draw: Callable) -> tuple[str, str]:  # type: ignore[type-arg]
    """(breakage name, source): one named mistake or one random token edit."""
    src = draw(valid_programs())
    names = sorted(BREAKAGES) + ["token_edit"]
    name = draw(st.sampled_from(names))
    if name == "token_edit":
        return name, token_edit(draw, src)
    return name, BREAKAGES[name](src)
