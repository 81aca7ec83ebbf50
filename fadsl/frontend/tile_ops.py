"""The public tile-op functions of ``fd`` (load, store, dot, exp, where, ...).

Each validates its Python-level arguments and emits one IR op through the builder of
the kernel being read (``fadsl.frontend.ops`` holds the proxies and the tracer).
"""

from __future__ import annotations

from typing import Any

from fadsl.errors import DTypeError, KernelSyntaxError
from fadsl.frontend.ops import (
    Block,
    Tile,
    emit_op,
    scalar_operand,
    current,
)
from fadsl.ir import nodes as ir
from fadsl.ir.expr import CeilDiv, Expr, FloorDiv
from fadsl.ir.types import DType
from fadsl.frontend.tile_math import (  # noqa: F401 - fd.exp etc. live in tile_math
    _eager,
    abs,
    exp,
    exp2,
    floor,
    log,
    maximum,
    minimum,
    sigmoid,
    sqrt,
    tanh,
    where,
)

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
    pad_e = None if pad is None else scalar_operand(pad, "pad")
    name = block.ref.param.name
    fields = dict(hint=name + "_t", src=name, index=block.index, pad=pad_e)
    if block.pages is not None:  # fd.pages(...): a block of several pages
        pages = block.pages
        return emit_op(ir.LoadPages, **fields, table=pages.table, row=pages.row)
    return emit_op(ir.Load, **fields, view=block.view)


def store(block: Block, value: Tile) -> None:
    """Write a tile to a block of an output; tail positions past the extent are skipped.

    Example: ``fd.store(o[b, h, rows, :], fd.cast(acc / l[:, None], o.dtype))``
    """
    if not isinstance(block, Block):
        raise KernelSyntaxError(
            "fd.store takes an indexed tensor parameter such as o[b, h, rows, :]",
            current().here(),
        )
    _no_pages(block)
    if not isinstance(value, Tile):
        raise KernelSyntaxError("fd.store stores a tile", current().here())
    t = current()
    t.builder.emit(
        ir.Store,
        t.here(),
        dst=block.ref.param.name,
        index=block.index,
        value=value.value,
        view=block.view,
    )


def atomic_add(block: Block, value: Tile) -> None:
    """Add an f32 tile into a block of an output, summed over every grid point.

    The output starts at 0, accumulates in f32 and is rounded to its dtype once after
    the grid; tail positions are skipped. Points may add to the same positions (a
    backward pass sums dQ over KV blocks this way). An output written with atomic_add
    is written with nothing else.

    Example: ``fd.atomic_add(dq[b, h, rows, :], fd.dot(ds, kt) * scale)``
    """
    if not isinstance(block, Block):
        raise KernelSyntaxError(
            "fd.atomic_add takes an indexed output such as dq[b, h, rows, :]",
            current().here(),
        )
    _no_pages(block)
    if not isinstance(value, Tile):
        raise KernelSyntaxError("fd.atomic_add adds a tile", current().here())
    t = current()
    t.builder.emit(
        ir.AtomicAdd,
        t.here(),
        dst=block.ref.param.name,
        index=block.index,
        value=value.value,
        view=block.view,
    )


def _no_pages(block: Block) -> None:
    if getattr(block, "pages", None) is not None:
        raise KernelSyntaxError(
            "fd.pages(...) names pages to load; stores write ordinary blocks",
            current().here(),
        )


def load_scalar(block: Block) -> Expr:
    """Read one element of a tensor as a scalar: an integer (a block-sparse table
    entry, a sequence start) or an f32 value (a per-head ALiBi slope).

    Example: ``q0 = fd.load_scalar(cu_seqlens_q[b])``
    """
    _no_pages(block)
    index = []
    for ix in block.index:
        if not isinstance(ix, ir.Point) or block.view is not None:
            raise KernelSyntaxError(
                "fd.load_scalar takes point indices only", current().here()
            )
        index.append(ix.at)
    t = current()
    name = t.builder.fresh(block.ref.param.name + "_s")
    t.builder.emit(
        ir.LoadScalar, t.here(), name=name, src=block.ref.param.name, index=tuple(index)
    )
    from fadsl.ir.expr import fsym, isym

    return fsym(name) if block.ref.dtype is DType.F32 else isym(name)


def random_uniform(
    shape: Any,
    *,
    seed: tuple[Any, Any],
    offset: Any,
    stream: Any,
    row_start: Any,
    col_start: Any,
) -> Tile:
    """Uniform f32 numbers in [0, 1), a pure function of key, counter and position.

    Philox4x32-10 (``fadsl.rng``): the value at (``row_start + r``, ``col_start + c``)
    depends on ``seed`` (two 32-bit words), ``offset``, ``stream`` and the two
    positions only, so dropout masks are the same in every tiling and every backend.

    Example: ``u = fd.random_uniform((bq, bk), seed=(s0, s1), offset=off,
    stream=b * N + h, row_start=i * bq, col_start=j * bk)``
    """
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    if not isinstance(seed, (tuple, list)) or len(seed) != 2:
        raise KernelSyntaxError(
            "fd.random_uniform: seed is a pair of 32-bit words",
            current().here(),
            hint="seed=(seed_lo, seed_hi)",
        )
    return emit_op(
        ir.RandomUniform,
        hint="u",
        shape=tuple(scalar_operand(d, "shape") for d in dims),
        seed0=scalar_operand(seed[0], "seed"),
        seed1=scalar_operand(seed[1], "seed"),
        offset=scalar_operand(offset, "offset"),
        stream=scalar_operand(stream, "stream"),
        row_start=scalar_operand(row_start, "row_start"),
        col_start=scalar_operand(col_start, "col_start"),
    )


def dot(
    a: Tile,
    b: Tile,
    *,
    transpose_a: bool = False,
    transpose_b: bool = False,
    acc_dtype: DType = DType.F32,
) -> Tile:
    """Matrix product on the cube unit, accumulated in ``acc_dtype`` (f32).

    ``a`` is [M, K] (``transpose_a``: [K, M]) and ``b`` is [K, N] (``transpose_b``:
    [N, K]); the result is [M, N] in f32. Operands are 2-D tiles of one dtype (fp16,
    bf16; f32 and fp8 where the chip's cube takes them), loaded from global memory or
    cast from a vector result (``fd.cast(p, v.dtype)``). Compiled, block sizes in M,
    N and K are multiples of 16 (the cube works on 16 x 16 fractals; a head dim that
    is not one is padded with zeros).

    Example: ``s = fd.dot(qt, kt, transpose_b=True)``  # [block_q, block_kv] f32
    """
    for name, x in (("a", a), ("b", b)):
        if not isinstance(x, Tile):
            raise KernelSyntaxError(
                f"fd.dot: `{name}` must be a tile", current().here()
            )
    return emit_op(
        ir.Dot,
        hint="dot",
        a=a.value,
        b=b.value,
        transpose_a=bool(transpose_a),
        transpose_b=bool(transpose_b),
        acc_dtype=(
            DType.parse(str(acc_dtype.value))
            if isinstance(acc_dtype, DType)
            else DType.parse(str(acc_dtype))
        ),
    )


def cast(x: Tile, dtype: DType) -> Tile:
    """Convert a tile's dtype (float rounding to nearest even), or a mod's scalar to
    fd.f32 / fd.i32 (to an integer: truncated toward zero)."""
    if not isinstance(dtype, DType):
        raise DTypeError(
            f"fd.cast: {dtype!r} is not a dtype",
            current().here(),
            hint="use fd.f16, fd.bf16, fd.f32 or param.dtype",
        )
    if not isinstance(x, Tile):
        from fadsl.frontend import scalar_math

        if _eager(x):
            return scalar_math.eager_cast(x, dtype)  # type: ignore[no-any-return]
        if scalar_math.is_mod_scalar(x):
            return scalar_math.cast(x, dtype)  # type: ignore[no-any-return]
        raise KernelSyntaxError("fd.cast takes a tile or a scalar", current().here())
    return emit_op(ir.Cast, hint=x.value.name, x=x.value, dtype=dtype)


def row_max(x: Tile) -> Tile:
    """Maximum of each row of a 2-D tile: [R, C] -> [R]."""
    if not isinstance(x, Tile):
        raise KernelSyntaxError("fd.row_max takes a tile", current().here())
    return emit_op(ir.RowMax, x=x.value)


def row_sum(x: Tile) -> Tile:
    """Sum of each row of a 2-D tile: [R, C] -> [R]."""
    if not isinstance(x, Tile):
        raise KernelSyntaxError("fd.row_sum takes a tile", current().here())
    return emit_op(ir.RowSum, x=x.value)


def full(shape: Any, value: float, dtype: DType = DType.F32) -> Tile:
    """A tile filled with ``value``: fd.full((block_q,), -fd.inf, fd.f32)."""
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    return emit_op(
        ir.Full,
        hint="full",
        shape=tuple(scalar_operand(d, "shape") for d in dims),
        value=scalar_operand(value, "fill value"),
        dtype=dtype,
    )


def zeros(shape: Any, dtype: DType = DType.F32) -> Tile:
    """A tile of zeros."""
    return full(shape, 0.0, dtype)


def arange(start: Any, size: Any) -> Tile:
    """Position indices ``start + [0, size)`` as i32: fd.arange(i * block_q, block_q)."""
    return emit_op(
        ir.Arange,
        hint="idx",
        start=scalar_operand(start, "arange start"),
        size=scalar_operand(size, "arange size"),
    )


def cdiv(a: Any, b: Any) -> Expr:
    """Ceiling division of scalars: number of blocks of size b covering a."""
    return CeilDiv(scalar_operand(a, "cdiv"), scalar_operand(b, "cdiv"))


def floordiv(a: Any, b: Any) -> Expr:
    """Floor division of scalars."""
    return FloorDiv(scalar_operand(a, "floordiv"), scalar_operand(b, "floordiv"))
