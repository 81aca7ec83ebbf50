"""Sub-dots: a dot whose operands or result do not fit L0 runs as L0-sized pieces.

A round of ``block_kv`` = 512 keys makes S = Q K^T [block_q, 512] (f32: 256 KiB at
block_q = 128) larger than L0C (128 KiB on 910B) and K^T [D, 512] larger than L0B, and
P [block_q, 512] larger than L0A (issue 16, "Long KV rounds"). The planner then runs
the dot as sub-dots of ``m x n x k`` elements:

* an N split: each sub-dot computes columns ``n0 .. n0 + n`` of the result in its own
  L0C tile, from rows ``n0 ..`` of K (a window of the B operand in L1), and its Fixpipe
  writes those columns of the destination (row stride: the whole N);
* a K split: the sub-dots over ``k0 .. k0 + k`` accumulate in one L0C tile (``Mmad``
  with ``cmatrixInitVal`` true for the first and false after), then one Fixpipe;
* an M split (rows of A and of the result), the same way as N.

The operands stay whole in L1; only their windows move to L0 (``fadsl::LoadAPart`` and
friends in ``fadsl_tile.h``). A dot is split only when it does not fit whole (so every
kernel that fitted is planned as before). The sizes chosen are those whose two slots
fit each L0 memory, so the L0 queues stay double-buffered (sub-dots of at least 64
along a split dimension); failing that, one slot.
Among those, the fewest sub-dots win, then an unsplit M, then an unsplit N. An A
operand resident in L0A (``l0_plan.py``) or given as its transpose is never split
(only N is). The textual IR shows the choice as the dot's ``l0_tile = [m, n, k]``,
which a ``.fir`` may also set (a value that does not divide the dot is E88).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import sympy

from fadsl.errors import ScheduleError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import as_expr, evaluate
from fadsl.ir.types import TileType

FRACTAL = 16
DOUBLE_MIN = 64
"""Sub-dots of two slots are at least this long along each split dimension: a longer
single-buffered sub-dot beats many short double-buffered ones (k = 16 Mmads)."""


@dataclass(frozen=True)
class SubDots:
    """How one dot runs: sub-dots of ``m x n x k`` over the dot's ``whole`` M, N, K."""

    m: int
    n: int
    k: int
    whole: tuple[int, int, int]

    @property
    def counts(self) -> tuple[int, int, int]:
        """Sub-dots along M, N and K."""
        big_m, big_n, big_k = self.whole
        return big_m // self.m, big_n // self.n, big_k // self.k

    @property
    def total(self) -> int:
        cm, cn, ck = self.counts
        return cm * cn * ck

    @property
    def split(self) -> bool:
        return self.total > 1

    def text(self) -> str:
        cm, cn, ck = self.counts
        along = ", ".join(
            f"{c} along {d}" for c, d in ((cm, "M"), (cn, "N"), (ck, "K")) if c > 1
        )
        return f"{self.total} sub-dots of {self.m} x {self.n} x {self.k} ({along})"


SubDotKey = tuple[str, int, int, int, int, int, int]
"""(dot result, m, n, k, M, N, K): a split as the Schedule carries it (hashable)."""


def as_key(name: str, s: SubDots) -> SubDotKey:
    return (name, s.m, s.n, s.k, *s.whole)


def from_keys(keys: tuple[SubDotKey, ...]) -> dict[str, SubDots]:
    return {k[0]: SubDots(k[1], k[2], k[3], (k[4], k[5], k[6])) for k in keys}


def symbolic_extents(d: ir.Dot) -> tuple[Any, Any, Any]:
    """The dot's M, N, K as the IR writes them (e.g. ``block_q, block_kv, D``)."""
    ta, tb = d.a.type, d.b.type
    assert isinstance(ta, TileType) and isinstance(tb, TileType)
    m, k = tuple(reversed(ta.shape)) if d.transpose_a else tuple(ta.shape)
    n = tb.shape[0] if d.transpose_b else tb.shape[1]
    return m, n, k


def extents(d: ir.Dot, env: dict[str, Any]) -> tuple[int, int, int] | None:
    """The dot's M, N, K at ``env`` (None if a size is not bound)."""
    try:
        return tuple(int(evaluate(as_expr(e), env)) for e in symbolic_extents(d))  # type: ignore[return-value]
    except (KeyError, TypeError, ValueError):
        return None


def _steps(extent: int, fixed: bool, low: int) -> list[int]:
    """Sub-dot sizes along one dimension: multiples of 16 that divide it, at least
    ``low`` (or the whole extent), largest first."""
    if fixed or extent % FRACTAL:
        return [extent]
    return [s for s in range(extent, 0, -FRACTAL) if extent % s == 0 and s >= low] or [
        extent
    ]


def choose(
    d: ir.Dot,
    whole: tuple[int, int, int],
    caps: tuple[int | None, int, int],
    fixed_a: bool,
) -> SubDots | None:
    """Sub-dot sizes for dot ``d`` whose chunks fit ``caps`` (bytes of L0A, L0B, L0C
    free for one dot's slots; L0A None: its A is resident and costs nothing here).
    Two slots where they fit, else one; None if not even one fits."""
    big_m, big_n, big_k = whole
    for slots in (2, 1):
        best: tuple[tuple[int, ...], SubDots] | None = None
        low = DOUBLE_MIN if slots == 2 else FRACTAL
        for ms in _steps(big_m, fixed_a, low):
            for ns in _steps(big_n, False, low):
                for ks in _steps(big_k, fixed_a, low):
                    s = SubDots(ms, ns, ks, whole)
                    if not fits(d, s, caps, slots):
                        continue
                    key = (s.total, ms != big_m, ns != big_n, -ks)
                    if best is None or key < best[0]:
                        best = (key, s)
        if best is not None:
            return best[1]
    return None


def fits(d: ir.Dot, s: SubDots, caps: tuple[int | None, int, int], slots: int) -> bool:
    """Whether ``slots`` slots of each of ``s``'s chunks fit ``caps`` (as ``choose``)."""
    cap_a, cap_b, cap_c = caps
    ia, ib, ic = _item(d.a), _item(d.b), _item(d.result)
    return (
        (cap_a is None or slots * s.m * s.k * ia <= cap_a)
        and slots * s.k * s.n * ib <= cap_b
        and slots * s.m * s.n * ic <= cap_c
    )


def given(
    d: ir.Dot, whole: tuple[int, int, int], fixed_a: bool, env: dict[str, Any]
) -> SubDots:
    """The sub-dot sizes a ``.fir`` sets (``l0_tile = [m, n, k]``, each an integer or
    an expression such as ``D`` for a whole dimension), checked at ``env``."""
    sizes = tuple(int(evaluate(as_expr(e), env)) for e in d.l0_tile)
    wrong = [
        f"{name} = {s} (the dot's {name.upper()} is {w})"
        for name, s, w in zip("mnk", sizes, whole)
        if s <= 0 or w % s or (s % FRACTAL and s != w)
    ]
    if len(sizes) != 3 or wrong:
        raise ScheduleError(
            f"l0_tile = {list(sizes)} does not split this dot into whole sub-dots: "
            + ("; ".join(wrong) or "it needs three sizes [m, n, k]"),
            d.loc,
            hint="each size must divide the dot's extent and be a multiple of 16; "
            "remove l0_tile to let the planner choose",
            code="ir_l0_tile_split",
        )
    m, n, k = sizes
    if fixed_a and (m, k) != (whole[0], whole[2]):
        raise ScheduleError(
            f"l0_tile = {list(sizes)} splits the A operand of a dot whose A is "
            "resident in L0A or transposed: only N can be split there",
            d.loc,
            hint=f"use l0_tile = [{whole[0]}, {n}, {whole[2]}]",
        )
    return SubDots(m, n, k, whole)


def annotate(kernel: ir.Kernel, subs: dict[str, SubDots]) -> ir.Kernel:
    """``kernel`` with each split dot's ``l0_tile`` set to its sub-dot sizes, so that
    its textual IR shows the split (dots match by result name and line). A dimension
    that is not split is written as its extent (``D``, ``block_q``), not its value at
    the planned shape, so the written ``.fir`` still compiles at another head dim."""
    if not subs:
        return kernel

    def body(ops: tuple[ir.Op, ...]) -> tuple[ir.Op, ...]:
        out = []
        for op in ops:
            if isinstance(op, ir.Dot) and op.result.name in subs:
                s = subs[op.result.name]
                sizes = zip((s.m, s.n, s.k), s.whole, symbolic_extents(op))
                op = replace(
                    op,
                    l0_tile=tuple(
                        as_expr(e) if x == w else sympy.Integer(x) for x, w, e in sizes
                    ),
                )
            elif isinstance(op, (ir.For, ir.Grid)):
                op = replace(op, body=body(op.body))
            out.append(op)
        return tuple(out)

    return replace(kernel, body=body(kernel.body))


def _item(v: ir.Value) -> int:
    t = v.type
    assert isinstance(t, TileType)
    return t.dtype.itemsize


__all__ = [
    "SubDotKey",
    "SubDots",
    "annotate",
    "as_key",
    "from_keys",
    "choose",
    "extents",
    "fits",
    "given",
]
