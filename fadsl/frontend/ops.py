"""The user-facing tile ops (``import fadsl as fd``; ``fd.exp``, ``fd.dot``, ...).

Each function validates its Python-level arguments and emits one IR op through the
builder of the kernel being read. Values are ``Tile`` proxies with Python operators;
scalars (shape symbols, loop variables, numbers) are sympy expressions.
"""

from __future__ import annotations

import contextvars
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import sympy

from fadsl.errors import DTypeError, KernelSyntaxError, Loc, ShapeError
from fadsl.frontend.source import user_frame_loc
from fadsl.ir import nodes as ir
from fadsl.ir.builder import Builder
from fadsl.ir.expr import CeilDiv, Expr, FloorDiv, as_expr, is_int_expr
from fadsl.ir.types import DType, TensorType, TileType

f16 = DType.F16
bf16 = DType.BF16
f32 = DType.F32
i32 = DType.I32
bool_ = DType.BOOL
float8_e4m3 = DType.F8E4M3
float8_e5m2 = DType.F8E5M2
inf = math.inf


class Tracer:
    """State of one kernel (or mod) being read: its builder and current location."""

    def __init__(self, builder: Builder, loc: Loc) -> None:
        self.builder = builder
        self.loc = loc

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


def _emit(cls: type[ir.Op], hint: str = "t", **fields: Any) -> Tile:
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
        assert isinstance(self.value.type, TileType)
        return self.value.type

    @property
    def shape(self) -> tuple[Expr, ...]:
        return tuple(self.type.shape)

    @property
    def dtype(self) -> DType:
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
        return _binary(ir.Add, self, o)

    def __radd__(self, o: Any) -> Tile:
        return _binary(ir.Add, o, self)

    def __sub__(self, o: Any) -> Tile:
        return _binary(ir.Sub, self, o)

    def __rsub__(self, o: Any) -> Tile:
        return _binary(ir.Sub, o, self)

    def __mul__(self, o: Any) -> Tile:
        return _binary(ir.Mul, self, o)

    def __rmul__(self, o: Any) -> Tile:
        return _binary(ir.Mul, o, self)

    def __truediv__(self, o: Any) -> Tile:
        return _binary(ir.Div, self, o)

    def __rtruediv__(self, o: Any) -> Tile:
        return _binary(ir.Div, o, self)

    def __floordiv__(self, o: Any) -> Tile:
        return _binary(ir.FloorDivide, self, o)

    def __rfloordiv__(self, o: Any) -> Tile:
        return _binary(ir.FloorDivide, o, self)

    def __mod__(self, o: Any) -> Tile:
        return _binary(ir.Remainder, self, o)

    def __rmod__(self, o: Any) -> Tile:
        return _binary(ir.Remainder, o, self)

    def __neg__(self) -> Tile:
        return _emit(ir.Neg, x=self.value)

    def __abs__(self) -> Tile:
        return _emit(ir.Abs, x=self.value)

    def __invert__(self) -> Tile:
        return _emit(ir.Not, x=self.value)

    def __and__(self, o: Any) -> Tile:
        return _binary(ir.And, self, o)

    def __rand__(self, o: Any) -> Tile:
        return _binary(ir.And, o, self)

    def __or__(self, o: Any) -> Tile:
        return _binary(ir.Or, self, o)

    def __ror__(self, o: Any) -> Tile:
        return _binary(ir.Or, o, self)

    def __lt__(self, o: Any) -> Tile:
        return _binary(ir.Lt, self, o)

    def __le__(self, o: Any) -> Tile:
        return _binary(ir.Le, self, o)

    def __gt__(self, o: Any) -> Tile:
        return _binary(ir.Gt, self, o)

    def __ge__(self, o: Any) -> Tile:
        return _binary(ir.Ge, self, o)

    def __eq__(self, o: Any) -> Tile:  # type: ignore[override]
        return _binary(ir.Eq, self, o)

    def __ne__(self, o: Any) -> Tile:  # type: ignore[override]
        return _binary(ir.Ne, self, o)

    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, key: Any) -> Tile:
        return _expand(self, key)

    def astype(self, dtype: DType) -> Tile:
        return cast(self, dtype)


def _expand(t: Tile, key: Any) -> Tile:
    """x[:, None] / x[None, :]: insert unit axes; every other entry must be ``:``."""
    items = key if isinstance(key, tuple) else (key,)
    out = t
    axis = 0
    for item in items:
        if item is None:
            out = _emit(ir.ExpandDims, hint=t.value.name, x=out.value, axis=axis)
        elif not (isinstance(item, slice) and item == slice(None)):
            raise KernelSyntaxError(
                "tiles are indexed only with `:` and `None` (to add an axis), "
                f"got {item!r}",
                current().here(),
                hint="load the block you need with fd.load(param[...]) instead",
            )
        axis += 1
    return out


@dataclass(frozen=True)
class Ds:
    """A dynamic slice ``start : start + size`` (like Pallas ``pl.ds``)."""

    start: Expr
    size: Expr
    stop: Expr | None = None


def ds(start: Any, size: Any, stop: Any = None) -> Ds:
    """A block of ``size`` positions starting at ``start``: q[b, h, fd.ds(i * bq, bq), :].

    Positions past the tensor's extent form a tail: loads pad them, stores skip them.
    ``stop`` bounds the block further (one sequence of a packed varlen tensor):
    positions at or past it are a tail too.
    """
    bound = None if stop is None else _scalar(stop, "ds stop")
    return Ds(_scalar(start, "ds start"), _scalar(size, "ds size"), bound)


class TensorRef:
    """A tensor parameter inside a kernel: index it to name a block."""

    __slots__ = ("param",)

    def __init__(self, param: ir.Param) -> None:
        self.param = param

    @property
    def type(self) -> TensorType:
        assert isinstance(self.param.type, TensorType)
        return self.param.type

    @property
    def shape(self) -> tuple[Expr, ...]:
        return tuple(self.type.shape)

    @property
    def dtype(self) -> DType:
        return self.type.dtype

    def __getitem__(self, key: Any) -> Block:
        items = key if isinstance(key, tuple) else (key,)
        shape = self.shape
        if len(items) != len(shape):
            raise ShapeError(
                f"`{self.param.name}` has rank {len(shape)} ({self.type}) but is "
                f"indexed with {len(items)} subscript(s)",
                current().here(),
                hint="give one index or slice per dimension, e.g. q[b, h, rows, :]",
            )
        return Block(self, tuple(_index(it, ext) for it, ext in zip(items, shape)))

    def __repr__(self) -> str:
        return f"TensorRef({self.param.name}: {self.type})"


@dataclass(frozen=True)
class Block:
    """A tensor parameter with an index: the operand of fd.load / fd.store."""

    ref: TensorRef
    index: tuple[ir.Index, ...]


def _index(item: Any, extent: Expr) -> ir.Index:
    if isinstance(item, Ds):
        return ir.Slice(item.start, item.size, item.stop)
    if isinstance(item, slice):
        if item.step is not None:
            raise KernelSyntaxError("strided slices are not supported", current().here())
        start = as_expr(0) if item.start is None else _scalar(item.start, "slice start")
        stop = extent if item.stop is None else _scalar(item.stop, "slice stop")
        size = sympy.simplify(stop - start)
        if size.free_symbols & _loop_symbols(start):
            raise ShapeError(
                f"slice {start}:{stop} has a size that changes with the loop "
                f"({size}); tiles need a fixed size",
                current().here(),
                hint="write fd.ds(start, size) with a constant size",
            )
        return ir.Slice(start, size)
    return ir.Point(_scalar(item, "index"))


def _loop_symbols(e: Expr) -> set[sympy.Symbol]:
    return set(e.free_symbols)


# ----------------------------------------------------------------------------
# Operand helpers
# ----------------------------------------------------------------------------


def _scalar(x: Any, what: str) -> Expr:
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


def _operand(x: Any) -> ir.Operand:
    if isinstance(x, Tile):
        return x.value
    if isinstance(x, bool):
        raise KernelSyntaxError(
            "a Python bool cannot be mixed with tiles",
            current().here(),
            hint="compare tiles to build masks, e.g. kv_idx < Skv",
        )
    e = _scalar(x, "operand")
    return ir.Imm(e, DType.I32 if is_int_expr(e) else DType.F32)


def _promote(a: ir.Operand, b: ir.Operand) -> tuple[ir.Operand, ir.Operand]:
    """Integer tiles meet floats as floats (FlexAttention users write q_idx * 0.5)."""
    ta, tb = ir.tile_type(a), ir.tile_type(b)
    fa = _float_kind(a, ta)
    fb = _float_kind(b, tb)
    if ta is not None and ta.dtype.is_int and fb is not None:
        a = cast(Tile(a), fb).value  # type: ignore[arg-type]
    if tb is not None and tb.dtype.is_int and fa is not None:
        b = cast(Tile(b), fa).value  # type: ignore[arg-type]
    return a, b


def _float_kind(v: ir.Operand, t: TileType | None) -> DType | None:
    if t is not None:
        return t.dtype if t.dtype.is_float else None
    assert isinstance(v, ir.Imm)
    return DType.F32 if v.dtype is DType.F32 else None


def _binary(cls: type[ir.Binary], a: Any, b: Any) -> Tile:
    lhs, rhs = _promote(_operand(a), _operand(b))
    return _emit(cls, lhs=lhs, rhs=rhs)


def _is_scalar(x: Any) -> bool:
    return not isinstance(x, Tile)


# ----------------------------------------------------------------------------
# Public ops
# ----------------------------------------------------------------------------


def load(block: Block, pad: float | None = None) -> Tile:
    """Copy a block of a tensor parameter into a tile.

    Args:
        block: ``param[...]`` with one point index or slice per dimension.
        pad: value for tail positions past the extent; None leaves them undefined
            (NaN in the interpreter), so any use of them shows.
    Returns:
        A tile of the slice sizes, in the parameter's dtype.

    Example: ``kt = fd.load(k[b, h, fd.ds(j * block_kv, block_kv), :], pad=0)``
    """
    if not isinstance(block, Block):
        raise KernelSyntaxError(
            "fd.load takes an indexed tensor parameter such as q[b, h, rows, :]",
            current().here(),
        )
    pad_e = None if pad is None else _scalar(pad, "pad")
    return _emit(ir.Load, hint=block.ref.param.name + "_t", src=block.ref.param.name,
                 index=block.index, pad=pad_e)


def store(block: Block, value: Tile) -> None:
    """Write a tile to a block of an output; tail positions past the extent are skipped.

    Example: ``fd.store(o[b, h, rows, :], fd.cast(acc / l[:, None], o.dtype))``
    """
    if not isinstance(block, Block):
        raise KernelSyntaxError(
            "fd.store takes an indexed tensor parameter such as o[b, h, rows, :]",
            current().here(),
        )
    if not isinstance(value, Tile):
        raise KernelSyntaxError("fd.store stores a tile", current().here())
    t = current()
    t.builder.emit(ir.Store, t.here(), dst=block.ref.param.name, index=block.index,
                   value=value.value)


def load_scalar(block: Block) -> Expr:
    """Read one element of a tensor as a scalar: an integer (a block-sparse table
    entry, a sequence start) or an f32 value (a per-head ALiBi slope).

    Example: ``q0 = fd.load_scalar(cu_seqlens_q[b])``
    """
    index = []
    for ix in block.index:
        if not isinstance(ix, ir.Point):
            raise KernelSyntaxError("fd.load_scalar takes point indices only",
                                    current().here())
        index.append(ix.at)
    t = current()
    name = t.builder.fresh(block.ref.param.name + "_s")
    t.builder.emit(ir.LoadScalar, t.here(), name=name, src=block.ref.param.name,
                   index=tuple(index))
    from fadsl.ir.expr import fsym, isym

    return fsym(name) if block.ref.dtype is DType.F32 else isym(name)


def random_uniform(shape: Any, *, seed: tuple[Any, Any], offset: Any, stream: Any,
                   row_start: Any, col_start: Any) -> Tile:
    """Uniform f32 numbers in [0, 1), a pure function of key, counter and position.

    Philox4x32-10 (``fadsl.rng``): the value at (``row_start + r``, ``col_start + c``)
    depends on ``seed`` (two 32-bit words), ``offset``, ``stream`` and the two
    positions only, so dropout masks are the same in every tiling and every backend.

    Example: ``u = fd.random_uniform((bq, bk), seed=(s0, s1), offset=off,
    stream=b * N + h, row_start=i * bq, col_start=j * bk)``
    """
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    if not isinstance(seed, (tuple, list)) or len(seed) != 2:
        raise KernelSyntaxError("fd.random_uniform: seed is a pair of 32-bit words",
                                current().here(), hint="seed=(seed_lo, seed_hi)")
    return _emit(ir.RandomUniform, hint="u", shape=tuple(_scalar(d, "shape") for d in dims),
                 seed0=_scalar(seed[0], "seed"), seed1=_scalar(seed[1], "seed"),
                 offset=_scalar(offset, "offset"), stream=_scalar(stream, "stream"),
                 row_start=_scalar(row_start, "row_start"),
                 col_start=_scalar(col_start, "col_start"))


def dot(a: Tile, b: Tile, *, transpose_a: bool = False, transpose_b: bool = False,
        acc_dtype: DType = DType.F32) -> Tile:
    """Matrix product on the cube unit, accumulated in ``acc_dtype`` (f32).

    Example: ``s = fd.dot(qt, kt, transpose_b=True)``  # [block_q, block_kv] f32
    """
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, Tile):
            raise KernelSyntaxError(f"fd.dot: `{name}` must be a tile", current().here())
    return _emit(ir.Dot, hint="dot", a=a.value, b=b.value, transpose_a=bool(transpose_a),
                 transpose_b=bool(transpose_b), acc_dtype=DType.parse(str(acc_dtype.value))
                 if isinstance(acc_dtype, DType) else DType.parse(str(acc_dtype)))


def _eager(*xs: Any) -> bool:
    """True when a mod runs on numpy arrays (the float64 reference), not on tiles.

    Without numpy imported nothing can be a numpy array: building a kernel (compile,
    check) then never imports numpy.
    """
    np = sys.modules.get("numpy")
    if np is None:
        return False
    return not any(isinstance(x, Tile) for x in xs) and any(
        isinstance(x, (np.ndarray, np.generic)) for x in xs)


_NUMPY_UNARY = {"exp": "exp", "exp2": "exp2", "log": "log", "tanh": "tanh",
                "sqrt": "sqrt", "abs": "abs", "floor": "floor"}


def _unary(cls: type[ir.Unary], x: Any, name: str) -> Tile:
    if _eager(x):
        import numpy as np

        return getattr(np, _NUMPY_UNARY[name])(x)
    if not isinstance(x, Tile):
        raise KernelSyntaxError(f"fd.{name} takes a tile", current().here())
    if x.dtype.is_int and cls is not ir.Abs and cls is not ir.Neg:
        x = cast(x, DType.F32)
    return _emit(cls, x=x.value)


def exp(x: Tile) -> Tile:
    """Elementwise e**x."""
    return _unary(ir.Exp, x, "exp")


def exp2(x: Tile) -> Tile:
    """Elementwise 2**x."""
    return _unary(ir.Exp2, x, "exp2")


def log(x: Tile) -> Tile:
    """Elementwise natural logarithm."""
    return _unary(ir.Log, x, "log")


def tanh(x: Tile) -> Tile:
    """Elementwise tanh (softcap: ``cap * fd.tanh(s / cap)``)."""
    return _unary(ir.Tanh, x, "tanh")


def sqrt(x: Tile) -> Tile:
    """Elementwise square root."""
    return _unary(ir.Sqrt, x, "sqrt")


def floor(x: Tile) -> Tile:
    """Elementwise floor (the largest integral value <= x)."""
    return _unary(ir.Floor, x, "floor")


def abs(x: Tile) -> Tile:  # noqa: A001 - mirrors numpy / torch naming
    """Elementwise |x|."""
    return _unary(ir.Abs, x, "abs")


def maximum(a: Any, b: Any) -> Any:
    """Elementwise max of tiles, or max of two scalars (loop bounds)."""
    if _eager(a, b):
        import numpy as np

        return np.maximum(a, b)
    if _is_scalar(a) and _is_scalar(b):
        return sympy.Max(_scalar(a, "maximum"), _scalar(b, "maximum"))
    return _binary(ir.Maximum, a, b)


def minimum(a: Any, b: Any) -> Any:
    """Elementwise min of tiles, or min of two scalars (loop bounds)."""
    if _eager(a, b):
        import numpy as np

        return np.minimum(a, b)
    if _is_scalar(a) and _is_scalar(b):
        return sympy.Min(_scalar(a, "minimum"), _scalar(b, "minimum"))
    return _binary(ir.Minimum, a, b)


def where(cond: Any, a: Any, b: Any) -> Tile:
    """Per element ``a`` where ``cond`` else ``b`` (numpy broadcasting).

    Example: ``s = fd.where(kv_idx[None, :] < Skv, s, -fd.inf)``
    """
    if _eager(cond, a, b):
        import numpy as np

        return np.where(cond, a, b)
    if isinstance(cond, bool):
        raise KernelSyntaxError(
            "fd.where needs a mask tile; this condition is a plain Python bool",
            current().here(),
        )
    ca, cb = _promote(_operand(a), _operand(b))
    return _emit(ir.Where, cond=_operand(cond), a=ca, b=cb)


def cast(x: Tile, dtype: DType) -> Tile:
    """Convert a tile's dtype (float rounding to nearest even)."""
    if not isinstance(x, Tile):
        raise KernelSyntaxError("fd.cast takes a tile", current().here())
    if not isinstance(dtype, DType):
        raise DTypeError(f"fd.cast: {dtype!r} is not a dtype", current().here(),
                         hint="use fd.f16, fd.bf16, fd.f32 or param.dtype")
    return _emit(ir.Cast, hint=x.value.name, x=x.value, dtype=dtype)


def row_max(x: Tile) -> Tile:
    """Maximum of each row of a 2-D tile: [R, C] -> [R]."""
    if not isinstance(x, Tile):
        raise KernelSyntaxError("fd.row_max takes a tile", current().here())
    return _emit(ir.RowMax, x=x.value)


def row_sum(x: Tile) -> Tile:
    """Sum of each row of a 2-D tile: [R, C] -> [R]."""
    if not isinstance(x, Tile):
        raise KernelSyntaxError("fd.row_sum takes a tile", current().here())
    return _emit(ir.RowSum, x=x.value)


def full(shape: Any, value: float, dtype: DType = DType.F32) -> Tile:
    """A tile filled with ``value``: fd.full((block_q,), -fd.inf, fd.f32)."""
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    return _emit(ir.Full, hint="full", shape=tuple(_scalar(d, "shape") for d in dims),
                 value=_scalar(value, "fill value"), dtype=dtype)


def zeros(shape: Any, dtype: DType = DType.F32) -> Tile:
    """A tile of zeros."""
    return full(shape, 0.0, dtype)


def arange(start: Any, size: Any) -> Tile:
    """Position indices ``start + [0, size)`` as i32: fd.arange(i * block_q, block_q)."""
    return _emit(ir.Arange, hint="idx", start=_scalar(start, "arange start"),
                 size=_scalar(size, "arange size"))


def cdiv(a: Any, b: Any) -> Expr:
    """Ceiling division of scalars: number of blocks of size b covering a."""
    return CeilDiv(_scalar(a, "cdiv"), _scalar(b, "cdiv"))


def floordiv(a: Any, b: Any) -> Expr:
    """Floor division of scalars."""
    return FloorDiv(_scalar(a, "floordiv"), _scalar(b, "floordiv"))
