"""An int8 cache's P @ V takes two operands the vector cores make: V (dequantised
right after its load, sent before the softmax) and P (sent after it). The cube waits
for them in the order they are sent (plan/schedule/send_order.py), so V crosses into
L1 while the vector cores run the softmax; the kernel model places the workspace
steps the same way (issue 30)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import fadsl as fd
from fadsl import target as targets
from fadsl.commands import common
from fadsl.ir import nodes as ir
from fadsl.perf import timeline

KERNEL = """import fadsl as fd

kernel = fd.attention(name="decode_q", paged_kv=True, page_size=128, causal=True,
                      kv_dtype="int8", kv_scale="channel")
"""
SHAPE = "B=2,N=32,Nkv=8,Sq=1,D=128,Pages=64,MaxPages=32"


def _binding(tmp: Path):  # type: ignore[no-untyped-def]
    src = tmp / "decode_q.py"
    src.write_text(KERNEL)
    args = argparse.Namespace(
        file=str(src),
        kernel=None,
        sets=["kv_splits=2", "stages=1", "block_kv=256"],
        dtype=None,
        shape=SHAPE,
    )
    return common.build(args, target=targets.get("ascend910b2"))


def _pv_operands(tmp: Path) -> tuple[str, str]:
    """(P, V): the workspace names of P @ V's operands, from the kernel's IR."""
    from fadsl.plan.schedule.sides import walk

    kernel = _binding(tmp).kernel
    dots = [op for op in walk(kernel.body) if isinstance(op, ir.Dot)]
    (pv,) = [op for op in dots if not op.transpose_b]  # P @ V (not Q K^T)
    return pv.a.name, pv.b.name


def test_the_cube_waits_for_v_before_p(tmp_path: Path) -> None:
    """The cube's copy of V into L1 (its flag wait) comes before P's: regression for
    the order a, b of the dot, which left V's copy behind P's hand-over."""
    p, v = _pv_operands(tmp_path)
    kernel = fd.attention(
        name="decode_q",
        paged_kv=True,
        page_size=128,
        causal=True,
        kv_dtype="int8",
        kv_scale="channel",
    )
    shape = {k: int(x) for k, x in (d.split("=") for d in SHAPE.split(","))}
    out = tmp_path / "gen"
    fd.compile(
        kernel,
        target="ascend910b2",
        shape=shape,
        out_dir=str(out),
        consts={"kv_splits": 2, "block_kv": 256},
    )
    source = (out / "decode_q_kernel.cpp").read_text()

    def received(name: str) -> int:
        queue = re.search(rf"[AB]1, 1> (\w+);\s*// L1 operand: %{name} ", source)
        assert queue is not None, name
        return source.index(f"{queue.group(1)}.AllocTensor")

    assert received(v) < received(p)


def test_the_model_reads_v_into_l1_during_the_softmax(tmp_path: Path) -> None:
    b = _binding(tmp_path)
    p, v = _pv_operands(tmp_path)
    sched = timeline.build(b.kernel, targets.get("ascend910b2"), b.model_env())
    events = {e.name: e for e in sched.of(1)}
    read_v = events[f"ws {v} read (vector -> cube)"]
    write_p = events[f"ws {p} write (vector -> cube)"]
    assert read_v.end <= write_p.start, (read_v, write_p)


def test_the_model_sends_k_before_v_is_dequantised(tmp_path: Path) -> None:
    """The vector cores send K on as soon as it is dequantised (vector.py sends a
    value right after the op that makes it); the model's vector step ends there too,
    so K's workspace write does not wait for V's dequantisation."""
    from fadsl.plan.schedule.sides import walk

    b = _binding(tmp_path)
    kernel = b.kernel
    (qk,) = [
        op for op in walk(kernel.body) if isinstance(op, ir.Dot) and op.transpose_b
    ]
    _, v = _pv_operands(tmp_path)
    sched = timeline.build(kernel, targets.get("ascend910b2"), b.model_env())
    events = sched.of(1)
    sent = f"ws {qk.b.name} write (vector -> cube)"
    write_k = next(e for e in events if e.name == sent)
    made_v = next(e for e in events if e.name.startswith(f"vector update -> {v} "))
    assert write_k.start < made_v.end, (write_k, made_v)
