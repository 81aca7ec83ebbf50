"""GM traffic shared between the cores: which reads the L2 serves, and the HBM
bandwidth every core's misses share.

- L2: least-recently-used lines of ``LINE`` bytes per GM buffer, ``l2_bytes`` of them
  (the target's L2 size), each held sector by sector (``SECTOR`` bytes). A read of a
  sector not held comes from HBM and then stays; a write (MTE3, Fixpipe) lands in L2
  (write-back to HBM is not charged: an assumption). A strided read (``blocks`` bursts
  spread over ``span`` bytes, e.g. one KV head's rows of a paged cache [pages, 128,
  Nkv, D]) touches only its bursts' sectors, and each burst that misses brings whole
  sectors from HBM (a 256-byte row costs a 512-byte sector); a contiguous read is
  charged the bytes it misses (its end sectors are shared with the neighbouring reads
  of the same stream). Associativity and prefetch are left out.
- HBM: the chip's ``hbm_bytes_per_s`` shared by the transfers in flight, in time bins
  of ``BIN`` cycles: a miss fills the bins from its start at its core's own rate
  (``ddr_bytes_per_cycle``) as far as each bin's remaining capacity allows. The cores
  are timed in about the order of their issue, so earlier transfers get bandwidth
  first.
"""

from __future__ import annotations

from collections import OrderedDict

from fadsl.perf.costs import CostTable

LINE = 64 * 1024
"""Bytes per modelled L2 line (a coarse granule: an assumption; lines of 512 B would
only cost time here)."""
BIN = 256.0
"""Cycles per bandwidth bin."""


SECTOR = 512
"""Bytes the L2 fills from HBM at once (an assumption: no public source gives the
910B's L2 line; 512 B is the GM alignment of the cube's fractal copies)."""


class L2:
    def __init__(self, capacity_bytes: float) -> None:
        self.lines = max(0, int(capacity_bytes // LINE))
        self.held: OrderedDict[tuple[str, int], int] = OrderedDict()
        """Per held line, the bit mask of its sectors held."""

    def read(
        self, buf: str, offset: int, nbytes: int, blocks: int = 1, span: int = 0
    ) -> int:
        """Bytes the read brings from HBM: ``nbytes`` in ``blocks`` bursts over
        ``span`` bytes from ``offset`` (contiguous when ``span`` is no more than
        ``nbytes``)."""
        return self.read_parts(buf, offset, nbytes, blocks, span)[1]

    def read_parts(
        self, buf: str, offset: int, nbytes: int, blocks: int = 1, span: int = 0
    ) -> tuple[int, int]:
        """(bytes of the read that miss, bytes that come from HBM for them): equal
        for a contiguous read; a strided read's short bursts bring whole sectors."""
        if self.lines == 0:
            return nbytes, nbytes
        bursts = _bursts(offset, nbytes, blocks, span)
        missed = fetched = 0
        for start, size in bursts:
            for line, lo, hi, head, tail in _sectors(start, size):
                want = _mask(lo, hi)
                have = self._touch((buf, line))
                lack = want & ~have
                whole = bin(lack).count("1") * SECTOR
                part = whole - head * (lack >> lo & 1) - tail * (lack >> (hi - 1) & 1)
                missed += part
                fetched += whole if len(bursts) > 1 else part
                self.held[(buf, line)] = have | want
                self._evict()
        return missed, fetched

    def write(
        self, buf: str, offset: int, nbytes: int, blocks: int = 1, span: int = 0
    ) -> None:
        """The sectors a write (its bursts, as ``read``) touches land in L2."""
        if self.lines == 0:
            return
        for start, size in _bursts(offset, nbytes, blocks, span):
            for line, lo, hi, _, _ in _sectors(start, size):
                key = (buf, line)
                self.held[key] = self._touch(key) | _mask(lo, hi)
                self._evict()

    def _touch(self, key: tuple[str, int]) -> int:
        if key in self.held:
            self.held.move_to_end(key)
            return self.held[key]
        return 0

    def _evict(self) -> None:
        while len(self.held) > self.lines:
            self.held.popitem(last=False)


def _bursts(offset: int, nbytes: int, blocks: int, span: int) -> list[tuple[int, int]]:
    """(start, bytes) of each burst: ``blocks`` equal bursts at an equal stride filling
    ``span`` bytes, or one burst when the read is contiguous."""
    if blocks <= 1 or span <= nbytes or nbytes <= 0:
        return [(offset, max(0, nbytes))]
    size = nbytes // blocks
    stride = (span - size) // (blocks - 1)
    return [(offset + b * stride, size) for b in range(blocks)]


def _mask(lo: int, hi: int) -> int:
    """Sectors ``lo`` .. ``hi`` - 1 of a line."""
    return ((1 << hi) - 1) ^ ((1 << lo) - 1)


def _sectors(offset: int, nbytes: int) -> list[tuple[int, int, int, int, int]]:
    """Per line the range touches: (line, first sector, end sector, bytes of the first
    sector before the range, bytes of the last sector after it)."""
    out = []
    pos, end = offset, offset + max(0, nbytes)
    while pos < end:
        line = pos // LINE
        stop = min(end, (line + 1) * LINE)
        a, b = pos - line * LINE, stop - line * LINE
        lo, hi = a // SECTOR, -(-b // SECTOR)
        out.append((line, lo, hi, a - lo * SECTOR, hi * SECTOR - b))
        pos = stop
    return out


class Hbm:
    """The chip's HBM bandwidth in bins of ``BIN`` cycles."""

    def __init__(self, table: CostTable) -> None:
        self.per_bin = table["hbm_bytes_per_s"] / table.clock * BIN
        self.core_rate = table["ddr_bytes_per_cycle"]
        self.used: dict[int, float] = {}

    def transfer(self, start: float, nbytes: float) -> float:
        """Cycles a miss of ``nbytes`` starting at ``start`` takes."""
        if nbytes <= 0:
            return 0.0
        left, now = float(nbytes), start
        while left > 1e-9:
            b = int(now // BIN)
            edge = (b + 1) * BIN
            room = self.per_bin - self.used.get(b, 0.0)
            can = min(room, (edge - now) * self.core_rate)
            if can <= 1e-9:
                now = edge
                continue
            take = min(can, left)
            self.used[b] = self.used.get(b, 0.0) + take
            left -= take
            now += take * (edge - now) / can  # at this bin's share of the rate
        return now - start
