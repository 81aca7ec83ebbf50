"""GM traffic shared between the cores: which reads the L2 serves, and the HBM
bandwidth every core's misses share.

- L2: least-recently-used lines of ``LINE`` bytes per GM buffer, ``l2_bytes`` of them
  (the target's L2 size). A read of a line not held comes from HBM and then stays; a
  write (MTE3, Fixpipe) lands in L2 (write-back to HBM is not charged: an
  assumption). Associativity and prefetch are left out.
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


class L2:
    def __init__(self, capacity_bytes: float) -> None:
        self.lines = max(0, int(capacity_bytes // LINE))
        self.held: OrderedDict[tuple[str, int], None] = OrderedDict()

    def read(self, buf: str, offset: int, nbytes: int) -> int:
        """Bytes of the read that miss (come from HBM)."""
        if self.lines == 0:
            return nbytes
        missed = 0
        for line, part in _lines(offset, nbytes):
            key = (buf, line)
            if key in self.held:
                self.held.move_to_end(key)
            else:
                missed += part
                self._add(key)
        return missed

    def write(self, buf: str, offset: int, nbytes: int) -> None:
        if self.lines == 0:
            return
        for line, _ in _lines(offset, nbytes):
            key = (buf, line)
            if key in self.held:
                self.held.move_to_end(key)
            else:
                self._add(key)

    def _add(self, key: tuple[str, int]) -> None:
        self.held[key] = None
        while len(self.held) > self.lines:
            self.held.popitem(last=False)


def _lines(offset: int, nbytes: int) -> list[tuple[int, int]]:
    out = []
    pos, end = offset, offset + max(0, nbytes)
    while pos < end:
        line = pos // LINE
        stop = min(end, (line + 1) * LINE)
        out.append((line, stop - pos))
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
