"""Cross-core flag IDs shared by exchanges of sibling loops (plan/sync/flag_share.py), as
the schedule's budget (E94) counts them, and L0 queues shared by dots of two dtypes.

The append kernel with rotary (fadsl/lib/paged_append.py) rotates Q at the task's top
and the new keys in two sibling loops: 26 exchanges, counted one ID each by the
backend before flag_share (a BackendError: more than 16), 11 IDs once the loops share
them. (The library program as first written also needed a slot-free flag: 23 IDs,
refused by the schedule with E94.) Its L0 queues
serve f32 rotation dots and f16 attention dots: a byte queue the cube takes (both
dtypes are cube dtypes on 910B), not a u8 cube operand."""

from __future__ import annotations

from fadsl import target as targets
from fadsl.backends.ascendc.flag_ids import flag_ids
import fadsl as fd
from fadsl.ir.types import DType
from fadsl.plan.memory.plan_buffers import Lowering, kernel_env, lower
from fadsl.plan.resources import check_resources as cr
from fadsl.plan.sync.flag_share import ids_needed
from fadsl.passes import run_pipeline

SHAPE = dict(
    B=2, N=6, Nkv=3, Sq=3, D=64, Dv=64, Pages=48, MaxPages=24, MaxPos=768, RotaryHalf=16
)


def _append(rotary: str) -> Lowering:
    kdef = fd.attention(
        name="append_rot",
        paged_kv=True,
        page_size=16,
        append_kv=True,
        causal=True,
        layout="BSND",
        rotary=rotary,
        leftpad=True,
    )
    kernel = kdef.build({})
    t = targets.get("ascend910b1")
    env = {**kernel_env(kernel), **SHAPE}
    return lower(run_pipeline(kernel, t), t, env)


def test_rotary_append_exchanges_share_flag_ids_of_sibling_loops() -> None:
    low = _append("half")
    exchanges = len(low.sides.to_vector) + len(low.sides.to_cube)
    assert (exchanges, len(low.free)) == (26, 0)
    needed = ids_needed(low.grid, low.sides, low.rings, len(low.free))
    assert needed == 11
    # the backend numbers them with exactly as many IDs as the schedule counted
    ids = flag_ids(low)
    assert len({i for _, i, _ in ids}) == needed
    assert max(i for _, i, _ in ids) == needed - 1


def test_an_l0_queue_of_f16_and_f32_dots_holds_cube_dtypes() -> None:
    low = _append("interleaved")
    a_l0 = next(b for b in low.plan.buffers if b.space == "L0A")
    assert a_l0.dtype is DType.U8 and a_l0.holds == (DType.F16, DType.F32)
    t = targets.get("ascend910b1")
    assert cr.unsupported_dtypes(low.plan, t) == ()
    # a chip whose cube lacks one of them still refuses it, naming that dtype
    no_f32 = _without_cube_dtype(t, "f32")
    bad = cr.unsupported_dtypes(low.plan, no_f32)
    assert {(b.space, b.dtype) for b in bad} >= {("L0A", DType.F32)}


def _without_cube_dtype(t: targets.Target, dtype: str) -> targets.Target:
    from dataclasses import replace

    return replace(t, cube_dtypes=tuple(d for d in t.cube_dtypes if d != dtype))

