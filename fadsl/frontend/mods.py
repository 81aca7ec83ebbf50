"""What score_mod / mask_mod see: position tiles, extra input tensors, eager numpy runs.

A mod is a plain Python function with FlexAttention's signature. ``fd.attention`` calls
it twice over: traced inside the kernel (``b``, ``h`` are scalars, ``q_idx`` a [block_q, 1]
and ``kv_idx`` a [1, block_kv] tile of positions, so Python operators emit IR), and on
numpy arrays for the float64 reference and the block mask (``b``, ``h``, ``q_idx``,
``kv_idx`` broadcast index arrays; fd.where / fd.exp / ... dispatch to numpy).

Extra inputs are declared once, as module-level (or closure) objects the mod indexes:

    slopes = fd.tensor("slopes", "N", dtype="fp32")
    def alibi(score, b, h, q_idx, kv_idx):
        return score + slopes[h] * (kv_idx - q_idx)

``fd.attention`` finds them in the mods' globals and closures and adds them as kernel
inputs. Index them with ``b``, ``h`` (a scalar load: f32 or integer tensors) and
``q_idx`` / ``kv_idx`` (a block load of the positions the tile covers, e.g.
``doc[q_idx] == doc[kv_idx]``); a computed index such as ``rel[q_idx - kv_idx + 7]``
is a gather (``mod_gather.py``).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import sympy

from fadsl.errors import KernelSyntaxError, Loc, UsageError
from fadsl.frontend import ops, tile_ops
from fadsl.frontend.source import user_frame_loc
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr
from fadsl.ir.types import DType

Init = Callable[[tuple[int, ...], Any], Any]

_EAGER: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar(
    "fadsl_mod_tensors", default=None
)
_EAGER_SHAPE: contextvars.ContextVar[Mapping[str, int] | None] = contextvars.ContextVar(
    "fadsl_mod_shape", default=None
)


class ModScalar:
    """``b`` and ``h`` as a traced mod sees them: runtime integers.

    A plain sympy symbol would answer ``b == 1`` with Python's structural ``False``;
    this proxy turns comparisons into conditions (``b == 1`` is ``Eq(b, 1)``) and
    arithmetic into expressions, and converts to sympy wherever an expression is taken.
    """

    __slots__ = ("expr",)

    def __init__(self, expr: Expr) -> None:
        self.expr = expr

    def _sympy_(self) -> Expr:
        return self.expr

    def __repr__(self) -> str:
        return f"ModScalar({self.expr})"

    def __hash__(self) -> int:
        return hash(self.expr)

    def __bool__(self) -> bool:
        raise KernelSyntaxError(
            f"`{self.expr}` is only known when the kernel runs; Python `if`/`and`/`or` "
            "cannot test it",
            user_frame_loc(),
            hint="return the condition itself (e.g. `return h < 4`), or combine with & |",
        )

    def _wrap(self, value: Any) -> Any:
        if not isinstance(value, sympy.Expr):
            return value
        from fadsl.frontend.scalar_math import materialize

        return ModScalar(materialize(value))

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        if isinstance(other, ops.Tile):
            return other == self.expr
        return sympy.Eq(self.expr, _unwrap(other))

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        if isinstance(other, ops.Tile):
            return other != self.expr
        return sympy.Ne(self.expr, _unwrap(other))


def _unwrap(x: Any) -> Any:
    return x.expr if isinstance(x, ModScalar) else x


def _forward(fn: Callable[[Expr, Any], Any]) -> Callable[[ModScalar, Any], Any]:
    """A ModScalar operator: tiles handle mixed operations themselves."""

    def method(self: ModScalar, other: Any) -> Any:
        if isinstance(other, ops.Tile):
            return NotImplemented
        return self._wrap(fn(self.expr, _unwrap(other)))

    return method


def _floordiv(a: Any, b: Any) -> Expr:
    from fadsl.ir.expr import FloorDiv, as_expr

    return FloorDiv(as_expr(a), as_expr(b))


_OPERATORS: dict[str, Callable[[Expr, Any], Any]] = {
    "__add__": lambda a, b: a + b,
    "__radd__": lambda a, b: b + a,
    "__sub__": lambda a, b: a - b,
    "__rsub__": lambda a, b: b - a,
    "__mul__": lambda a, b: a * b,
    "__rmul__": lambda a, b: b * a,
    "__truediv__": lambda a, b: a / b,
    "__rtruediv__": lambda a, b: b / a,
    "__floordiv__": _floordiv,
    "__rfloordiv__": lambda a, b: _floordiv(b, a),
    "__mod__": lambda a, b: sympy.Mod(a, b),
    "__rmod__": lambda a, b: sympy.Mod(b, a),
    "__lt__": lambda a, b: a < b,
    "__le__": lambda a, b: a <= b,
    "__gt__": lambda a, b: a > b,
    "__ge__": lambda a, b: a >= b,
}
for _name, _fn in _OPERATORS.items():
    setattr(ModScalar, _name, _forward(_fn))
ModScalar.__neg__ = lambda self: ModScalar(-self.expr)  # type: ignore[attr-defined]


def _pow(a: Any, b: Any) -> Any:
    if isinstance(a, ops.Tile) or isinstance(b, ops.Tile):
        return NotImplemented
    from fadsl.frontend.scalar_math import power

    return power(_unwrap(a), _unwrap(b))


ModScalar.__pow__ = lambda self, o: _pow(self, o)  # type: ignore[attr-defined]
ModScalar.__rpow__ = lambda self, o: _pow(o, self)  # type: ignore[attr-defined]
ModScalar.__abs__ = lambda self: _scalar_abs(self)  # type: ignore[attr-defined]


def _scalar_abs(x: ModScalar) -> Any:
    from fadsl.frontend.scalar_math import unary

    return unary("abs", x.expr)


class Positions(ops.Tile):
    """Positions of a tile's rows (``q_idx``, [size, 1]) or columns (``kv_idx``, [1, size]).

    Arithmetic gives ordinary tiles; indexing an extra tensor with it loads the block of
    the tensor those positions cover.
    """

    __slots__ = ("start", "size", "stop", "axis")

    def __init__(
        self, value: ir.Value, start: Expr, size: Expr, stop: Expr | None, axis: int
    ) -> None:
        super().__init__(value)
        self.start = start
        self.size = size
        self.stop = stop
        self.axis = axis


def positions(start: Any, size: Any, axis: int, stop: Any = None) -> Positions:
    """Position tile ``start + arange(size)`` as [size, 1] (axis 0) or [1, size] (axis 1)."""
    from fadsl.frontend.mod_gather import record_positions

    flat = tile_ops.arange(start, size)
    stop_e = None if stop is None else ops.as_expr(stop)
    record_positions(flat.value, ops.as_expr(start), ops.as_expr(size), stop_e, axis)
    tile = flat[:, None] if axis == 0 else flat[None, :]
    return Positions(tile.value, ops.as_expr(start), ops.as_expr(size), stop_e, axis)


class ExtraTensor:
    """An input tensor that score_mod / mask_mod read (made by ``fd.tensor``)."""

    def __init__(
        self,
        name: str,
        *dims: str | int,
        dtype: str | DType = "fp32",
        init: Init | None = None,
        requires_grad: bool = False,
    ) -> None:
        self.name = name
        self.annotation = ops_in()(*dims, dtype=dtype)
        self.init = init
        self.loc = user_frame_loc()
        self.requires_grad = requires_grad is True
        if self.requires_grad:  # the backward's output d<name> (mod_tensor_grad.py)
            from fadsl.frontend.mod_tensor_grad import check_requires_grad

            check_requires_grad(name, self.dtype, self.loc)

    @property
    def dtype(self) -> DType:
        dt = self.annotation.dtype
        assert isinstance(dt, DType)
        return dt

    def __repr__(self) -> str:
        return f"fd.tensor({self.name!r}, {self.annotation.dims}, {self.dtype.value})"

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        items = tuple(x.expr if isinstance(x, ModScalar) else x for x in items)
        bound = _EAGER.get()
        if bound is not None:
            return self._eager(bound[self.name], items)
        return _traced_index(self, items)

    def _sympy_(self) -> Any:
        """A 0-d tensor used as a value (``score * s``, as FlexAttention users write
        a captured 0-d tensor) reads its one element; others need an index."""
        if self.annotation.dims:
            raise KernelSyntaxError(
                f"`{self.name}` has {len(self.annotation.dims)} dimension(s); index it "
                "to read a value",
                ops.current().here(),
                hint=f"e.g. {self.name}[h], {self.name}[q_idx]; only a 0-d tensor is "
                "used as a value",
                code="extra_tensor_not_indexed",
            )
        return _unwrap(self[()])  # sympy wants the expression, not its proxy

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        """The bound array, in an eager (numpy) run of a mod."""
        import numpy as np

        bound = _EAGER.get()
        if bound is None or self.annotation.dims:
            raise TypeError(f"{self!r} is not an array outside an eager mod run")
        return np.asarray(bound[self.name], dtype=dtype)

    def _eager(self, arr: Any, items: tuple[Any, ...]) -> Any:
        try:
            key = tuple(_numpy_index(x) for x in items)
            _no_negative(key)
            return arr[key]
        except IndexError as exc:
            raise UsageError(
                f"a mod reads `{self.name}` (shape {list(arr.shape)}) outside its "
                f"shape: {exc}",
                self.loc,
                hint="size the tensor for every position the mod is called with "
                "(q_idx < Sq, kv_idx < Skv)",
            ) from None


def tensor(
    name: str,
    *dims: str | int,
    dtype: str | DType = "fp32",
    init: Init | None = None,
    requires_grad: bool = False,
) -> ExtraTensor:
    """Declare an extra input a score_mod or mask_mod reads.

    Args:
        name: the kernel parameter's name (``<name>.bin`` for fadsl run / sim).
        dims: shape symbols (``"N"``, ``"Sq"``, ``"B N Sq Skv"``) or integers.
        dtype: "fp32" (float data, per-head slopes, a bias), "i32" (ids), "fp16", ...
        init: optional ``init(shape, rng) -> array`` for seeded example data
            (``fadsl run`` without --inputs); N(0, 1) floats or zeros otherwise.
        requires_grad: ``fd.attention_backward`` also returns the gradient of the
            loss in this tensor, as the output ``d<name>`` (a learnable bias; on
            Ascend C for every read: docs/backward.md).

    Example::

        slopes = fd.tensor("slopes", "N", dtype="fp32")
        def alibi(score, b, h, q_idx, kv_idx):
            return score + slopes[h] * (kv_idx - q_idx)
    """
    return ExtraTensor(name, *dims, dtype=dtype, init=init, requires_grad=requires_grad)


def ops_in() -> Any:
    from fadsl.frontend.kernel import In

    return In


@contextlib.contextmanager
def eager_tensors(
    arrays: Mapping[str, Any], shape: Mapping[str, int] | None = None
) -> Iterator[None]:
    """Within the block, extra tensors index the given numpy arrays (references) and
    ``fd.shape.<name>`` reads ``shape``."""
    token = _EAGER.set(arrays)
    token_shape = _EAGER_SHAPE.set(shape)
    try:
        yield
    finally:
        _EAGER_SHAPE.reset(token_shape)
        _EAGER.reset(token)


def _no_negative(key: tuple[Any, ...]) -> None:
    """numpy wraps a negative index around; a kernel's gather refuses it."""
    import numpy as np

    for x in key:
        a = np.asarray(x)
        if a.dtype.kind in "iu" and a.size and int(a.min()) < 0:
            raise IndexError(f"index {int(a.min())} is negative")


def _numpy_index(x: Any) -> Any:
    if isinstance(x, ops.Tile):
        raise KernelSyntaxError("a tile index inside an eager (numpy) evaluation", None)
    return x


# ----------------------------------------------------------------------------
# Traced indexing
# ----------------------------------------------------------------------------


def _traced_index(t: ExtraTensor, items: tuple[Any, ...]) -> Any:
    tracer = ops.current()
    param = _param_of(t, tracer)
    ref = ops.TensorRef(param)
    if len(items) != len(ref.shape):
        raise KernelSyntaxError(
            f"`{t.name}` has {len(ref.shape)} dimension(s) but is indexed with "
            f"{len(items)}",
            tracer.here(),
            hint=f"declared as {t!r}",
        )
    if any(isinstance(x, ops.Tile) and not isinstance(x, Positions) for x in items):
        from fadsl.frontend.mod_gather import gather

        return gather(t, ref, items)
    index = tuple(_item(t, x, tracer) for x in items)
    if all(not isinstance(x, ops.Ds) for x in index):
        return ModScalar(tile_ops.load_scalar(ref[index]))
    return _oriented(t, tile_ops.load(ref[index], pad=0), items, tracer)


def _param_of(t: ExtraTensor, tracer: ops.Tracer) -> ir.Param:
    ctx = tracer.builder.ctx
    found = [p for p in getattr(ctx, "params", ()) if p.name == t.name]
    if not found:
        raise KernelSyntaxError(
            f"this mod reads the tensor `{t.name}`, which is not an input of the kernel",
            tracer.here(),
            hint="declare it with fd.tensor(...) at module level (or in "
            "the mod's closure) so that fd.attention finds it",
        )
    return found[0]


def _item(t: ExtraTensor, x: Any, tracer: ops.Tracer) -> Any:
    if isinstance(x, Positions):
        return ops.ds(x.start, x.size, x.stop)
    if isinstance(x, (int, sympy.Basic)) and not isinstance(x, bool):
        return x
    raise KernelSyntaxError(
        f"`{t.name}` is indexed with {type(x).__name__}",
        tracer.here(),
        hint="index with b, h, q_idx, kv_idx",
    )


def _oriented(
    t: ExtraTensor, tile: ops.Tile, items: tuple[Any, ...], tracer: ops.Tracer
) -> ops.Tile:
    axes = [x.axis for x in items if isinstance(x, Positions)]
    if len(axes) == 1:
        return tile[:, None] if axes[0] == 0 else tile[None, :]
    if axes != sorted(axes) or len(set(axes)) != len(axes):
        raise KernelSyntaxError(
            f"`{t.name}` is indexed with kv_idx before q_idx (or one of them twice); the "
            "loaded block would need a transpose",
            tracer.here(),
            hint="lay the tensor out as [..., Sq, Skv] and index it [..., q_idx, kv_idx]",
        )
    return tile


def mod_loc(fn: Callable[..., Any]) -> Loc:
    code = fn.__code__
    return Loc(code.co_filename, code.co_firstlineno, 0, None)
