"""int8 KV-cache decode in the kernel model (issue 30): MODELLED HBM fraction on 910B2.

The kernel: ``fd.attention(paged_kv=True, page_size=64, causal=True, kv_dtype="int8",
kv_scale=...)`` at B=8, N=32, Nkv=8, Sq=1, D=128, fp16 queries, every sequence 32K
keys. Pages of 64 rows: the fp32 dequantisation of a 128-key block does not fit UB
beside the softmax (``fadsl check``: 150% of UB at pages of 128). The bytes a decode
step must read are the int8 K and V of every sequence (B * Skv * Nkv * D * 1 byte,
twice) plus their scales (per channel: 2 * Nkv * D * 4 bytes; per token: 2 * B * Skv *
Nkv * 4 bytes); the fraction is those bytes over the modelled kernel time
(fadsl/perf/kernel.py, every sequence as long as its block table) over the SKU's HBM
rate. kv_splits is the one of ``fadsl tune``'s candidates with the smallest modelled
time; stages as the check allows (2 where it fits, else the int8 default 1). The fp16
cache at the same shape and page size is the comparison (2 bytes per element).

    python3 bench/decode_int8.py
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TARGET = "ascend910b2"
B, N, NKV, D, SKV, PAGE = 8, 32, 8, 128, 32768, 64
KERNEL = """import fadsl as fd

kernel = fd.attention(name="decode_q", paged_kv=True, page_size={page}, causal=True{quant})
"""
CASES = (
    ("fp16 cache", ""),
    ("int8, per channel", ', kv_dtype="int8", kv_scale="channel"'),
    (
        "int8, per channel + offset",
        ', kv_dtype="int8", kv_scale="channel", kv_offset=True',
    ),
    ("int8, per token", ', kv_dtype="int8", kv_scale="token"'),
)


def read_bytes(quant: str) -> int:
    """The bytes one decode step must read from HBM: K and V, and their scales."""
    elems = 2 * B * SKV * NKV * D
    if "int8" not in quant:
        return elems * 2
    per = 2 if "offset" in quant else 1  # scales, and offsets of the same shape
    if "token" in quant:
        return elems + per * 2 * B * SKV * NKV * 4
    return elems + per * 2 * NKV * D * 4


def model(file: str, splits: int, stages: int) -> float | None:
    """Modelled seconds, or None when the configuration does not fit the chip."""
    from fadsl import target as targets
    from fadsl.commands import common
    from fadsl.driver.lower import lower
    from fadsl.perf.kernel import KernelModel

    t = targets.get(TARGET)
    pages = SKV // PAGE
    args = argparse.Namespace(
        file=file,
        kernel=None,
        sets=[f"kv_splits={splits}", f"stages={stages}"],
        dtype=None,
        shape=f"B={B},N={N},Nkv={NKV},Sq=1,D={D},Pages={B * pages},MaxPages={pages}",
    )
    binding = common.build(args, target=t)
    env = binding.model_env()
    if not lower(binding, plan=False).check_at(env).ok:
        return None
    return KernelModel(binding.kernel, t).estimate(env).time_s


def rows() -> list[tuple[str, int, int, float, float]]:
    """(case, kv_splits, stages, seconds, HBM fraction) of each cache."""
    from fadsl import target as targets
    from fadsl.commands.tune_cmd import SPLIT_VALUES

    hbm = targets.get(TARGET).rate("hbm_bytes_per_s")
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, quant in CASES:
            file = os.path.join(tmp, "decode_q.py")
            with open(file, "w") as f:
                f.write(KERNEL.format(page=PAGE, quant=quant))
            runs = [(s, k, model(file, k, s)) for k in SPLIT_VALUES for s in (1, 2)]
            s, k, sec = min((r for r in runs if r[2] is not None), key=lambda r: r[2])
            out.append((name, k, s, sec, read_bytes(quant) / sec / hbm))
    return out


def main() -> None:
    print(
        f"int8 KV-cache decode, MODELLED on {TARGET}: B={B}, N={N}, Nkv={NKV}, Sq=1, "
        f"D={D}, Skv={SKV} per sequence, pages of {PAGE}, causal, fp16 q and o;\n"
        "HBM fraction = (K and V bytes as stored + scales) / modelled time / HBM rate"
    )
    print(f"{'cache':>28} {'kv_splits':>9} {'stages':>6} {'time':>10} {'HBM':>6}")
    for name, k, s, sec, frac in rows():
        print(f"{name:>28} {k:>9} {s:>6} {sec * 1e6:8.1f} us {frac:6.3f}")


if __name__ == "__main__":
    main()
