"""The user-facing tile ops (``import fadsl as fd``; ``fd.exp``, ``fd.dot``, ...).

Each function validates its Python-level arguments and emits one IR op through the
builder of the kernel being read. Values are ``Tile`` proxies with Python operators;
scalars (shape symbols, loop variables, numbers) are sympy expressions.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from typing import Any

from fadsl.errors import KernelSyntaxError, Loc
from fadsl.frontend.source import user_frame_loc
from fadsl.ir import nodes as ir
from fadsl.ir.builder import Builder
from fadsl.ir.expr import Expr, as_expr, is_int_expr
from fadsl.ir.types import DType, TileType

from fadsl.frontend.dtypes import (  # noqa: F401 (the DSL's names, re-exported)
    bf16,
    bool_,
    f16,
    f32,
    float8_e4m3,
    float8_e5m2,
    i32,
    i8,
    inf,
)


class Tracer:
    """State of one kernel (or mod) being read: its builder and current location."""

    def __init__(self, builder: Builder, loc: Loc) -> None:
        self.builder = builder
        self.loc = loc
        self.scope: list[tuple[str, Expr]] = []
        """The enclosing grid and loop variables: (the user's name, the symbol)."""
        self.grid_vars = 0
        """How many of ``scope`` (the first) are the enclosing grid's variables."""

    def here(self) -> Loc:
        return user_frame_loc() or self.loc


_TRACER: contextvars.ContextVar[Tracer | None] = contextvars.ContextVar(
    "fadsl_tracer", default=None
)


def current() -> Tracer:
    t = _TRACER.get()
    if t is None:
        raise KernelSyntaxError(
            "fadsl ops can only be used inside a @fd.kernel function or a mod "
            "passed to fd.attention",
            user_frame_loc(),
        )
    return t


def activate(tracer: Tracer) -> contextvars.Token:  # type: ignore[type-arg]
    return _TRACER.set(tracer)


def deactivate(token: contextvars.Token) -> None:  # type: ignore[type-arg]
    _TRACER.reset(token)


def emit_op(cls: type[ir.Op], hint: str = "t", **fields: Any) -> Tile:
    t = current()
    value = t.builder.emit(cls, t.here(), hint=hint, **fields)
    assert value is not None
    return Tile(value)


# ----------------------------------------------------------------------------
# Proxies
# ----------------------------------------------------------------------------


class Tile:
    """A tile value while a kernel is being read; supports Python operators."""

    __slots__ = ("value",)

    def __init__(self, value: ir.Value) -> None:
        self.value = value

    @property
    def type(self) -> TileType:
        """The tile's type, e.g. ``f32[block_q, D]``."""
        assert isinstance(self.value.type, TileType)
        return self.value.type

    @property
    def shape(self) -> tuple[Expr, ...]:
        """Its sizes: expressions of shape symbols and tile constants."""
        return tuple(self.type.shape)

    @property
    def dtype(self) -> DType:
        """Its element dtype (``fd.f32``, ``fd.f16``, ...)."""
        return self.type.dtype

    def __repr__(self) -> str:
        return f"Tile(%{self.value.name}: {self.value.type})"

    def __bool__(self) -> bool:
        raise KernelSyntaxError(
            f"the tile %{self.value.name} has no single truth value: Python `if`, "
            "`and`, `or` and `not` need compile-time values",
            current().here(),
            hint="use fd.where(cond, a, b) to select per element, and & | ~ on masks",
        )

    def __iter__(self) -> Iterator[Any]:
        raise KernelSyntaxError("tiles cannot be iterated in Python", current().here())

    def __add__(self, o: Any) -> Tile:
        return binary_op(ir.Add, self, o)

    def __radd__(self, o: Any) -> Tile:
        return binary_op(ir.Add, o, self)

    def __sub__(self, o: Any) -> Tile:
        return binary_op(ir.Sub, self, o)

    def __rsub__(self, o: Any) -> Tile:
        return binary_op(ir.Sub, o, self)

    def __mul__(self, o: Any) -> Tile:
        return binary_op(ir.Mul, self, o)

    def __rmul__(self, o: Any) -> Tile:
        return binary_op(ir.Mul, o, self)

    def __truediv__(self, o: Any) -> Tile:
        return binary_op(ir.Div, self, o)

    def __rtruediv__(self, o: Any) -> Tile:
        return binary_op(ir.Div, o, self)

    def __floordiv__(self, o: Any) -> Tile:
        return binary_op(ir.FloorDivide, self, o)

    def __rfloordiv__(self, o: Any) -> Tile:
        return binary_op(ir.FloorDivide, o, self)

    def __mod__(self, o: Any) -> Tile:
        return binary_op(ir.Remainder, self, o)

    def __rmod__(self, o: Any) -> Tile:
        return binary_op(ir.Remainder, o, self)

    def __pow__(self, o: Any) -> Tile:
        from fadsl.frontend.scalar_math import tile_power

        return tile_power(self, o)

    def __rpow__(self, o: Any) -> Tile:
        from fadsl.frontend.scalar_math import tile_power

        return tile_power(o, self)

    def __neg__(self) -> Tile:
        return emit_op(ir.Neg, x=self.value)

    def __abs__(self) -> Tile:
        return emit_op(ir.Abs, x=self.value)

    def __invert__(self) -> Tile:
        return emit_op(ir.Not, x=self.value)

    def __and__(self, o: Any) -> Tile:
        return _logic(ir.And, self, o)

    def __rand__(self, o: Any) -> Tile:
        return _logic(ir.And, o, self)

    def __or__(self, o: Any) -> Tile:
        return _logic(ir.Or, self, o)

    def __ror__(self, o: Any) -> Tile:
        return _logic(ir.Or, o, self)

    def __lt__(self, o: Any) -> Tile:
        return binary_op(ir.Lt, self, o)

    def __le__(self, o: Any) -> Tile:
        return binary_op(ir.Le, self, o)

    def __gt__(self, o: Any) -> Tile:
        return binary_op(ir.Gt, self, o)

    def __ge__(self, o: Any) -> Tile:
        return binary_op(ir.Ge, self, o)

    def __eq__(self, o: Any) -> Tile:  # type: ignore[override]
        return binary_op(ir.Eq, self, o)

    def __ne__(self, o: Any) -> Tile:  # type: ignore[override]
        return binary_op(ir.Ne, self, o)

    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, key: Any) -> Tile:
        return _expand(self, key)

    def astype(self, dtype: DType) -> Tile:
        """``fd.cast(tile, dtype)``."""
        from fadsl.frontend.tile_ops import cast as cast_op

        return cast_op(self, dtype)


def _expand(t: Tile, key: Any) -> Tile:
    """x[:, None] / x[None, :]: insert unit axes; every other entry must be ``:``."""
    items = key if isinstance(key, tuple) else (key,)
    out = t
    axis = 0
    for item in items:
        if item is None:
            out = emit_op(ir.ExpandDims, hint=t.value.name, x=out.value, axis=axis)
        elif not (isinstance(item, slice) and item == slice(None)):
            raise KernelSyntaxError(
                "tiles are indexed only with `:` and `None` (to add an axis), "
                f"got {item!r}",
                current().here(),
                hint="load the block you need with fd.load(param[...]) instead",
            )
        axis += 1
    return out


# ----------------------------------------------------------------------------
# Operand helpers
# ----------------------------------------------------------------------------


def scalar_operand(x: Any, what: str) -> Expr:
    if isinstance(x, Tile):
        raise KernelSyntaxError(
            f"{what} must be a scalar (shape symbol, loop variable or number), "
            f"got the tile %{x.value.name}",
            current().here(),
        )
    try:
        return as_expr(x)
    except TypeError:
        raise KernelSyntaxError(
            f"{what} must be a scalar expression, got {type(x).__name__}",
            current().here(),
        ) from None


def as_operand(x: Any) -> ir.Operand:
    if isinstance(x, Tile):
        return x.value
    if isinstance(x, bool):
        raise KernelSyntaxError(
            "a Python bool cannot be mixed with tiles",
            current().here(),
            hint="compare tiles to build masks, e.g. kv_idx < Skv",
        )
    e = scalar_operand(x, "operand")
    return ir.Imm(e, DType.I32 if is_int_expr(e) else DType.F32)


def promote(a: ir.Operand, b: ir.Operand) -> tuple[ir.Operand, ir.Operand]:
    """Integer tiles meet floats as floats (FlexAttention users write q_idx * 0.5)."""
    from fadsl.frontend.tile_ops import cast as cast_op

    ta, tb = ir.tile_type(a), ir.tile_type(b)
    fa = _float_kind(a, ta)
    fb = _float_kind(b, tb)
    if ta is not None and ta.dtype.is_int and fb is not None:
        a = cast_op(Tile(a), fb).value  # type: ignore[arg-type]
    if tb is not None and tb.dtype.is_int and fa is not None:
        b = cast_op(Tile(b), fa).value  # type: ignore[arg-type]
    return a, b


def _float_kind(v: ir.Operand, t: TileType | None) -> DType | None:
    if t is not None:
        return t.dtype if t.dtype.is_float else None
    assert isinstance(v, ir.Imm)
    return DType.F32 if v.dtype is DType.F32 else None


def binary_op(cls: type[ir.Binary], a: Any, b: Any) -> Tile:
    lhs, rhs = promote(as_operand(a), as_operand(b))
    return emit_op(cls, lhs=lhs, rhs=rhs)


def _logic(cls: type[ir.Binary], a: Any, b: Any) -> Tile:
    """& and | of masks; a scalar condition (``h >= 2``) is spread over the tile."""
    from fadsl.frontend.conditions import is_condition, spread_like

    for x in (a, b):
        if not isinstance(x, Tile) and not is_condition(x):
            raise KernelSyntaxError(
                f"`{'&' if cls is ir.And else '|'}` combines masks, got {x!r}",
                current().here(),
                hint="combine comparisons, e.g. `(q_idx >= kv_idx) | (h >= 2)`; "
                "True and False are masks too",
                code="mask_combines_number",
            )
    if is_condition(a):
        a = spread_like(a, b)
    if is_condition(b):
        b = spread_like(b, a)
    return binary_op(cls, a, b)


def is_scalar(x: Any) -> bool:
    return not isinstance(x, Tile)


# The tensor side of the DSL (q[b, h, fd.ds(...), :], fd.pages), re-exported here as
# the DSL's names; tensor_refs imports this module only inside its functions.
from fadsl.frontend.tensor_refs import (  # noqa: E402, F401 (the DSL's names)
    Block,
    Ds,
    Pages,
    TensorRef,
    ds,
    pages,
)
