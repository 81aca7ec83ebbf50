"""Decode over a paged KV cache in the kernel model (issue 18): the HBM bandwidth the
generated kernel reaches, as a fraction of the SKU's, MODELLED (no NPU here).

examples/decode_paged.py as ``fadsl compile`` builds it (pages of 128 rows, GQA heads
packed, causal) at B=1 and B=8, N=32, Nkv=8, Sq=1, D=128, fp16, every sequence 32K
keys long, on 910B2. The bytes a decode step must read are the K and V of every
sequence (B * Skv * Nkv * D * 2 bytes, twice); the modelled bandwidth is those bytes
over the modelled kernel time (fadsl/perf/kernel.py, lengths from
``Binding.model_env``), which with split-KV includes the SyncAll and the post phase
that merges the parts (fadsl/perf/post_phase.py). Without split-KV (kv_splits=1) the
grid has B * Nkv = 8 tasks per sequence batch of B=1, on 24 cores; with it, kv_splits
is the value ``fadsl tune`` would choose among its candidates (the smallest modelled
time, the example's block_q and stages), first with one page per KV block (as before
blocks of several pages), then with the block (1 to 4 pages, those that fit) and the
split count the model ranks first.

Then Sq=4 (speculative decoding) at B=1 and B=8: a packed task holding one query
position (the example, BSND) against one holding every (position, head) pair of its
group ((s, g) packing, BNSD), each at the kv_splits tune would choose. Then MLA
decode (one latent KV head, D=576, Dv=512; bench/mla_model.py), after issue 30's
append (a PROXY row: the kernel model refuses the append kernel) and chunked-prefill
rows (bench/serving_rows.py).

Last, the int8 KV cache (bench/decode_int8.py): int8 pages dequantised after each load,
per channel and per token, against the fp16 cache at the same page size.

    python3 bench/decode_model.py
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fadsl import target as targets  # noqa: E402
from model_rows import estimate  # noqa: E402  (bench/model_rows.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = "ascend910b2"
PAGE, SKV, N, NKV, D = 128, 32768, 32, 8, 128
BLOCKS = (128, 256, 384, 512)
"""KV blocks tried: 1 to 4 pages (those that do not fit the chip are skipped)."""


EXAMPLE = os.path.join(ROOT, "examples", "decode_paged.py")
BNSD = """import fadsl as fd

kernel = fd.attention(name="decode_bnsd", paged_kv=True, page_size=128, causal=True)
"""
"""The example's kernel with q and o in BNSD, where a task packs every position of
its head group ((s, g) packing; BSND packs one position per task)."""


def model(
    b: int,
    splits: int,
    block_kv: int = PAGE,
    sq: int = 1,
    file: str = EXAMPLE,
    v_cores: int = 1,
) -> Row | None:
    """The example (or ``file``) at batch b, Sq = ``sq``, with ``splits`` KV parts per
    task, KV blocks of ``block_kv`` keys and V read by the cube (``v_cores`` 1) or
    the two vector cores (2, fadsl/lib/paged.py ``relayed``); None when that
    configuration does not fit the chip (``fadsl check``'s plan at its own sizes)."""
    pages = SKV // PAGE
    m = estimate(
        file,
        f"B={b},N={N},Nkv={NKV},Sq={sq},D={D},Pages={b * pages},MaxPages={pages}",
        (f"kv_splits={splits}", f"block_kv={block_kv}", f"v_cores={v_cores}"),
        TARGET,
    )
    if m is None:
        return None
    kt = m.kt
    fraction = m.hbm_fraction(2 * b * SKV * NKV * D * 2)
    return Row(
        b,
        splits,
        block_kv,
        kt.time_s,
        fraction,
        kt.tasks,
        kt.block_dim,
        kt.post_s,
        v_cores,
    )


@dataclass(frozen=True)
class Row:
    b: int
    splits: int
    block_kv: int
    seconds: float
    fraction: float
    tasks: int
    block_dim: int
    post_s: float
    v_cores: int = 1


def best(b: int, blocks: tuple[int, ...], cores: tuple[int, ...] = (1,)) -> Row:
    """The fastest fitting split-KV configuration with KV blocks among ``blocks``
    and V read by ``cores`` (v_cores): what ``fadsl tune`` chooses among its
    kv_splits (block_q and stages fixed)."""
    from fadsl.commands.tune_cmd import SPLIT_VALUES

    rows = [
        model(b, k, kv, v_cores=c)
        for k in SPLIT_VALUES
        if k > 1
        for kv in blocks
        for c in cores
    ]
    return min((r for r in rows if r is not None), key=lambda r: r.seconds)


def decode_rows() -> list[Row]:
    """Per batch: no split-KV (one page per block), split-KV with one page per block
    (before issue 18's multi-page blocks), split-KV with the block tune chooses and
    V read by the cube (before issue 27's relay), and with V read by the cube or
    the vector cores (``v_cores``, as tune chooses)."""
    out = []
    for b in (1, 8):
        no_split = model(b, 1)
        assert no_split is not None
        out += [no_split, best(b, (PAGE,)), best(b, BLOCKS), best(b, BLOCKS, (1, 2))]
    return out


def packing_rows(sq: int = 4) -> list[tuple[str, int, int, float, float, int]]:
    """(packing, B, kv_splits, seconds, HBM fraction, tasks) at Sq = ``sq``
    (speculative decoding): one position per task (the example, BSND: what every
    packed kernel did before (s, g) packing) against (s, g) packing (BNSD), each
    with the kv_splits tune would choose (one page per KV block)."""
    from fadsl.commands.tune_cmd import SPLIT_VALUES

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        bnsd = os.path.join(tmp, "decode_bnsd.py")
        with open(bnsd, "w") as f:
            f.write(BNSD)
        for b in (1, 8):
            for name, file in (("one position", EXAMPLE), ("(s, g)", bnsd)):
                rows = [model(b, k, PAGE, sq, file) for k in SPLIT_VALUES]
                r = min((r for r in rows if r is not None), key=lambda r: r.seconds)
                out.append((name, b, r.splits, r.seconds, r.fraction, r.tasks))
    return out


def print_packing(sq: int = 4) -> None:
    print(
        f"   speculative decoding, Sq={sq} (G = N / Nkv = {N // NKV} heads a group): "
        "a packed task holds one position (BSND) or all (s, g) pairs (BNSD)"
    )
    print(
        f"{'B':>3} {'packing':>13} {'kv_splits':>9} {'tasks':>5} {'time':>10} "
        f"{'HBM':>6}"
    )
    for name, b, k, seconds, fraction, tasks in packing_rows(sq):
        print(
            f"{b:>3} {name:>13} {k:>9} {tasks:>5} {seconds * 1e6:8.1f} us "
            f"{fraction:6.2f}"
        )


def fraction_ranges(rows: list[Row]) -> list[object]:
    """Each row's HBM fraction as a range (fadsl/perf/ranges.py): every uncertain
    cost-table entry at x0.5 and x2, the fitted ones refitted."""
    from fadsl.commands import common
    from fadsl.perf import ranges
    from fadsl.perf.kernel import KernelModel

    t = targets.get(TARGET)
    pages = SKV // PAGE
    cases = []
    for r in rows:
        args = argparse.Namespace(
            file=EXAMPLE,
            kernel=None,
            sets=[
                f"kv_splits={r.splits}",
                f"block_kv={r.block_kv}",
                f"v_cores={r.v_cores}",
            ],
            dtype=None,
            shape=f"B={r.b},N={N},Nkv={NKV},Sq=1,D={D},Pages={r.b * pages},"
            f"MaxPages={pages}",
        )
        binding = common.build(args, target=t)
        env = binding.model_env()
        cases.append((KernelModel(binding.kernel, t), env, 2 * r.b * SKV * NKV * D * 2))

    def figures(get: object) -> list[float]:
        moved = get(TARGET)  # type: ignore[operator]
        hbm = moved.rate("hbm_bytes_per_s")
        return [
            nbytes / m.retarget(moved).estimate(env).time_s / hbm
            for m, env, nbytes in cases
        ]

    return ranges.parallel(figures)


def part3(spread: bool = True) -> None:
    print(
        f"3. decode over a paged KV cache (examples/decode_paged.py), MODELLED on "
        f"{TARGET}:\n   N={N}, Nkv={NKV}, Sq=1, D={D}, Skv={SKV} per sequence, pages of "
        f"{PAGE}, fp16; bandwidth = K and V bytes / modelled time"
    )
    print(
        f"{'B':>3} {'kv_splits':>9} {'block_kv':>8} {'v_cores':>7} {'tasks':>5} "
        f"{'cores':>5} "
        f"{'time':>10} {'post':>8} {'HBM C [L, H]':>18}"
    )
    rows = decode_rows()
    spans = fraction_ranges(rows) if spread else None
    for k, r in enumerate(rows):
        hbm = spans[k].text(".2f") if spans else f"{r.fraction:.3f}"  # type: ignore[attr-defined]
        print(
            f"{r.b:>3} {r.splits:>9} {r.block_kv:>8} {r.v_cores:>7} {r.tasks:>5} "
            f"{r.block_dim:>5} "
            f"{r.seconds * 1e6:8.1f} us {r.post_s * 1e6:5.1f} us {hbm:>18}"
        )
    print(
        "   kv_splits=1: no split-KV; block_kv: keys per KV iteration (pages of "
        f"{PAGE}); per batch the rows are: no split, split with one page per "
        "block, split with the block and split count the model ranks first among "
        "those that fit with V read by the cube (v_cores=1), then by the cube or "
        "the two vector cores (v_cores=2, fadsl/lib/paged.py relayed), as tune "
        "chooses; post: the SyncAll and the merge of the parts (included in "
        "time); HBM C [L, H]: the fraction of the HBM bandwidth, central and its "
        "range with every uncertain cost-table entry at x0.5 and x2 "
        "(fadsl/perf/ranges.py); issue 18's target is >= 0.70 with split-KV, issue 27's >= 0.75 at B=1 and "
        ">= 0.9 at B=8"
    )
    print_packing()
    from serving_rows import print_serving  # bench/serving_rows.py (issue 30 item 5)

    print_serving()
    from mla_model import print_mla  # bench/mla_model.py (issue 30 item 3)

    print_mla()
    print_int8()


def print_int8() -> None:
    """The int8 KV-cache rows (issue 30; bench/decode_int8.py)."""
    import decode_int8

    print("   ", end="")
    decode_int8.main()


if __name__ == "__main__":
    part3()
