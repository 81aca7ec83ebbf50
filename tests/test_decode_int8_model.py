"""The kernel model reads an int8 KV cache as 1 byte per element (issue 30 item 5):
the modelled HBM bytes of an int8 decode kernel are half the fp16 kernel's (plus the
scales), at bench/decode_int8.py's shape with fewer pages."""

from __future__ import annotations

import argparse
from pathlib import Path

from fadsl import target as targets
from fadsl.commands import common
from fadsl.perf.kernel import KernelModel

KERNEL = """import fadsl as fd

kernel = fd.attention(name="decode_q", paged_kv=True, page_size=64, causal=True{quant})
"""


def _hbm_bytes(tmp: Path, quant: str) -> int:
    src = tmp / "decode_q.py"
    src.write_text(KERNEL.format(quant=quant))
    args = argparse.Namespace(
        file=str(src),
        kernel=None,
        sets=["kv_splits=2"],
        dtype=None,
        shape="B=2,N=32,Nkv=8,Sq=1,D=128,Pages=128,MaxPages=64",
    )
    t = targets.get("ascend910b2")
    binding = common.build(args, target=t)
    return KernelModel(binding.kernel, t).estimate(binding.model_env()).hbm_bytes


def test_int8_cache_is_modelled_at_one_byte_per_element(tmp_path: Path) -> None:
    fp16 = _hbm_bytes(tmp_path, "")
    int8 = _hbm_bytes(tmp_path, ', kv_dtype="int8", kv_scale="channel"')
    cache16 = 2 * 2 * 64 * 64 * 8 * 128 * 2  # K and V: B * Skv * Nkv * D, 2 bytes
    assert fp16 >= cache16
    assert 0.45 < int8 / fp16 < 0.55, (int8, fp16)


def test_per_token_blocks_of_two_pages_of_128_fit_the_910b2(tmp_path: Path) -> None:
    """Per-token scales with an fp16 query are applied in half (paged_quant.py
    ``token_half``): a KV block of two pages of 128 fits the 910B2 UB (the fp32 form's
    temporaries needed 118% of it), so bench/decode_int8.py can take block_kv=256."""
    from fadsl.driver.lower import lower

    src = tmp_path / "decode_q.py"
    src.write_text(
        KERNEL.replace("page_size=64", "page_size=128").format(
            quant=', kv_dtype="int8", kv_scale="token"'
        )
    )
    args = argparse.Namespace(
        file=str(src),
        kernel=None,
        sets=["kv_splits=3", "stages=1", "block_kv=256"],
        dtype=None,
        shape="B=8,N=32,Nkv=8,Sq=1,D=128,Pages=2048,MaxPages=256",
    )
    binding = common.build(args, target=targets.get("ascend910b2"))
    report = lower(binding, plan=False).check_at(binding.model_env())
    assert report.ok, report


def test_per_channel_scales_are_loaded_once_per_task(tmp_path: Path) -> None:
    """Per channel with an fp16 query the scale and offset rows of the task's KV head
    are loaded (and cast to half) before the KV loop (paged_quant.py ``task_rows``),
    not once per block: the loop loads only the int8 pages."""
    from fadsl.ir import nodes as ir
    from fadsl.plan.schedule.sides import walk

    src = tmp_path / "decode_q.py"
    quant = ', kv_dtype="int8", kv_scale="channel", kv_offset=True'
    src.write_text(KERNEL.format(quant=quant))
    args = argparse.Namespace(
        file=str(src),
        kernel=None,
        sets=["kv_splits=2"],
        dtype=None,
        shape="B=2,N=32,Nkv=8,Sq=1,D=128,Pages=128,MaxPages=64",
    )
    kernel = common.build(args, target=targets.get("ascend910b2")).kernel
    loops = [op for op in walk(kernel.body) if isinstance(op, ir.For)]
    inside = {
        op.src for loop in loops for op in walk(loop.body) if isinstance(op, ir.Load)
    }
    everywhere = {op.src for op in walk(kernel.body) if isinstance(op, ir.Load)}
    names = {"k_scale", "v_scale", "k_offset", "v_offset"}
    assert names <= everywhere, everywhere
    assert not names & inside, inside
