"""Cross-core flag IDs shared by exchanges of sibling loops (plan/sync/flag_share.py), as
the schedule's budget (E94) counts them, and L0 queues shared by dots of two dtypes.

Until issue 30's rot30 work the append kernel with rotary (fadsl/lib/paged_append.py)
was the example of both: it rotated on the cube (f32 dots with [D, D] pairing
matrices) in three sibling loops, 26 exchanges sharing 11 IDs. It now rotates on the
vector unit (``take_columns``): 8 exchanges, none of them sharing, and no f32 dot. The
two mechanisms are shown here on small kernels of the same structure (five sibling
KV loops; an f32 dot next to f16 ones), and the append kernel's count is checked
against the backend's numbering."""

from __future__ import annotations

from typing import Any

from fadsl import target as targets
from fadsl.backends.ascendc.flag_ids import flag_ids
import fadsl as fd
from fadsl.ir.types import DType
from fadsl.plan.memory.plan_buffers import Lowering, kernel_env, lower
from fadsl.plan.resources import check_resources as cr
from fadsl.plan.sync.flag_share import ids_needed, ring_values, shared_ids
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


@fd.kernel(dtype="fp16", default_shape=dict(S=64, D=64))
def siblings(
    q: fd.In("S", "D"),
    k: fd.In("S", "D"),
    v: fd.In("S", "D"),
    o: fd.Out("S", "D"),
    block: int = 16,
):
    """Five sibling KV loops (the append kernel has three): three exchanges each (the scores and P @ V to the vector cores, P to the
    cube), more than the 16 IDs would give rings to all."""
    S, D = q.shape
    for i in fd.grid(fd.cdiv(S, block)):
        qt = fd.load(q[fd.ds(i * block, block), :], pad=0)
        acc = fd.zeros((block, D), fd.f32)
        for j1 in range(fd.cdiv(S, block)):
            k1 = fd.load(k[fd.ds(j1 * block, block), :], pad=0)
            v1 = fd.load(v[fd.ds(j1 * block, block), :], pad=0)
            s1 = fd.exp(fd.dot(qt, k1, transpose_b=True))
            acc = acc + fd.dot(fd.cast(s1, fd.f16), v1)
        for j2 in range(fd.cdiv(S, block)):
            k2 = fd.load(k[fd.ds(j2 * block, block), :], pad=0)
            v2 = fd.load(v[fd.ds(j2 * block, block), :], pad=0)
            s2 = fd.exp(fd.dot(qt, k2, transpose_b=True))
            acc = acc + fd.dot(fd.cast(s2, fd.f16), v2)
        for j3 in range(fd.cdiv(S, block)):
            k3 = fd.load(k[fd.ds(j3 * block, block), :], pad=0)
            v3 = fd.load(v[fd.ds(j3 * block, block), :], pad=0)
            s3 = fd.exp(fd.dot(qt, k3, transpose_b=True))
            acc = acc + fd.dot(fd.cast(s3, fd.f16), v3)
        for j4 in range(fd.cdiv(S, block)):
            k4 = fd.load(k[fd.ds(j4 * block, block), :], pad=0)
            v4 = fd.load(v[fd.ds(j4 * block, block), :], pad=0)
            s4 = fd.exp(fd.dot(qt, k4, transpose_b=True))
            acc = acc + fd.dot(fd.cast(s4, fd.f16), v4)
        for j5 in range(fd.cdiv(S, block)):
            k5 = fd.load(k[fd.ds(j5 * block, block), :], pad=0)
            v5 = fd.load(v[fd.ds(j5 * block, block), :], pad=0)
            s5 = fd.exp(fd.dot(qt, k5, transpose_b=True))
            acc = acc + fd.dot(fd.cast(s5, fd.f16), v5)
        fd.store(o[fd.ds(i * block, block), :], fd.cast(acc, fd.f16))


@fd.kernel(dtype="fp16", default_shape=dict(S=64, D=64))
def mixed_dots(x: fd.In("S", "D"), o: fd.Out("S", "D"), block: int = 16):
    """An f32 dot (a signed swap of column halves by a [D, D] 0/1 matrix, as the
    append kernel's rotation was) before a loop of f16 dots."""
    S, D = x.shape
    for i in fd.grid(fd.cdiv(S, block)):
        xt = fd.load(x[fd.ds(i * block, block), :], pad=0)
        col = fd.arange(0, D)
        swap = fd.arange(0, D)[:, None] == (col[None, :] + D // 2) % D
        m = fd.where(swap, fd.full((D, D), 1.0, fd.f32), 0.0)
        y = fd.dot(fd.cast(xt, fd.f32), m, transpose_b=True)
        for j in range(fd.cdiv(S, block)):
            kt = fd.load(x[fd.ds(j * block, block), :], pad=0)
            s = fd.dot(xt, kt, transpose_b=True)
            y = y + fd.dot(fd.cast(s, fd.f16), kt)
        fd.store(o[fd.ds(i * block, block), :], fd.cast(y, fd.f16))


def _lower(kdef: Any) -> Lowering:
    kernel = kdef.build({})
    t = targets.get("ascend910b1")
    env = {**kernel_env(kernel), "S": 64, "D": 64}
    return lower(run_pipeline(kernel, t), t, env)


def test_exchanges_of_sibling_loops_share_flag_ids() -> None:
    low = _lower(siblings)
    exchanges = len(low.sides.to_vector) + len(low.sides.to_cube)
    assert (exchanges, len(low.free)) == (15, 0)
    assert ring_values(low.rings) == set()
    groups = shared_ids(low.grid, low.sides, low.rings)
    # the scores, P @ V and P of the five loops: one ID per role
    assert len(groups) == 15 and len(set(groups.values())) == 3
    needed = ids_needed(low.grid, low.sides, low.rings, len(low.free))
    assert needed == 3
    # the backend numbers them with exactly as many IDs as the schedule counted
    ids = flag_ids(low)
    assert len({i for _, i, _ in ids}) == needed
    assert max(i for _, i, _ in ids) == needed - 1


def test_rotary_append_flag_ids_fit_and_match_the_backend() -> None:
    """The append kernel rotating on the vector unit: 8 exchanges (no rotation
    operand goes to the cube), within the 16 IDs with its ring loop."""
    low = _append("half")
    exchanges = len(low.sides.to_vector) + len(low.sides.to_cube)
    assert (exchanges, len(low.free)) == (8, 0)
    needed = ids_needed(low.grid, low.sides, low.rings, len(low.free))
    assert needed <= 16
    assert max(i for _, i, _ in flag_ids(low)) == needed - 1


def test_an_l0_queue_of_f16_and_f32_dots_holds_cube_dtypes() -> None:
    low = _lower(mixed_dots)
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

