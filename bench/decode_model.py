"""Decode over a paged KV cache in the kernel model (issue 18): the HBM bandwidth the
generated kernel reaches, as a fraction of the SKU's, MODELLED (no NPU here).

examples/decode_paged.py as ``fadsl compile`` builds it (pages of 128 rows, GQA heads
packed, causal) at B=1 and B=8, N=32, Nkv=8, Sq=1, D=128, fp16, every sequence 32K
keys long, on 910B2. The bytes a decode step must read are the K and V of every
sequence (B * Skv * Nkv * D * 2 bytes, twice); the modelled bandwidth is those bytes
over the modelled kernel time (fadsl/perf/kernel.py, lengths from
``Binding.model_env``). Issue 18's target (>= 0.70) is for split-KV, which fadsl does
not have yet: with B * Nkv = 8 tasks on 24 cores, B=1 leaves most cores idle.

    python3 bench/decode_model.py
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fadsl import target as targets  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = "ascend910b2"
PAGE, SKV, N, NKV, D = 128, 32768, 32, 8, 128


def decode_rows() -> list[tuple[int, float, float, int, int]]:
    """(B, modelled seconds, fraction of HBM bandwidth, tasks, blockDim) per batch."""
    from fadsl.commands import common
    from fadsl.perf.kernel import KernelModel

    t = targets.get(TARGET)
    out = []
    for b in (1, 8):
        pages = SKV // PAGE
        args = argparse.Namespace(
            file=os.path.join(ROOT, "examples", "decode_paged.py"),
            kernel=None,
            sets=[],
            dtype=None,
            shape=f"B={b},N={N},Nkv={NKV},Sq=1,D={D},Pages={b * pages},"
            f"MaxPages={pages}",
        )
        binding = common.build(args)
        kt = KernelModel(binding.kernel, t).estimate(binding.model_env())
        cache_bytes = 2 * b * SKV * NKV * D * 2
        fraction = cache_bytes / kt.time_s / t.rate("hbm_bytes_per_s")
        out.append((b, kt.time_s, fraction, kt.tasks, kt.block_dim))
    return out


def part3() -> None:
    print(
        f"3. decode over a paged KV cache (examples/decode_paged.py), MODELLED on "
        f"{TARGET}:\n   N={N}, Nkv={NKV}, Sq=1, D={D}, Skv={SKV} per sequence, pages of "
        f"{PAGE}, fp16; bandwidth = K and V bytes / modelled time"
    )
    print(f"{'B':>3} {'split-KV':>8} {'tasks':>5} {'cores':>5} {'time':>10} {'HBM':>6}")
    for b, seconds, fraction, tasks, dim in decode_rows():
        print(
            f"{b:>3} {'no':>8} {tasks:>5} {dim:>5} {seconds * 1e6:8.1f} us "
            f"{fraction:6.2f}"
        )
    print(
        "   with split-KV: not available (fadsl has no split-KV yet; issue 18's target "
        ">= 0.70 is for it)"
    )


if __name__ == "__main__":
    part3()
