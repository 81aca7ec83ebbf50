"""Checks of a kernel's inputs before any work: the ones that would otherwise give
wrong numbers with exit 0.

- A run folder's meta.json records each file's dtype and shape: ``--inputs`` refuses
  files recorded with another dtype or shape than the kernel takes (a bf16 run read
  as fp16 is garbage of the right size). Files without a record are read raw, checked
  by size only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from fadsl.errors import Loc, UsageError
from fadsl.ir.expr import as_expr, evaluate, free_names
from fadsl.ir.nodes import For, Load, LoadScalar, Param, Point, Store
from fadsl.ir.visitor import IRVisitor

_CLI_NAMES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}


def check_recorded(
    folder: str,
    meta: dict[str, Any] | None,
    p: Param,
    dtype: np.dtype,
    shape: tuple[int, ...],
) -> None:
    """Refuse ``p``'s file when the folder's meta.json records another dtype or shape."""
    entry = (meta or {}).get("params", {}).get(p.name)
    if entry is None:
        return
    path = os.path.join(folder, "meta.json")
    recorded = entry["dtype"]
    if recorded != dtype.name:
        cli = _CLI_NAMES.get(recorded)
        raise UsageError(
            f"input `{p.name}`: {path} records {p.name}.bin as {recorded}, but this "
            f"kernel reads `{p.name}` as {dtype.name}",
            p.loc,
            notes=(
                f"read as {dtype.name}, the {recorded} bits would give other numbers",
            ),
            hint=(
                f"run the kernel in the data's dtype with --dtype {cli}, or "
                if cli is not None
                else ""
            )
            + f"give inputs written as {dtype.name}",
            code="inputs_dtype_mismatch",
        )
    got = entry.get("shape")
    if got is not None and tuple(got) != shape:
        raise UsageError(
            f"input `{p.name}`: {path} records {p.name}.bin with the shape {list(got)}, "
            f"but at this --shape `{p.name}` is {list(shape)}",
            p.loc,
            notes=(_recorded_shape(meta),) if _recorded_shape(meta) else (),
            hint="give the --shape of the run that wrote the folder",
        )


def _recorded_shape(meta: dict[str, Any] | None) -> str:
    shape = (meta or {}).get("shape")
    if not isinstance(shape, dict) or not shape:
        return ""
    return "the folder was written with --shape " + ",".join(
        f"{k}={v}" for k, v in shape.items()
    )


# ----------------------------------------------------------------------------
# Index inputs
# ----------------------------------------------------------------------------


def check_index_inputs(
    binding: Any, inputs: dict[str, np.ndarray], own_rules: bool = True
) -> None:
    """Refuse integer inputs that the kernel uses as indices when a value is out of
    range: every integer tensor whose elements index another tensor directly
    (``tab[ids[h]]`` in a mod, ``fd.load_scalar`` results used as points), then the
    kernel definition's own rules (``fd.attention``: cu_seqlens, block masks), which
    ``own_rules=False`` leaves out for inputs the definition made itself."""
    env = binding.env()
    params = {p.name: p for p in binding.kernel.params}
    for use in index_uses(binding.kernel):
        _check_use(use, params, env, inputs)
    own = getattr(binding.kdef, "check_inputs", None) if binding.kdef else None
    if own is not None and own_rules:
        own(binding.shape, binding.ref_consts(), inputs)


@dataclass(frozen=True)
class IndexUse:
    """Elements of integer input ``src`` (loaded as symbol ``sym``) index dimension
    ``dim`` of ``target`` through the point expression ``at``, at ``loc``."""

    src: str
    sym: str
    target: str
    dim: int
    at: Any
    loc: Loc


def index_uses(kernel: Any) -> list[IndexUse]:
    """Every point index of a load or store that depends on one loaded integer read
    at indices fixed by the grid. An integer read at an index a ``for`` loop chooses
    (``block_table[b, j]``) is left out: the loop may read only some elements (the
    pages of a sequence), and checking all would refuse columns never read; the kernel
    definition's own rules check those, and the interpreter faults on a bad read."""
    scalars: dict[str, str] = {}
    points: list[tuple[str, int, Any, Loc]] = []
    loops: set[str] = set()

    class Walk(IRVisitor):
        def visit_For(self, op: For) -> None:
            loops.add(op.var)
            self.generic_visit(op)

        def visit_LoadScalar(self, op: LoadScalar) -> None:
            if not any(free_names(as_expr(e)) & loops for e in op.index):
                scalars[op.name] = op.src
            points.extend((op.src, d, e, op.loc) for d, e in enumerate(op.index))

        def visit_Load(self, op: Load) -> None:
            points.extend(_points(op.src, op.index, op.loc))

        def visit_Store(self, op: Store) -> None:
            points.extend(_points(op.dst, op.index, op.loc))

    Walk().visit_kernel(kernel)
    out = []
    for target, dim, at, loc in points:
        loaded = [n for n in free_names(as_expr(at)) if n in scalars]
        if len(loaded) == 1:
            out.append(IndexUse(scalars[loaded[0]], loaded[0], target, dim, at, loc))
    return out


def _points(name: str, index: tuple[Any, ...], loc: Loc) -> list[tuple]:
    return [
        (name, d, ix.at, loc) for d, ix in enumerate(index) if isinstance(ix, Point)
    ]


def _check_use(
    use: IndexUse,
    params: dict[str, Param],
    env: dict[str, Any],
    inputs: dict[str, np.ndarray],
) -> None:
    values = inputs.get(use.src)
    target = params.get(use.target)
    if values is None or target is None or not values.size:
        return
    extent_expr = target.type.shape[use.dim]  # type: ignore[union-attr]
    scope = dict(env)
    scope[use.sym] = values.astype(np.int64).reshape(-1)
    try:
        at = np.broadcast_to(evaluate(as_expr(use.at), scope), scope[use.sym].shape)
        extent = int(evaluate(extent_expr, env))
    except (KeyError, ValueError, TypeError):
        return  # the index also depends on loop variables: not decidable here
    bad = np.flatnonzero((at < 0) | (at >= extent))
    if not bad.size:
        return
    first = int(bad[0])
    where = np.unravel_index(first, values.shape)
    element = f"{use.src}[{', '.join(map(str, where))}]" if values.ndim else use.src
    index = "" if str(use.at) == use.sym else f" (the index {use.at} is {at[first]})"
    raise UsageError(
        f"input `{use.src}` holds an index out of range: {element} = "
        f"{values.reshape(-1)[first]}{index}, but it indexes dimension {use.dim} of "
        f"`{use.target}`, of size {extent_expr} = {extent}",
        use.loc,
        notes=(f"elements of `{use.src}` out of range: {bad.size} of {values.size}",),
        hint=f"every index must be in [0, {extent}); check the data of `{use.src}`",
        code="index_input_out_of_range",
    )
