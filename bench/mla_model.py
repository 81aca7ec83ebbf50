"""MLA decode in the kernel model (issue 30 items 3 and 5): the HBM bandwidth the
generated kernel reaches, as a fraction of the SKU's, MODELLED (no NPU here).

``fd.attention(paged_kv=True, page_size=64, layout="BSND", v_from_k=True)``: one
latent KV head, D = 576, Dv = 512, N query heads packed into the cube's M dimension
(block_q = 16), pages of 64 rows (one a KV block), every sequence Skv keys long,
fp16, on 910B2; kv_splits is the one of ``fadsl tune``'s candidates with the smallest
modelled time. Two fractions: "latent" counts the bytes a decode step must read (the
cache once: B * Skv * D * 2), "moved" the bytes the kernel loads (K's 576 columns,
then V's 512 of the same rows a second time: fadsl/lib/paged.py loads V from
``k_cache`` rather than reusing K's tile in L1).

    python3 bench/mla_model.py
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from model_rows import TARGET, estimate, print_table  # noqa: E402

PAGE, D, DV = 64, 576, 512
SOURCE = """import fadsl as fd

kernel = fd.attention(name="mla", paged_kv=True, page_size=64, layout="BSND", v_from_k=True)
"""


@dataclass(frozen=True)
class MlaRow:
    b: int
    n: int
    skv: int
    splits: int
    block_q: int
    seconds: float
    latent: float
    """latent bytes (the cache once) / time / HBM rate"""
    moved: float
    """K and V bytes the kernel loads / time / HBM rate"""
    tasks: int
    block_dim: int


def model(
    file: str, b: int, n: int, skv: int, splits: int, block_q: int = 16
) -> MlaRow | None:
    """The MLA kernel at batch b, N query heads, skv keys a sequence, ``splits`` KV
    parts, ``block_q`` heads a task; None when that does not fit the chip."""
    pages = skv // PAGE
    m = estimate(
        file,
        f"B={b},N={n},Nkv=1,Sq=1,D={D},Dv={DV},Pages={b * pages},MaxPages={pages}",
        (f"kv_splits={splits}", f"block_q={block_q}"),
        TARGET,
    )
    if m is None:
        return None
    latent = b * skv * D * 2
    moved = b * skv * (D + DV) * 2
    kt = m.kt
    return MlaRow(
        b,
        n,
        skv,
        splits,
        block_q,
        kt.time_s,
        m.hbm_fraction(latent),
        m.hbm_fraction(moved),
        kt.tasks,
        kt.block_dim,
    )


def mla_rows(
    cases: tuple[tuple[int, int, int], ...], heads: tuple[int, ...] = (16,)
) -> list[MlaRow]:
    """For each (B, N, Skv): the kv_splits and block_q (of ``heads``, at most N) the
    model ranks first among those that fit."""
    from fadsl.commands.tune_cmd import SPLIT_VALUES

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        file = os.path.join(tmp, "mla.py")
        with open(file, "w") as f:
            f.write(SOURCE)
        for b, n, skv in cases:
            rows = [
                model(file, b, n, skv, k, q)
                for k in SPLIT_VALUES
                for q in heads
                if q <= n
            ]
            out.append(min((r for r in rows if r is not None), key=lambda r: r.seconds))
    return out


CASES = ((1, 16, 4096), (8, 16, 4096), (8, 16, 32768), (8, 128, 32768))
HEADS = (16, 32, 64, 128)
"""block_q tried for N=128 (the last row): more heads a task read the cache fewer
times, but the UB of the split-KV merge ([block_q, Dv] f32) limits them."""


def print_mla() -> None:
    print(
        f"   MLA decode (v_from_k: one latent cache), MODELLED on {TARGET}: Nkv=1, "
        f"D={D}, Dv={DV}, Sq=1, pages of {PAGE}, fp16"
    )
    columns = [
        ("B", 3), ("N", 4), ("Skv", 6), ("block_q", 7), ("kv_splits", 9),
        ("tasks", 5), ("cores", 5), ("time", 11), ("latent", 7), ("moved", 6),
    ]  # fmt: skip
    rows = [
        (
            str(r.b), str(r.n), str(r.skv), str(r.block_q), str(r.splits),
            str(r.tasks), str(r.block_dim), f"{r.seconds * 1e6:8.1f} us",
            f"{r.latent:7.3f}", f"{r.moved:6.3f}",
        )  # fmt: skip
        for r in mla_rows(CASES, (16,)) + mla_rows(CASES[-1:], HEADS)
    ]
    print_table(columns, rows)
    print(
        "   latent: the cache's bytes (read once, as a decode step must) / modelled "
        "time, as a fraction of HBM; moved: the bytes the kernel loads (V's 512 "
        "columns read again after K's 576); block_q=16 in every row but the last, "
        "whose block_q is the one the model ranks first of 16, 32, 64, 128"
    )


if __name__ == "__main__":
    print_mla()
