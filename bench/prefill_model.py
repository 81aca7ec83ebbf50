"""Chunked prefill on a paged KV cache in the kernel model (issue 30 item 4): modelled
TFLOPS of ``fd.attention(paged_kv=True, layout="TND")`` against the same attention
on contiguous K and V, MODELLED (no NPU here).

N=32, Nkv=8, D=128, fp16, causal, pages of 128, on 910B2. B chunks of ``q`` query rows
each, every chunk at the end of a sequence of ``kv`` keys (its own included): the cache
holds ``kv - q`` keys of earlier chunks. Useful FLOPs count the scores causal keeps:
``4 * D * N * B * (q * (kv - q) + q * (q + 1) / 2)``. Rows:

* ``prefill (TND)``: fadsl/lib/prefill.py, block_q rows of one head per task, the KV
  loop stopping at the causal diagonal; (block_q, block_kv) the fastest fitting of
  {128, 256} x {128, 256}, as ``fadsl tune`` would rank them.
* ``paged BNSD, heads``: what worked before: the decode program with ``pack_gqa=False``
  and q in BNSD (one padded batch row per chunk: needs equal chunks).
* ``paged BNSD, (s, g)``: the decode program's default, GQA (s, g) packing: a task
  reads every page of its sequence whatever its rows (no causal skip).
* ``contiguous``: ``fd.attention(causal=True)`` on k, v [B, Nkv, kv, D] (BNSD): the
  same attention without pages, the ceiling paging should reach.

    python3 bench/prefill_model.py
"""

from __future__ import annotations

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from model_rows import TARGET, estimate  # noqa: E402  (bench/model_rows.py)

PAGE, N, NKV, D = 128, 32, 8, 128
SIZES = (128, 256)
CASES = ((1, 2048, 4096), (4, 512, 4096), (8, 256, 8192))
"""(B, chunk rows, keys per sequence incl. the chunk's)."""
KERNELS = {
    "prefill (TND)": 'fd.attention(name="pf", paged_kv=True, layout="TND", causal=True)',
    "paged BNSD, heads": 'fd.attention(name="ph", paged_kv=True, causal=True, '
    "pack_gqa=False)",
    "paged BNSD, (s, g)": 'fd.attention(name="ps", paged_kv=True, causal=True)',
    "contiguous": 'fd.attention(name="dense", causal=True)',
}


def shape_of(name: str, b: int, q: int, kv: int) -> str:
    pages = kv // PAGE
    if name == "contiguous":
        return f"B={b},N={N},Nkv={NKV},Sq={q},Skv={kv},D={D}"
    rows = b * q if name.startswith("prefill") else q
    return f"B={b},N={N},Nkv={NKV},Sq={rows},D={D},Pages={b * pages},MaxPages={pages}"


def seconds(file: str, shape: str, bq: int, bk: int) -> tuple[float, int] | None:
    """(modelled seconds, tasks) of ``file`` at ``shape``; None if it does not fit."""
    m = estimate(file, shape, (f"block_q={bq}", f"block_kv={bk}"), TARGET)
    return None if m is None else (m.kt.time_s, m.kt.tasks)


def useful_flops(b: int, q: int, kv: int) -> float:
    return 4.0 * D * N * b * (q * (kv - q) + q * (q + 1) / 2)


def rows() -> list[tuple[int, int, int, str, float, int, int, int]]:
    """(B, q, kv, kernel, seconds, tasks, block_q, block_kv) of the fastest fitting
    tile of each kernel and case."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for name, call in KERNELS.items():
            files[name] = os.path.join(tmp, f"k{len(files)}.py")
            with open(files[name], "w") as f:
                f.write(f"import fadsl as fd\n\nkernel = {call}\n")
        for b, q, kv in CASES:
            for name, file in files.items():
                got = [
                    (r, bq, bk)
                    for bq in SIZES
                    for bk in SIZES
                    if (r := seconds(file, shape_of(name, b, q, kv), bq, bk))
                ]
                (s, tasks), bq, bk = min(got, key=lambda g: g[0][0])
                out.append((b, q, kv, name, s, tasks, bq, bk))
    return out


def main() -> None:
    print(
        f"chunked prefill on a paged cache, MODELLED on {TARGET}: N={N}, Nkv={NKV}, "
        f"D={D}, fp16, causal, pages of {PAGE}\n   B chunks of q rows, each at the end "
        "of a sequence of kv keys (its own included); TFLOPS = useful FLOPs / "
        "modelled time"
    )
    print(
        f"{'B':>2} {'q':>5} {'kv':>5} {'kernel':>19} {'bq':>4} {'bkv':>4} {'tasks':>5} "
        f"{'time':>10} {'TFLOPS':>7} {'vs contiguous':>13}"
    )
    table = rows()
    dense = {(b, q, kv): s for b, q, kv, n, s, *_ in table if n == "contiguous"}
    for b, q, kv, name, s, tasks, bq, bk in table:
        tf = useful_flops(b, q, kv) / s / 1e12
        print(
            f"{b:>2} {q:>5} {kv:>5} {name:>19} {bq:>4} {bk:>4} {tasks:>5} "
            f"{s * 1e6:8.1f} us {tf:7.1f} {dense[(b, q, kv)] / s:13.2f}"
        )


if __name__ == "__main__":
    main()
