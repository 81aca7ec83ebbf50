"""The records of vector UB planning (slots, the finished plan) and their byte helpers.

``VectorPlanner`` (vector_plan) fills them; the plan_buffers pass turns a VecPlan into
buffers of the BufferPlan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import sympy

from fadsl.errors import Loc
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr
from fadsl.ir.types import DType, Shape
from fadsl.plan.memory.vector_forms import Form, TempSpec, count


@dataclass
class Slot:
    """One UB buffer being planned."""

    name: str
    position: str
    kind: str
    role: str
    loc: Loc
    buffers: int = 1
    bytes: Expr = sympy.Integer(0)
    shape: Shape = ()
    dtype: DType = DType.F32
    bits: int = 0
    values: list[str] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    pinned: bool = False
    """Queue buffers never take unrelated values."""
    allocs: list[int] = field(default_factory=list)
    """Queues: the last point of each AllocTensor .. FreeTensor lifetime, in order."""

    def free_at(self, pos: int) -> bool:
        return not self.pinned and all(e < pos for e in self.ends)


@dataclass
class VecPlan:
    slots: list[Slot]
    homes: dict[str, str]
    """value name -> slot name (views and fused comparisons are absent)."""
    views: dict[str, str]
    """expand_dims result -> its source value."""
    forms: dict[int, Form]
    """program point -> form of the vector op there."""
    temps: dict[int, tuple[str, ...]]
    """program point -> slots of its temporaries, in TempSpec order."""
    points: dict[int, ir.Op]
    frees: dict[int, tuple[str, ...]]
    """program point -> queue slots to FreeTensor after the op there."""
    state_copies: dict[str, tuple[tuple[str, str], ...]]
    """loop var -> (yielded value, state value) pairs to copy at the end of the body."""
    loops: tuple[tuple[int, int, ir.For], ...] = ()
    """(start point, end point, loop) of every loop in the grid body."""
    chunks: tuple[Any, ...] = ()
    """The row chunk regions (``plan/memory/row_chunk.py``'s ChunkRegion), if any."""


def linearize(
    body: tuple[ir.Op, ...],
    points: dict[int, ir.Op],
    loops: list[tuple[int, int, ir.For]],
    counter: list[int],
) -> None:
    for op in body:
        counter[0] += 1
        points[counter[0]] = op
        if isinstance(op, ir.For):
            start = counter[0]
            linearize(op.body, points, loops, counter)
            counter[0] += 1
            loops.append((start, counter[0], op))
        elif isinstance(op, ir.Grid):
            linearize(op.body, points, loops, counter)


def grow_bytes(current: Expr, need: Expr) -> Expr:
    """Bytes of a buffer shared by values of different sizes: the symbolic maximum, so the
    plan's formula stays right at every block size, not only at the planning sizes."""
    if current == 0 or current == need:
        return need
    args = set(current.args) if isinstance(current, sympy.Max) else {current}
    return smax(args | {need})


def smax(terms: set[Expr]) -> Expr:
    """Max of byte counts without terms another term provably dominates.

    Built with evaluate=False: sympy's own Max simplification compares every pair through
    its assumption system, which made planning slow. Kept per set of terms: the terms are
    symbolic (the same at every block size), so ``fadsl tune``'s plans share them.
    """
    return _smax(frozenset(terms))


@lru_cache(maxsize=4096)
def _smax(terms: frozenset[Expr]) -> Expr:
    kept = [
        t for t in terms if not any(o != t and (o - t).is_nonnegative for o in terms)
    ]
    if len(kept) == 1:
        return kept[0]
    return sympy.Max(*sorted(kept, key=sympy.default_sort_key), evaluate=False)


def spec_bytes(spec: TempSpec) -> Expr:
    n = count(spec.shape)
    if spec.bits:
        return sympy.ceiling(n * spec.bits / 8)
    return n * spec.dtype.itemsize


def camel(name: str) -> str:
    parts = [p for p in name.split("_") if p]
    if not parts:
        return "v"
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])
