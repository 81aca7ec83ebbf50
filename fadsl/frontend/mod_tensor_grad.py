"""Gradients of the tensors a score_mod reads (issue 29, item 3): a learnable bias.

``fd.tensor("rel_bias", "2 * Sq", requires_grad=True)`` gives the backward kernel an
output ``drel_bias`` shaped like the tensor. For every read of the tensor in the mod's
traced ops (``mod_grad.score_mod_traced``) - a gather ``rel_bias[q_idx - kv_idx + c]``,
a block ``bias[h, q_idx, kv_idx]``, a scalar ``alpha[h]`` - the ops after it are
walked forward mode, seeded with d(read)/d(read) = 1, giving d score_mod / d read;
then

    dtensor[index of the read] += dS0 * d score_mod / d read   (dS0 = P * (dP - Delta))

summed over every score: an ``atomic_add`` of the block (its row sums for
``bias[h, q_idx]``) where the read was a block of rows, as dQ is summed; else a
``ScatterAdd`` (elements of one tile may hit the same entry, as every score of a head
hits ``alpha[h]``). Scalars read from the tensor (``alpha[h]``) carry their
derivative as an expression through the scalar math (``scalar_def`` exp / log / sqrt
/ pow chain). A read whose value passes through an op without a derivative (floor,
``//``, a comparison) is refused at the mod's line.
"""

from __future__ import annotations

import math
from typing import Any

import sympy

from fadsl.errors import KernelSyntaxError, UsageError
from fadsl.frontend import ops
from fadsl.frontend import tile_ops as fd
from fadsl.frontend.mod_grad import _RULES, Deriv, _compares, _tile
from fadsl.frontend.tile_trig import is_reduction_floor
from fadsl.ir import nodes as ir
from fadsl.ir.expr import fsym
from fadsl.ir.types import DType

Seed = ir.Gather | ir.Load | ir.LoadScalar


def grad_tensors(spec: Any) -> tuple[Any, ...]:
    """The extra tensors of ``spec`` whose gradient the backward computes."""
    return tuple(t for t in spec.extras if getattr(t, "requires_grad", False))


def grad_name(name: str) -> str:
    """The backward's output holding the gradient of extra tensor ``name``."""
    return "d" + name


def check_requires_grad(name: str, dtype: DType, loc: Any) -> None:
    """``requires_grad`` needs a float tensor (ids and block indices have none)."""
    if not dtype.is_float:
        raise UsageError(
            f"fd.tensor({name!r}, ..., requires_grad=True) is {dtype.value}: only a "
            "float tensor has a gradient",
            loc,
            hint="drop requires_grad=True (an index tensor is not learnable), or "
            'declare the tensor with a float dtype, e.g. dtype="fp32"',
            code="tensor_grad_not_float",
        )


def check_score_mod_reads(spec: Any, score_tensors: tuple[Any, ...]) -> None:
    """Every tensor with requires_grad is one the score_mod reads (``score_tensors``):
    a mask_mod's reads have no derivative, so its d<name> would never be written."""
    read = {t.name for t in score_tensors}
    for t in grad_tensors(spec):
        if t.name not in read:
            raise UsageError(
                f"fd.tensor({t.name!r}) has requires_grad=True, but no score_mod of "
                f"`{spec.name}` reads it: only a score_mod's reads have a gradient "
                "(a mask_mod's keep / drop has none)",
                t.loc,
                hint="drop requires_grad=True, or read the tensor in the score_mod",
                code="tensor_grad_not_differentiable",
            )


def accumulate(spec: Any, trace: Any, ds: ops.Tile, p: ops.Tile) -> None:
    """Add dS0 * d mod / d read into d<tensor> for every read of a tensor with grads;
    ``trace`` is (the mod's output, its traced ops), ``ds`` is P * (dP - Delta) (the
    gradient of the mod's output), ``p`` is P."""
    out, traced = trace
    names = {t.name for t in grad_tensors(spec)}
    windows = _gather_windows(traced)
    for n, op in enumerate(traced):
        if not _is_seed(op, names, windows):
            continue
        deriv = _forward(spec, op, traced[n + 1 :], out.value.name)
        if deriv is None:
            continue
        g = fd.where(p > 0.0, ds * deriv, 0.0)  # masked and tail scores add nothing
        _scatter(op, g, traced, windows)


def _is_seed(op: ir.Op, names: set[str], windows: dict[str, ir.Load]) -> bool:
    if isinstance(op, ir.Gather):
        return op.src in names
    if isinstance(op, ir.Load):
        return op.src in names and op.result.name not in windows
    return isinstance(op, ir.LoadScalar) and op.src in names


def _gather_windows(traced: tuple[ir.Op, ...]) -> dict[str, ir.Load]:
    """Loads that are a gather's window (directly or through a cast to f32), by the
    name of the value the gather reads, and by their own result's name."""
    defs = {op.result.name: op for op in traced if isinstance(op, ir.ValueOp)}
    out: dict[str, ir.Load] = {}
    for op in traced:
        if not isinstance(op, ir.Gather):
            continue
        src = defs.get(op.table.name)
        if isinstance(src, ir.Cast) and isinstance(src.x, ir.Value):
            src = defs.get(src.x.name)
        if isinstance(src, ir.Load):
            out[op.table.name] = src
            out[src.result.name] = src
    return out


# --- forward mode from one read ----------------------------------------------------


class _Walk:
    """d(value)/d(read) for the values after the read: tiles by value name, scalars
    (sympy) by symbol."""

    def __init__(self, spec: Any, seed: Seed) -> None:
        self.spec, self.seed = spec, seed
        self.tiles: dict[str, Deriv] = {}
        self.syms: dict[sympy.Symbol, Any] = {}
        if isinstance(seed, ir.LoadScalar):
            self.syms[fsym(seed.name)] = sympy.Integer(1)
        else:
            self.tiles[seed.result.name] = 1.0

    def d(self, x: Any) -> Deriv:
        if isinstance(x, ir.Value):
            return self.tiles.get(x.name)
        expr = getattr(x, "expr", None)
        if expr is None or not self.syms:
            return None
        return self.scalar_d(sympy.sympify(expr))

    def scalar_d(self, expr: Any) -> Any:
        """d expr / d read as a scalar expression (None: expr does not depend on it)."""
        total = None
        for sym, ds in self.syms.items():
            if not expr.has(sym):
                continue
            part = sympy.diff(expr, sym)
            if part.has(sympy.Derivative) or part.has(sympy.Subs):
                self.refuse(None, f"`{expr}`")
            term = part * ds
            total = term if total is None else total + term
        if total is None:
            return None
        from fadsl.frontend.scalar_math import materialize

        return materialize(sympy.simplify(total))

    def scalar_def(self, op: ir.ScalarDef) -> None:
        darg = [self.scalar_d(sympy.sympify(a)) for a in op.args]
        if all(x is None for x in darg):
            return
        from fadsl.frontend.scalar_math import define
        from fadsl.ir.expr import as_expr

        y, a = fsym(op.name), sympy.sympify(op.args[0])
        rules = {
            "exp": lambda: y * darg[0],
            "exp2": lambda: y * math.log(2.0) * darg[0],
            "log": lambda: darg[0] / a,
            "log2": lambda: darg[0] / (a * math.log(2.0)),
            "sqrt": lambda: darg[0] / (2 * y),
            "tanh": lambda: (1 - y * y) * darg[0],
            "sigmoid": lambda: y * (1 - y) * darg[0],
            "sin": lambda: as_expr(define("cos", (a,))) * darg[0],
            "cos": lambda: -as_expr(define("sin", (a,))) * darg[0],
        }
        if op.fn == "pow" and darg[1] is None:
            e = sympy.sympify(op.args[1])
            d = e * a ** (e - 1) * darg[0]
        elif op.fn in rules and len(op.args) == 1:
            d = rules[op.fn]()
        else:
            self.refuse(op, f"`{op.fn}`")
        from fadsl.frontend.scalar_math import materialize

        self.syms[y] = materialize(d)

    def step(self, op: ir.Op) -> None:
        if isinstance(op, ir.ScalarDef):
            self.scalar_def(op)
            return
        if not isinstance(op, ir.ValueOp) or is_reduction_floor(op):
            return  # (fd.sin / fd.cos's integral steps: derivative 0)
        ds = [self.d(x) for x in _operands(op)]
        if all(x is None for x in ds):
            return
        if isinstance(op, (ir.And, ir.Or, ir.Not)) or _compares(op):
            return  # a mask: only fd.where may read it (the branch taken)
        rule = _RULES.get(type(op))
        if rule is None or (isinstance(op, ir.Cast) and not op.dtype.is_float):
            self.refuse(op, f"`{ir.op_name(type(op))}`")
        d = rule(op, self.d, _tile)
        if d is not None:
            self.tiles[op.result.name] = d

    def refuse(self, op: ir.Op | None, what: str) -> None:
        src = self.seed.src
        raise KernelSyntaxError(
            f"score_mod `{self.spec.score_mod.__name__}` is not differentiable in "
            f"`{src}` (requires_grad=True): its {what} takes a value read from `{src}`",
            (op or self.seed).loc,
            hint=f"keep `{src}`'s values out of floor, //, %, integer casts and "
            "comparisons used as numbers, or declare it without requires_grad=True",
            code="tensor_grad_not_differentiable",
        )


def _operands(op: ir.Op) -> list[Any]:
    return [getattr(op, f) for f in op.OPERANDS if getattr(op, f) is not None]


def _forward(spec: Any, seed: Seed, after: tuple[ir.Op, ...], out: str) -> Deriv:
    """d (the mod's output ``out``) / d (the value ``seed`` reads)."""
    walk = _Walk(spec, seed)
    for op in after:
        walk.step(op)
    return walk.tiles.get(out)


# --- the scatter ---------------------------------------------------------------


def _scatter(
    seed: Seed, g: ops.Tile, traced: tuple[ir.Op, ...], windows: dict[str, ir.Load]
) -> None:
    base = width = None
    if isinstance(seed, ir.LoadScalar):
        index, axes, at = tuple(seed.index), (), ()
    elif isinstance(seed, ir.Gather):
        window = windows[seed.table.name]
        axis = next(a for a, ix in enumerate(window.index) if isinstance(ix, ir.Slice))
        index = _points(window.index)
        axes, at = (axis,), (seed.index,)
        base, width = seed.base, window.index[axis].size
        g = _per_row(g, seed.index)
    else:
        dims, tile_axes = _block_axes(seed, traced)
        if _as_block(seed, g, tile_axes):
            return
        index, axes = _points(seed.index), dims
        at = _block_positions(seed, dims, tile_axes)
        if tile_axes == (1,):  # a block of columns: its column sums, from its start
            base, width = seed.index[dims[0]].start, seed.index[dims[0]].size
    op = ir.ScatterAdd(
        loc=seed.loc,
        dst=grad_name(seed.src),
        value=g.value,
        at=at,
        index=index,
        axes=axes,
        base=base,
        width=width,
    )
    builder = ops.current().builder
    op.check(builder.ctx)
    builder.append(op)


def _per_row(g: ops.Tile, index: ir.Value) -> ops.Tile:
    """A gather by a [rows, 1] index (``doc_bias[document_id[q_idx]]``) adds each
    row's sum at the row's index: the same sums, one element per row to scatter (the
    Ascend C lowering compares each window entry with the index tile, element by
    element, so the value and the index tile have one shape)."""
    t = index.type
    if isinstance(t, ir.TileType) and len(t.shape) == 2 and t.shape[1] == 1:
        if len(g.shape) == 2 and g.shape[1] != 1:
            return fd.row_sum(g)[:, None]
    return g


def _as_block(load: ir.Load, g: ops.Tile, tile_axes: tuple[int, ...]) -> bool:
    """A block read ``bias[h, q_idx, kv_idx]`` (or ``bias[q_idx]``) adds its tile (its
    row sums) into the same block of the gradient with an ordinary ``atomic_add``,
    as dQ is summed: no scatter. False for a block of columns (``bias[kv_idx]``)."""
    if tile_axes == (0, 1):
        value = g
    elif tile_axes == (0,):
        value = fd.row_sum(g)
    else:
        return False
    ctx = ops.current().builder.ctx
    param = next(p for p in ctx.params if p.name == grad_name(load.src))
    key = tuple(
        ops.ds(ix.start, ix.size, ix.stop) if isinstance(ix, ir.Slice) else ix.at
        for ix in load.index
    )
    fd.atomic_add(ops.TensorRef(param)[key], value)
    return True


def _points(index: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(
        ix.at if isinstance(ix, ir.Point) else sympy.Integer(0) for ix in index
    )


def _block_axes(
    load: ir.Load, traced: tuple[ir.Op, ...]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The dims a block read covers, and the tile axis of each (0: rows, q_idx; 1:
    columns, kv_idx), as the mod's q_idx / kv_idx oriented the block."""
    dims = tuple(a for a, ix in enumerate(load.index) if isinstance(ix, ir.Slice))
    if len(dims) != 1:
        return dims, tuple(range(len(dims)))  # two dims: [q_idx, kv_idx]
    turned = [
        op
        for op in traced
        if isinstance(op, ir.ExpandDims) and op.x.name == load.result.name
    ]
    return dims, (0 if not turned or turned[0].axis == 1 else 1,)


def _block_positions(
    load: ir.Load, dims: tuple[int, ...], tile_axes: tuple[int, ...]
) -> tuple[ir.Value, ...]:
    """The positions of a block's dims as [rows, 1] / [1, cols] index tiles."""
    at = []
    for dim, axis in zip(dims, tile_axes):
        ix = load.index[dim]
        pos = fd.arange(ix.start, ix.size)
        at.append((pos[:, None] if axis == 0 else pos[None, :]).value)
    return tuple(at)


__all__ = [
    "accumulate",
    "check_score_mod_reads",
    "check_requires_grad",
    "grad_name",
    "grad_tensors",
]
