"""int8 KV-cache decode in the kernel model (issue 30): MODELLED HBM fraction on 910B2.

The kernel: ``fd.attention(paged_kv=True, page_size=P, causal=True, kv_dtype="int8",
kv_scale=...)`` at B=8, N=32, Nkv=8, Sq=1, D=128, fp16 queries, every sequence 32K
keys, pages of 64 and of 128 rows. The generated kernel (docs/decode.md, "An int8
cache on the chip") loads and dequantises the pages on the vector cores, each core
half the block's rows, and hands the fp16 K and V to the cube through GM workspace.
The bytes a decode step must read are the int8 K and V of every sequence (B * Skv *
Nkv * D * 1 byte, twice) plus their scales (per channel: 2 * Nkv * D * 4 bytes; per
token: 2 * B * Skv * Nkv * 4 bytes); the fraction is those bytes over the modelled
kernel time (fadsl/perf/kernel.py, every sequence as long as its block table) over the
SKU's HBM rate. Per case the configuration with the smallest modelled time among
those ``fadsl check`` passes: kv_splits from ``fadsl tune``'s candidates, stages 1 or
2, KV blocks of one or two pages. The fp16 cache at the same shape and page size is
the comparison (2 bytes per element).

    python3 bench/decode_int8.py
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TARGET = "ascend910b2"
B, N, NKV, D, SKV = 8, 32, 8, 128, 32768
PAGES = (64, 128)
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


def model(
    file: str, page: int, splits: int, stages: int, block_kv: int
) -> float | None:
    """Modelled seconds, or None when the configuration does not fit the chip."""
    from fadsl import target as targets
    from fadsl.commands import common
    from fadsl.driver.lower import lower
    from fadsl.perf.kernel import KernelModel

    t = targets.get(TARGET)
    pages = SKV // page
    args = argparse.Namespace(
        file=file,
        kernel=None,
        sets=[f"kv_splits={splits}", f"stages={stages}", f"block_kv={block_kv}"],
        dtype=None,
        shape=f"B={B},N={N},Nkv={NKV},Sq=1,D={D},Pages={B * pages},MaxPages={pages}",
    )
    binding = common.build(args, target=t)
    env = binding.model_env()
    if not lower(binding, plan=False).check_at(env).ok:
        return None
    return KernelModel(binding.kernel, t).estimate(env).time_s


Row = tuple[str, int, int, int, int, float, float]
"""(case, page, kv_splits, stages, block_kv, seconds, HBM fraction)."""


def rows() -> list[Row]:
    """The fastest configuration that fits, of each cache and page size."""
    from fadsl import target as targets

    hbm = targets.get(TARGET).rate("hbm_bytes_per_s")
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for page in PAGES:
            for name, quant in CASES:
                file = os.path.join(tmp, "decode_q.py")
                with open(file, "w") as f:
                    f.write(KERNEL.format(page=page, quant=quant))
                best = fastest(file, page)
                if best is not None:
                    k, s, kv, sec = best
                    out.append(
                        (name, page, k, s, kv, sec, read_bytes(quant) / sec / hbm)
                    )
    return out


def fastest(file: str, page: int) -> tuple[int, int, int, float] | None:
    """(kv_splits, stages, block_kv, seconds) of the fastest fitting configuration."""
    from fadsl.commands.tune_cmd import SPLIT_VALUES

    runs = [
        (k, s, kv, model(file, page, k, s, kv))
        for k in SPLIT_VALUES
        for s in (1, 2)
        for kv in (page, 2 * page)
    ]
    fits = [r for r in runs if r[3] is not None]
    return min(fits, key=lambda r: r[3]) if fits else None  # type: ignore[return-value]


def main() -> None:
    print(
        f"int8 KV-cache decode, MODELLED on {TARGET}: B={B}, N={N}, Nkv={NKV}, Sq=1, "
        f"D={D}, Skv={SKV} per sequence, causal, fp16 q and o;\n"
        "HBM fraction = (K and V bytes as stored + scales) / modelled time / HBM rate"
    )
    print(
        f"{'cache':>28} {'page':>4} {'kv_splits':>9} {'stages':>6} {'block_kv':>8} "
        f"{'time':>10} {'HBM':>6}"
    )
    for name, page, k, s, kv, sec, frac in rows():
        print(
            f"{name:>28} {page:>4} {k:>9} {s:>6} {kv:>8} {sec * 1e6:8.1f} us {frac:6.3f}"
        )


if __name__ == "__main__":
    main()
