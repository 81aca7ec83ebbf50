"""``atomic_add`` in Ascend C, as CANN's backward sums dQ across cores (``atomic_plan``).

- Init: one f32 GlobalTensor per output that needs a cast, in the workspace after the
  per-block part (``workspace + GetBlockNum() * WORKSPACE_BYTES_PER_CORE``), each
  region aligned to 512 bytes; an f32 output is its own sum.
- Before the grid, the vector cores zero the sums, each a share of ``CHUNK``-element
  steps (ops-transformer ``flash_attention_score_grad_pre.h`` zeroes its dQ workspace
  on the AIVs before ``SyncAll``).
- In the grid: ``SetAtomicAdd<float>``, the DataCopyPad from UB, ``SetAtomicNone``
  (``nsa_compress_grad.h`` and ``flash_attention_score_grad_s1s2_bn2gs1s2_sab.h``
  bracket their copies the same way).
- After the grid: each vector core casts its share of every sum into the output
  (round to nearest even, ``CAST_RINT``, as the interpreter rounds) and copies it out
  (``flash_attention_score_grad_post.h`` does this with ``CAST_ROUND``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fadsl.backends.ascendc.names import Names, ctype
from fadsl.backends.ascendc.view import Block, Line, Member, Stmt
from fadsl.ir import nodes as ir
from fadsl.ir.expr import CeilDiv, Expr
from fadsl.plan.schedule.atomic_plan import CHUNK, GM_ALIGN, AtomicSum

if TYPE_CHECKING:
    from fadsl.backends.ascendc.vector import VectorEmitter
    from fadsl.plan.memory.plan_buffers import Lowering


def sum_gm(names: Names, a: AtomicSum) -> str:
    """The GlobalTensor the atomic adds of ``a`` go to: its f32 sum, or the output."""
    if a.direct:
        return names.gm(a.output)
    return names.m.claim(
        "atomic", a.output, names.param(a.output) + "SumGm", ("kernel",)
    )


def offsets(low: Lowering) -> dict[str, Expr]:
    """Byte offset of each sum region from the start of the sums."""
    out: dict[str, Expr] = {}
    at: Expr = 0  # type: ignore[assignment]
    for a in low.plan.atomics:
        if a.direct:
            continue
        out[a.output] = at
        at = at + CeilDiv(a.bytes(), GM_ALIGN) * GM_ALIGN
    return out


def total_bytes(low: Lowering) -> Expr:
    """Bytes of all sum regions (what the host adds to the workspace)."""
    at: Expr = 0  # type: ignore[assignment]
    for a in low.plan.atomics:
        at = at + CeilDiv(a.bytes(), GM_ALIGN) * GM_ALIGN
    return at


def members(low: Lowering, names: Names) -> tuple[list[Member], list[Stmt]]:
    """GlobalTensor members of the f32 sums and their Init lines."""
    out: list[Member] = []
    init: list[Stmt] = []
    base = "workspace + AscendC::GetBlockNum() * WORKSPACE_BYTES_PER_CORE"
    for a in low.plan.atomics:
        if a.direct:
            continue
        name = sum_gm(names, a)
        what = f"f32 sums of atomic_add into `{a.output}` ({a.loc.short()})"
        out.append(Member(f"AscendC::GlobalTensor<float> {name};", "", what))
        off = names.expr(offsets(low)[a.output])
        at = base if off == "0" else f"{base} + {off}"
        init.append(
            Line(
                f"{name}.SetGlobalBuffer((__gm__ float*)({at}), "
                f"{names.count(a.shape)});"
            )
        )
    return out, init


def bracket(body: tuple[Stmt, ...]) -> tuple[Stmt, ...]:
    """The atomic form of a store: its DataCopyPad ``body`` between SetAtomicAdd and
    SetAtomicNone."""
    return (
        Line("AscendC::SetAtomicAdd<float>();"),
        *body,
        Line("AscendC::SetAtomicNone();"),
    )


def target(e: VectorEmitter, op: ir.AtomicAdd) -> str:
    """The GlobalTensor an ``atomic_add`` adds into."""
    a = next(x for x in e.low.plan.atomics if x.output == op.dst)
    return sum_gm(e.names, a)


def _steps(e: VectorEmitter, a: AtomicSum, body: list[Stmt]) -> Block:
    """A loop over this vector core's share of ``a``'s CHUNK-element steps."""
    n = e.names.count(a.shape)
    return Block(
        "",
        (
            Line(f"const int64_t elements = {n};"),
            Block(
                f"for (int64_t at = AscendC::GetBlockIdx() * {CHUNK}; at < elements; "
                f"at += AscendC::GetBlockNum() * AscendC::GetSubBlockNum() * {CHUNK})",
                (
                    Line(
                        f"const int64_t len = elements - at < {CHUNK} ? elements - at : {CHUNK};"
                    ),
                )
                + tuple(body),
            ),
        ),
    )


def _params(ct: str) -> str:
    return (
        "AscendC::DataCopyExtParams{1, "
        f'fadsl::Field<uint32_t>(len * sizeof({ct}), "DataCopyExtParams.blockLen"), 0, 0, 0}}'
    )


def zero_phase(e: VectorEmitter) -> tuple[Stmt, ...]:
    """Every sum set to 0 by the vector cores, each its share (before SyncAll)."""
    buf = e.names.buf("atomicSumBuf")
    out: list[Stmt] = [
        Line(f"AscendC::LocalTensor<float> zeros = {buf}.Get<float>();"),
        Line(f"AscendC::Duplicate(zeros, 0.0f, {CHUNK});"),
        Line("fadsl::SetWaitFlag<AscendC::HardEvent::V_MTE3>();"),
    ]
    for a in e.low.plan.atomics:
        copy = Line(
            f"AscendC::DataCopyPad({sum_gm(e.names, a)}[at], zeros, {_params('float')});"
        )
        out.append(_steps(e, a, [copy]))
    return tuple(out)


def cast_phase(e: VectorEmitter) -> tuple[Stmt, ...]:
    """Each cast sum rounded into its output, each vector core its share (after
    SyncAll)."""
    out: list[Stmt] = []
    sums = e.names.buf("atomicSumBuf")
    for a in e.low.plan.atomics:
        if a.direct:
            continue
        ct = ctype(a.dtype)
        casts = e.names.buf("atomicCastBuf")
        body: list[Stmt] = [
            Line(
                f"AscendC::DataCopyPad(sums, {sum_gm(e.names, a)}[at], {_params('float')}, "
                "AscendC::DataCopyPadExtParams<float>{false, 0, 0, 0});"
            ),
            Line("fadsl::SetWaitFlag<AscendC::HardEvent::MTE2_V>();"),
            Line(
                "AscendC::Cast(rounded, sums, AscendC::RoundMode::CAST_RINT, "
                "static_cast<uint32_t>(len));"
            ),
            Line("fadsl::SetWaitFlag<AscendC::HardEvent::V_MTE3>();"),
            Line(
                "// the next chunk's DataCopyPad into sums (MTE2) after this Cast (V) read it"
            ),
            Line("fadsl::SetWaitFlag<AscendC::HardEvent::V_MTE2>();"),
            Line(
                f"AscendC::DataCopyPad({e.names.gm(a.output)}[at], rounded, {_params(ct)});"
            ),
            Line("fadsl::SetWaitFlag<AscendC::HardEvent::MTE3_V>();"),
        ]
        out.append(
            Block(
                "",
                (
                    Line(f"AscendC::LocalTensor<float> sums = {sums}.Get<float>();"),
                    Line(f"AscendC::LocalTensor<{ct}> rounded = {casts}.Get<{ct}>();"),
                    _steps(e, a, body),
                ),
            )
        )
    return tuple(out)


__all__ = [
    "sum_gm",
    "offsets",
    "total_bytes",
    "members",
    "bracket",
    "target",
    "zero_phase",
    "cast_phase",
]
