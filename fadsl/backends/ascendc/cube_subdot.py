"""A dot the planner splits into L0-sized sub-dots (``plan/memory/l0_split.py``), as C++.

The operands stay whole in L1; each sub-dot moves its windows to L0A/L0B
(``fadsl::LoadAPart``, ``LoadBPart``, ``LoadBTransposedPart``), the sub-dots along K
accumulate in one L0C tile (``Mmad`` with ``cmatrixInitVal`` true for the first, false
after: asc-devkit ``Mmad.md``), and each L0C tile is written by one ``Fixpipe`` to its
rows and columns of the destination (``dstStride`` the whole N).
"""

from __future__ import annotations

from dataclasses import dataclass

from fadsl.backends.ascendc.names import Names
from fadsl.ir import nodes as ir
from fadsl.plan.memory.l0_split import SubDots


@dataclass(frozen=True)
class Dims:
    """The dot's extents as C++ (whole) and the operand tiles' rows in L1."""

    m: str
    n: str
    k: str
    a_rows: str
    b_rows: str


def loops(
    op: ir.Dot, s: SubDots, dims: Dims, names: Names
) -> tuple[dict[str, str], list[tuple[str, str, int]]]:
    """The offset variable of each dimension ('0' where it is not split) and the loop
    (variable, extent, step) of each split one, in M, N, K order."""
    offsets: dict[str, str] = {}
    out: list[tuple[str, str, int]] = []
    for dim, whole, step, count in zip(
        "mnk", (dims.m, dims.n, dims.k), (s.m, s.n, s.k), s.counts
    ):
        if count == 1:
            offsets[dim] = "0"
            continue
        var = names.m.claim(
            "subdot", f"{op.result.name}.{dim}", dim + "Sub", ("kernel",)
        )
        offsets[dim] = var
        out.append((var, whole, step))
    return offsets, out


def header(var: str, whole: str, step: int) -> str:
    return f"for (uint32_t {var} = 0; {var} < {whole}; {var} += {step})"


def load_a(
    op: ir.Dot, s: SubDots, dims: Dims, a: str, off: dict[str, str]
) -> str | None:
    """The LoadData of the A window, None when the whole A is loaded as before."""
    if (s.m, s.k) == s.whole[0::2]:
        return None
    return (
        f"fadsl::LoadAPart(aL0Tile, {a}, {dims.a_rows}, {off['m']}, {off['k']}, "
        f"{s.m}, {s.k});"
    )


def load_b(
    op: ir.Dot, s: SubDots, dims: Dims, b: str, off: dict[str, str]
) -> str | None:
    """The LoadData of the B window, None when the whole B is loaded as before."""
    if (s.k, s.n) == s.whole[2:0:-1]:
        return None
    if op.transpose_b:
        return (
            f"fadsl::LoadBTransposedPart(bL0Tile, {b}, {dims.b_rows}, {off['n']}, "
            f"{off['k']}, {s.k}, {s.n});"
        )
    return (
        f"fadsl::LoadBPart(bL0Tile, {b}, {dims.b_rows}, {off['k']}, {off['n']}, "
        f"{s.k}, {s.n});"
    )


def comment(op: ir.Dot, s: SubDots) -> str:
    return f"// %{op.result.name} as {s.text()} (plan/memory/l0_split.py)"


__all__ = ["Dims", "comment", "header", "load_a", "load_b", "loops"]
