"""The engine steps of a dot the planner runs as sub-dots (``plan/memory/l0_split.py``).

Each sub-dot is its own MTE1 step (the A and B windows it moves from L1 to L0: A
again for every N window, B again for every M window, a resident A not at all) and
its own CUBE step (2 m n k flops); the sub-dots along K feed one L0C tile, so each
waits for the one before. On split chips each (M, N) window of a result the vector
cores read is written by its own Fixpipe (m n 4 bytes) right after its last CUBE
step, so the L0 slot rule of ``timeline_schedule.py`` (rule 7) sees the window's
drain. Nothing is merged into "one big dot".
"""

from __future__ import annotations

from typing import Any

import sympy

from fadsl.ir import nodes as ir
from fadsl.ir.types import DType, TileType
from fadsl.perf.step_calls import load_data_call
from fadsl.perf.timeline_schedule import Step
from fadsl.plan.memory.l0_split import SubDots


def sub_dot_steps(
    op: ir.Dot,
    s: SubDots,
    uses: tuple[str, ...],
    moved_a: bool,
    written: bool,
) -> list[Step]:
    """MTE1, CUBE (and Fixpipe, when ``written``) steps of every sub-dot of ``op``;
    ``moved_a``: the A window is moved to L0 (not resident)."""
    ta, tb, tc = op.a.type, op.b.type, op.result.type
    assert isinstance(ta, TileType) and isinstance(tb, TileType)
    assert isinstance(tc, TileType)
    res = op.result.name
    bt = "^T" if op.transpose_b else ""
    what = f"{op.a.name} @ {op.b.name}{bt}"
    flops_key = "cube_f32_flops" if ta.dtype is DType.F32 else "cube_flops"
    move: dict[str, Any] = {"l0b_bytes": sympy.Integer(s.k * s.n * tb.dtype.itemsize)}
    if moved_a:
        move["l0a_bytes"] = sympy.Integer(s.m * s.k * ta.dtype.itemsize)
    flops = {flops_key: sympy.Integer(2 * s.m * s.n * s.k)}
    cm, cn, ck = s.counts
    windows, total = cm * cn, s.total
    loads = (load_data_call(op, moved_a, (s.m, s.k, s.n)),)
    out: list[Step] = []
    for w in range(windows):
        made = ""
        for kk in range(ck):
            i = w * ck + kk
            tag = f"[{i + 1}/{total}]"
            l0 = f"{res}@l0#{i}"
            name = f"L1->L0 {what} {tag}"
            out.append(Step("MTE1", "mte1", name, uses, (l0,), move, calls=loads))
            last = w == windows - 1 and kk == ck - 1
            before = (made,) if made else ()
            made = res if last else f"{res}#{i}"
            name = f"cube {res} = {what} {tag}"
            out.append(Step("CUBE", "dot", name, (l0,) + before, (made,), flops))
        if written:
            gm = f"{res}@gm>vector" + ("" if w == windows - 1 else f"#{w}")
            work = {"ws_bytes": sympy.Integer(s.m * s.n * tc.dtype.itemsize)}
            label = f"ws {res} write (cube -> vector) [{w + 1}/{windows}]"
            out.append(Step("FIXPIPE", "ws_write", label, (made,), (gm,), work))
    return out


__all__ = ["sub_dot_steps"]
