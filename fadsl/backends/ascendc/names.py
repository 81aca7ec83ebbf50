"""C++ spellings for the Ascend C backend: types, constants, symbols, values, comments."""

from __future__ import annotations

import math
import os

import sympy

from fadsl.errors import BackendError, Loc
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, as_expr
from fadsl.ir.expr_print import to_cxx
from fadsl.ir.types import DType
from fadsl.plan.memory.vector_slots import camel

from fadsl.backends.ascendc.mangle import Mangler

CTYPE = {
    DType.F16: "half",
    DType.BF16: "bfloat16_t",
    DType.F32: "float",
    DType.I32: "int32_t",
    DType.I8: "int8_t",
    DType.U8: "uint8_t",
}

CMPMODE = {ir.Lt: "LT", ir.Le: "LE", ir.Gt: "GT", ir.Ge: "GE", ir.Eq: "EQ", ir.Ne: "NE"}
FLIPPED = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "EQ": "EQ", "NE": "NE"}
ROWS = "ROWS"
ROWS_SYMBOL = "ROWS%"
ROW0_SYMBOL = "row0%"
"""Sympy names of ``ROWS`` and ``row0`` in index expressions: no IR name has a ``%``,
and they sort among other symbols as ``ROWS`` and ``row0`` do (terms keep their order).
Row block ``i > 0`` (``plan/memory/row_split.py``) has ``ROWS%i`` and ``row0%i``."""
PARAM_FORMS = ("{}", "{}Gm", "{}Bytes", "{}Host", "{}Device")
"""C++ identifiers made from a tensor parameter (kernel, entry and host main.cpp)."""


def _nth(i: int) -> str:
    """The suffix of row block ``i``'s symbols: none for the primary."""
    return str(i) if i else ""


def ctype(dtype: DType, loc: Loc | None = None) -> str:
    if dtype not in CTYPE:
        raise BackendError(
            f"dtype {dtype.value} has no Ascend C element type here", loc
        )
    return CTYPE[dtype]


def const_name(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and name[i - 1].islower():
            out.append("_")
        out.append(ch.upper())
    return "".join(out)


class Names:
    """Maps IR symbols and names to C++ (constants, tiling fields, locals, members),
    every identifier through one Mangler (mangle.py)."""

    def __init__(
        self,
        mangler: Mangler,
        consts: dict[str, object],
        comptime: dict[str, int],
        runtime_syms: tuple[str, ...],
        scalars: tuple[str, ...],
        rows: tuple[Expr, ...],
        tiling: str = "tiling_",
    ) -> None:
        self.m = mangler
        self.fixed: dict[str, int] = {
            k: v
            for k, v in list(consts.items()) + list(comptime.items())
            if isinstance(v, int) and not isinstance(v, bool)
        }
        """Values of the symbols fixed at compile time (tile constants, shape symbols)."""
        self.symbols: dict[str, str] = {}
        self.rows = rows
        """The row blocks split between the AIVs, the primary (``ROWS``) first."""
        for i, b in enumerate(rows):
            self.symbols[ROWS_SYMBOL + _nth(i)] = self.rows_const(b)
            self.symbols[ROW0_SYMBOL + _nth(i)] = self.row0_var(b)
        for k in list(consts) + list(comptime):
            self.symbols[k] = self.const(k)
        for k in list(runtime_syms) + list(scalars):
            self.symbols[k] = f"{tiling}.{self.field(k)}"

    # --- identifiers --------------------------------------------------------------
    def const(self, name: str) -> str:
        """``constexpr`` of a tile constant or compile-time shape symbol."""
        return self.m.claim("const", name, const_name(name), ("kernel",))

    def field(self, name: str) -> str:
        """Member of the tiling struct: a runtime shape symbol or scalar."""
        return self.m.claim("field", name, name, ("tiling",))

    def var(self, name: str) -> str:
        """Local of an IR value, loop or grid variable, or load_scalar name."""
        return self.m.claim("ir", name, camel(name), ("kernel",))

    def buf(self, name: str) -> str:
        """Member of a planned buffer (TQue / TBuf), by its plan name."""
        return self.m.claim("buf", name, name, ("kernel",))

    def queue(self, value: str) -> str:
        """Member of the buffer the plan made for queue value ``value``."""
        return self.buf(camel(value))

    def param(self, name: str) -> str:
        """C++ name of tensor parameter ``name`` (its files keep the user's name)."""
        return self.m.claim(
            "param", name, name, ("kernel", "entry", "host"), PARAM_FORMS
        )

    def gm(self, name: str) -> str:
        """GlobalTensor member of tensor parameter ``name``."""
        return self.param(name) + "Gm"

    def flag(self, value: str) -> str:
        return self.m.claim(
            "flag", value, f"FLAG_{const_name(camel(value))}", ("kernel",)
        )

    def workspace(self, value: str, plan_name: str) -> tuple[str, str]:
        """(GlobalTensor member, byte-offset constant) of the workspace of ``value``."""
        gm = self.m.claim("ws", value, camel(plan_name) + "Gm", ("kernel",))
        off = const_name(camel(plan_name)) + "_OFFSET"
        return gm, self.m.claim("ws_offset", value, off, ("kernel",))

    def rows_const(self, block: Expr) -> str:
        """``constexpr`` of the rows of row block ``block`` one AIV owns (``ROWS``)."""
        if block == self.rows[0]:
            return ROWS
        stem = ROWS + "_" + const_name(str(block))
        return self.m.claim("rows", str(block), stem, ("kernel",))

    def row0_var(self, block: Expr) -> str:
        """Local holding this AIV's first row of a tile of row block ``block``."""
        if block == self.rows[0]:
            return "row0"
        stem = "row0" + const_name(str(block)).title().replace("_", "")
        return self.m.claim("row0", str(block), stem, ("kernel",))

    def row0_symbol(self, block: Expr) -> sympy.Symbol:
        """``row0`` of row block ``block`` in an index expression."""
        i = self.rows.index(block)
        return sympy.Symbol(ROW0_SYMBOL + _nth(i), integer=True)

    def local(self, name: str) -> None:
        if name not in self.symbols:
            self.symbols[name] = self.var(name)

    # --- expressions --------------------------------------------------------------
    def expr(self, e: Expr) -> str:
        """Integer C++ expression (int64_t arithmetic)."""
        e = as_expr(e)
        for i, b in enumerate(self.rows):
            e = e.subs(
                b / 2,
                sympy.Symbol(ROWS_SYMBOL + _nth(i), integer=True, nonnegative=True),
            )
        for s in e.free_symbols:
            if s.name not in self.symbols:
                self.local(s.name)
        return to_cxx(e, self.symbols)

    def count(self, shape: tuple[Expr, ...]) -> str:
        return self.expr(sympy.Mul(*shape) if shape else sympy.Integer(1))

    def scalar(self, e: Expr, dtype: DType) -> str:
        """A value of element type ``dtype`` from a scalar expression."""
        e = as_expr(e)
        ct = ctype(dtype)
        if e is sympy.oo or e is -sympy.oo:
            text = "fadsl::Inf()" if e is sympy.oo else "fadsl::NegInf()"
        elif e.is_Number:
            text = _float_literal(float(e)) if dtype.is_float else str(int(e))
        elif e.is_integer:
            text = f"static_cast<float>({self.expr(e)})"
        else:
            text = self._float_expr(e)
        return text if ct == "float" else f"static_cast<{ct}>({text})"

    def _float_expr(self, e: Expr) -> str:
        if e.is_Symbol:
            if e.name not in self.symbols:
                self.local(e.name)
            return self.symbols[e.name]
        if e.is_Number:
            return _float_literal(float(e))
        if e.is_integer:
            return f"static_cast<float>({self.expr(e)})"
        if isinstance(e, sympy.Add):
            return "(" + " + ".join(self._float_expr(a) for a in e.args) + ")"
        if isinstance(e, sympy.Mul):
            return "(" + " * ".join(self._float_expr(a) for a in e.args) + ")"
        if isinstance(e, sympy.Pow) and e.exp == -1:
            return f"(1.0f / {self._float_expr(e.base)})"
        if all(s.name in self.fixed for s in e.free_symbols):
            # fixed at compile time (D ** -0.5 with D a constexpr): fold it here
            value = float(e.subs({s: self.fixed[s.name] for s in e.free_symbols}))
            return f"{_float_literal(value)} /* {e} */"
        runtime = sorted(s.name for s in e.free_symbols if s.name not in self.fixed)
        raise BackendError(
            f"the scalar {e} cannot be computed in the kernel: "
            f"{', '.join(runtime)} {'is' if len(runtime) == 1 else 'are'} only known "
            "at run time, and the kernel computes only + - * and 1/x of such values",
            hint=f"compute it on the host: make it a scalar parameter, e.g. "
            f'`c: fd.Scalar = "{e}"`, and use `c` in the kernel',
            code="scalar_of_runtime_symbol",
        )


def _float_literal(v: float) -> str:
    if math.isinf(v):
        return "fadsl::Inf()" if v > 0 else "fadsl::NegInf()"
    text = repr(float(v))
    if "e" not in text and "." not in text:
        text += ".0"
    return text + "f"


def source_comment(loc: Loc) -> str:
    """``// fa2.py:77  s = fd.dot(...)`` for the user's line (or the pass that made it)."""
    src = loc.source_line().strip()
    where = f"{os.path.basename(loc.file)}:{loc.line}"
    text = f"// {where}  {src}" if src else f"// {where}"
    if loc.by:
        text += f"  [{loc.by}]"
    return text[:160]


def buffer_len(b: object, align: int, names: Names, env: dict[str, object]) -> str:
    """InitBuffer length of one slot of planned buffer ``b``: readable when aligned."""
    from fadsl.ir.expr import evaluate

    need = max(align, getattr(b, "min_align", 0))
    raw = b.slot_bytes()  # type: ignore[attr-defined]
    value = int(evaluate(sympy.sympify(raw), env))
    padded = -(-value // need) * need
    shape = getattr(b, "shape", ())
    dtype = getattr(b, "dtype", None)
    if value != padded or getattr(b, "bits_per_element", 0):
        return str(padded)
    if dtype in CTYPE and dtype is not DType.U8:
        return f"{names.count(tuple(shape))} * sizeof({CTYPE[dtype]})"
    if isinstance(raw, (sympy.Max, sympy.Min)):
        try:
            return names.expr(raw)
        except (
            ValueError
        ):  # e.g. bit-mask sizes with ceiling(): the number reads as well
            return str(padded)
    return str(padded)
