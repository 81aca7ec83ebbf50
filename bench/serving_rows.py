"""bench/decode_model.py's rows for issue 30's serving cases (item 5), MODELLED on
910B2 (no NPU here): the HBM fraction = the K and V bytes a step must read / modelled
time / the chip's HBM rate, at N=32, Nkv=8, D=128, fp16, causal, pages of 128.

* append (+ rotary): ``fd.attention(paged_kv=True, append_kv=True)``. The kernel model
  takes one KV loop per task (fadsl/perf/kernel.py) and refuses the append kernel, which
  has three (the cached pages, the new keys, the writes); the row is its cached-pages
  loop alone: the unpacked paged decode kernel (``pack_gqa=False``: the append kernel
  does not pack GQA heads) at ``stages=1`` and ``kv_splits=1`` (its defaults; it takes
  no split-KV), Sq=1. At Sq=1 the other two loops handle one new token; the row leaves
  them (and the rotation of Q and the new key) out, so it is an upper bound of the
  append kernel's fraction, labelled PROXY.
* MLA decode: bench/mla_model.py (its own rows, printed after the decode rows).
* chunked prefill: bench/prefill_model.py's TND kernel at its cases, the fastest tile
  of {128, 256}^2; its fraction is low by nature (a chunk of hundreds of rows is
  compute bound), printed with its TFLOPS.
* int8 KV cache: bench/decode_int8.py (issue 30 item 2, its own rows).
"""

from __future__ import annotations

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from model_rows import TARGET, estimate, print_table  # noqa: E402

N, NKV, D, PAGE, SKV = 32, 8, 128, 128, 32768
APPEND_PROXY = """import fadsl as fd

kernel = fd.attention(name="append_proxy", paged_kv=True, page_size=128, causal=True,
                      layout="BSND", pack_gqa=False)
"""


def append_rows() -> list[tuple[str, ...]]:
    """The PROXY rows (see the module doc) at B=1 and B=8."""
    out = []
    pages = SKV // PAGE
    with tempfile.TemporaryDirectory() as tmp:
        file = os.path.join(tmp, "append_proxy.py")
        with open(file, "w") as f:
            f.write(APPEND_PROXY)
        for b in (1, 8):
            shape = (
                f"B={b},N={N},Nkv={NKV},Sq=1,D={D},Pages={b * pages},MaxPages={pages}"
            )
            m = estimate(file, shape, ("stages=1", "kv_splits=1"))
            assert m is not None, "the proxy fits 910B2"
            frac = m.hbm_fraction(2 * b * SKV * NKV * D * 2)
            out.append(
                ("append PROXY", str(b), "1", str(SKV), str(m.kt.tasks),
                 f"{m.kt.time_s * 1e6:9.1f} us", f"{frac:.3f}", "-")
            )  # fmt: skip
    return out


def prefill_rows() -> list[tuple[str, ...]]:
    """bench/prefill_model.py's TND kernel at its cases, the fastest tile."""
    import prefill_model as pm

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        file = os.path.join(tmp, "pf.py")
        with open(file, "w") as f:
            f.write(f"import fadsl as fd\n\nkernel = {pm.KERNELS['prefill (TND)']}\n")
        for b, q, kv in pm.CASES:
            shape = pm.shape_of("prefill (TND)", b, q, kv)
            got = [
                m
                for bq in pm.SIZES
                for bk in pm.SIZES
                if (m := estimate(file, shape, (f"block_q={bq}", f"block_kv={bk}")))
            ]
            m = min(got, key=lambda x: x.kt.time_s)
            frac = m.hbm_fraction(2 * b * kv * NKV * D * 2)
            tflops = pm.useful_flops(b, q, kv) / m.kt.time_s / 1e12
            out.append(
                ("chunked prefill", str(b), str(q), str(kv), str(m.kt.tasks),
                 f"{m.kt.time_s * 1e6:9.1f} us", f"{frac:.3f}", f"{tflops:.1f}")
            )  # fmt: skip
    return out


def print_serving() -> None:
    print(
        f"   issue 30 serving cases, MODELLED on {TARGET}: N={N}, Nkv={NKV}, D={D}, "
        f"fp16, causal, pages of {PAGE}; HBM = K and V bytes / modelled time"
    )
    columns = [
        ("case", 15), ("B", 2), ("Sq", 5), ("Skv", 6), ("tasks", 5), ("time", 12),
        ("HBM", 6), ("TFLOPS", 6),
    ]  # fmt: skip
    print_table(columns, append_rows() + prefill_rows())
    print(
        "   append PROXY: the append kernel's cached-pages loop alone (the unpacked "
        "paged decode kernel, stages=1, no split-KV; the kernel model refuses the "
        "append kernel's three loops), an upper bound; chunked prefill: "
        "bench/prefill_model.py's TND kernel, Sq = the chunk's rows, Skv = the "
        "sequence's keys; MLA and int8 rows: below"
    )


if __name__ == "__main__":
    print_serving()
