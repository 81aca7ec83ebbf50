"""The timer's L2 on strided reads (issue 26): one KV head's rows of a paged cache
[Pages, 128, Nkv, D] are 128 bursts of D x 2 bytes, Nkv x D x 2 bytes apart. The L2
holds what the bursts touch, sector by sector, not the contiguous range of their total
size; a short burst that misses brings a whole sector from HBM."""

from __future__ import annotations

import pytest

from fadsl import target as targets
from fadsl.perf.costs import cost_table
from fadsl.perf.timer.engine import time_record
from fadsl.perf.timer.instr import Instr, from_row
from fadsl.perf.timer.memory import L2, SECTOR

T = cost_table(targets.get("ascend910b2"))
ROWS, D = 128, 128
ROW = D * 2  # bytes of one key row of one head (fp16)


def _page_read(core: str, seq: int, head: int, nkv: int, block: int = 0) -> Instr:
    """One head's 128 rows of page 0, as the record gives a strided Nd2Nz copy."""
    stride = nkv * ROW
    return Instr(
        core, seq, "MTE2", "DataCopy", block=block, nbytes=ROWS * ROW, src="GM",
        dst="L1", gm="k_cache", offset=head * ROW, blocks=ROWS,
        span=(ROWS - 1) * stride + ROW,
    )  # fmt: skip


def test_every_head_of_a_page_fetches_the_page_once_from_hbm() -> None:
    """8 KV heads read one page one after another: together they bring the page (128
    rows x 8 heads x 256 B) from HBM once. Taken as contiguous 32 KiB ranges 256 B
    apart (the timer before issue 26's fix), the 8 reads overlapped in one 64 KiB
    line and 32 KiB came from HBM."""
    nkv = 8
    rows = [_page_read("AIC0", h, h, nkv) for h in range(nkv)]
    tm = time_record(rows, T)
    assert tm.hbm_bytes == ROWS * nkv * ROW


def test_a_strided_burst_shorter_than_a_sector_costs_the_sector() -> None:
    l2 = L2(T["l2_bytes"])
    span = (ROWS - 1) * 8 * ROW + ROW
    assert l2.read("k", 0, ROWS * ROW, ROWS, span) == ROWS * SECTOR  # 2 x its bytes
    # the neighbouring head's rows share those sectors: all hits
    assert l2.read("k", ROW, ROWS * ROW, ROWS, span) == 0
    # the next pair of heads lies in other sectors
    assert l2.read("k", 2 * ROW, ROWS * ROW, ROWS, span) == ROWS * SECTOR


def test_a_contiguous_read_is_charged_its_bytes() -> None:
    l2 = L2(T["l2_bytes"])
    assert l2.read("q", 100, 1000) == 1000
    assert l2.read("q", 100, 1000) == 0
    # the first read filled sectors 0-2 (bytes 0-1535) whole: 3-7 miss
    assert l2.read("q", 0, 4096) == 4096 - 3 * SECTOR
    with_nkv1 = (ROWS - 1) * ROW + ROW  # Nkv = 1: the rows are contiguous
    assert l2.read("k", 0, ROWS * ROW, ROWS, with_nkv1) == ROWS * ROW


def test_the_span_comes_from_the_records_gmend() -> None:
    row = {"core": "AIC0", "seq": "3", "pipe": "MTE2", "api": "DataCopy",
           "bytes": "32768", "blocks": "128", "gm": "2", "gmoff": "512",
           "gmend": str(512 + 127 * 2048 + 256)}  # fmt: skip
    i = from_row(row)
    assert (i.offset, i.span, i.blocks) == (512, 127 * 2048 + 256, 128)
    assert from_row({**row, "gmend": "-"}).span is None


@pytest.mark.parametrize("nkv", [2, 8])
def test_a_head_group_per_core_shares_the_page_through_l2(nkv: int) -> None:
    """Cores reading different heads of one page at once: still one HBM fetch of the
    page (the heads interleave in its sectors)."""
    rows = [_page_read(f"AIC{h}", 0, h, nkv, block=h) for h in range(nkv)]
    assert time_record(rows, T).hbm_bytes == ROWS * nkv * ROW


def test_a_strided_write_lands_its_bursts_only() -> None:
    """A strided write (a UB tile stored into every other row) makes its own rows hit,
    not the rows between them."""
    l2 = L2(T["l2_bytes"])
    l2.write("ws", 0, 64 * SECTOR, 64, 63 * 2 * SECTOR + SECTOR)  # rows 0, 2, 4, ...
    assert l2.read("ws", 0, SECTOR) == 0
    assert l2.read("ws", SECTOR, SECTOR) == SECTOR
    assert l2.read("ws", 126 * SECTOR, SECTOR) == 0  # the last burst


def test_a_strided_read_that_misses_takes_its_sectors_time_not_less() -> None:
    """Every burst of a head's page read misses: the copy reads twice its bytes from
    HBM and is timed for them (the L2 serves none of it)."""
    one = time_record([_page_read("AIC0", 0, 0, 8)], T)
    flat = Instr("AIC0", 0, "MTE2", "DataCopy", nbytes=ROWS * ROW, src="GM", dst="L1",
                 gm="k_cache", offset=0, blocks=ROWS)  # fmt: skip
    contiguous = time_record([flat], T)
    assert one.hbm_bytes == 2 * contiguous.hbm_bytes == 2 * ROWS * ROW
    # the extra 32 KiB at the core's HBM rate, nothing served from L2 on top
    extra = ROWS * ROW / T["ddr_bytes_per_cycle"]
    assert one.span - contiguous.span == pytest.approx(extra)
    l2 = L2(T["l2_bytes"])
    span = (ROWS - 1) * 8 * ROW + ROW
    assert l2.read_parts("k", 0, ROWS * ROW, ROWS, span) == (ROWS * ROW, ROWS * SECTOR)
