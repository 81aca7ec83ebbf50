"""A reference schedule of CANN's own FlashAttentionScore forward, in fadsl's model.

The configuration is read from hicann/ops-transformer (read only; cited by file and
line, T = attention/flash_attention_score/op_host/flash_attention_score_tiling_general.cpp,
K = attention/flash_attention_score/op_kernel/flash_attention_score_s1s2_bn2gs1.h), for
template FlashAttentionScoreS1s2Bn2gs1 (capable when S2 > 1024: T:3045, T:3215-3221;
the SameAB template, tried first (T:4430-4431), declines D = 128 fp16: T:3495-3524),
non-causal, fp16, D <= 128, layout BNSD:

- S1 block 64, or 128 when B*N1*G*ceil(S1/64) exceeds the vector cores (T:3061-3065);
  S2 block 128 x nRatio 8 = 1024 keys per cube/vector round (T:3066, T:3074);
- tasks: totalSize = B*N2*G*ceil(S1/s1block) Q blocks (T:1862-1869); with L1 reuse
  (fp16, D <= 128, no mask: T:3100-3117) the two vector cores of an AI core take one
  share of 2*ceil(totalSize/coreNum) blocks (T:3236-3243, K:772-775) and alternate its Q
  blocks (K:833), while the cube loads each K/V block into L1 once for both (the
  matmul's IBSHARE B operand, K:99, K:111);
- each vector core runs a 3-deep ring (extraInfo[3], K:783) over all its rounds, Q block
  after Q block without draining (taskId runs on, K:860-896): wait for bmm1 t-1
  (K:862), issue bmm1 t (K:871), softmax t-1 (K:879), wait for bmm2 t-2 (K:885), issue
  bmm2 t-1 (K:890), update t-2 (K:894);
- two GM workspace slots each for S (mm1Res), P (stage1Res), P@V (mm2Res) and the
  running O (vec2Res) (K:222-225, K:441-463);
- softmax t (ProcessVec1): per 8-row chunk (K:1062-1063) S is read from GM, scaled
  (Muls, K:1308), SoftmaxFlashV2 (K:1949-2008: row max, subtract, exp, row sum), cast
  to fp16 (K:1470) and P written to GM (K:1478-1495), with PipeBarriers (K:1307-1462);
- update t (ProcessVec2): P@V and the running O are read from GM (K:2194, K:2220),
  O = O * exp(m_old - m_new) + P@V (K:2227-2229), and O is written back to GM (K:2244),
  or divided by the row sum and stored on the last round (K:2233-2234).

Engine times come from ``perf/engines.py`` with the target's rates; the kernel is the
launch overhead plus one task overhead plus the busiest AI core's ring.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fadsl.perf import l2
from fadsl.perf import native_round as nr
from fadsl.perf.costs import cost_table
from fadsl.perf.engines import Engines
from fadsl.target import Target

ROUND_KEYS = 1024
"""S2 block 128 x nRatio 8 (T:3066, T:3074)."""


@dataclass(frozen=True)
class Shape:
    B: int
    Nq: int
    Nkv: int
    S: int
    D: int = 128
    causal: bool = False
    """Causal (sparse_mode 2/3 with S1 = S2: SparseEnum::CAUSAL, T:651-671)."""


@dataclass(frozen=True)
class NativeTime:
    """The modelled native kernel (MODELLED)."""

    time_s: float
    flops: float
    """Useful FLOPs: 4 D per (query, key) pair attended (S (S + 1) / 2 pairs per head
    when causal)."""
    s1_block: int
    pairs: int
    """AI cores used (pairs of vector cores)."""
    rounds_per_core: int
    """Rounds of the busiest vector core."""
    round_s: float
    """Steady seconds per full round of the busiest vector core."""
    kv_hit: float
    hbm_bytes: float
    l2_bytes: float

    @property
    def tflops(self) -> float:
        return self.flops / self.time_s / 1e12


Round = tuple[int, bool]
"""One cube/vector round: (keys, whether the causal mask is applied)."""


def s1_block(shape: Shape, aiv: int) -> int:
    """T:3061-3065."""
    return 128 if shape.B * shape.Nq * -(-shape.S // 64) > aiv else 64


def useful_flops(shape: Shape) -> float:
    pairs = shape.S * (shape.S + 1) / 2 if shape.causal else shape.S * shape.S
    return 4.0 * shape.B * shape.Nq * shape.D * pairs


def estimate(shape: Shape, target: Target) -> NativeTime:
    blk = s1_block(shape, target.aiv_cores)
    shares = core_shares(shape, blk, target.aiv_cores)
    pairs = len(shares)
    e = Engines.of(target, pairs)
    cores = [core_rounds(shape, blk, first, stop) for first, stop in shares]
    hit = _kv_hit(shape, blk, shares, cores, target)
    makespan: dict[tuple[Round, ...], tuple[float, float]] = {}
    for rounds in cores:
        if rounds not in makespan:
            makespan[rounds] = _ring(shape, blk, rounds, e, hit)
    busiest = max(makespan, key=lambda r: makespan[r][0])
    keys = float(sum(k for rounds in cores for k, _ in rounds))
    kv_total = keys * shape.D * 2 * 2  # K and V, once per round for both vector cores
    return NativeTime(
        time_s=e.launch_s + e.task_s + makespan[busiest][0],
        flops=useful_flops(shape),
        s1_block=blk,
        pairs=pairs,
        rounds_per_core=len(busiest),
        round_s=makespan[busiest][1],
        kv_hit=hit,
        hbm_bytes=kv_total * (1 - hit),
        l2_bytes=kv_total * hit,
    )


def core_shares(shape: Shape, blk: int, aiv: int) -> list[tuple[int, int]]:
    """Per AI core used, its Q blocks [first, stop), numbered over (b, n, s1).

    Without a mask, totalSize = B*N*ceil(S1/blk) blocks over coreNum = min(totalSize,
    AIVs) (T:1862-1869); with L1 reuse an AI core takes 2*ceil(totalSize/coreNum)
    consecutive blocks (T:3236-3243, K:772-775). Causal: the tiling balances the
    work instead (T:2337-2360): block i of a head costs ceil((i+1)*blk/128) blocks of
    128 keys (T:2093-2107), and a binary search finds the smallest per-core load
    for which a greedy cut into coreNum ranges exists (T:2229-2290, T:2114-2152); the
    two vector cores of AI core c share the ranges 2c and 2c+1 (K:650-680)."""
    per_head = -(-shape.S // blk)
    total = shape.B * shape.Nq * per_head
    core_num = min(total, aiv)
    if not shape.causal:
        share = -(-total // core_num) * 2
        return [(f, min(total, f + share)) for f in range(0, total, share)]
    loads = [min(-(-shape.S // 128), -(-(i + 1) * blk // 128)) for i in range(per_head)]
    starts = _balanced_starts(loads, total, core_num)
    bounds = starts + [total]
    out = [(bounds[c], bounds[min(c + 2, core_num)]) for c in range(0, core_num, 2)]
    return [(a, b) for a, b in out if a < b]


def _balanced_starts(loads: list[int], total: int, cores: int) -> list[int]:
    """T:2229-2290: the first block of each of ``cores`` ranges, for the smallest
    maximum load a greedy cut achieves (every head repeats ``loads``)."""
    if total <= cores:
        return list(range(total)) + [total] * (cores - total)
    whole = sum(loads) * (total // len(loads))
    low = whole // cores - 1
    high = -(-whole // cores) + max(loads)
    best = [total] * cores
    while low + 1 < high:
        mid = low + (high - low) // 2
        cut = _greedy_cut(loads, total, mid, cores) if mid * cores >= whole else None
        if cut is None:
            low = mid
        else:
            high, best = mid, cut
    return best


def _greedy_cut(
    loads: list[int], total: int, most: int, cores: int
) -> list[int] | None:
    """T:2114-2152: each range first takes whole heads (as many as fit in ``most``),
    then blocks one by one until the next would exceed ``most``."""
    heads = most // sum(loads)
    each = heads * sum(loads)
    skip = heads * len(loads)
    starts = [0]
    load = each
    i = skip
    while i < total:
        nxt = loads[i % len(loads)]
        if load + nxt > most:
            if len(starts) >= cores:
                return None
            starts.append(i)  # a new range: whole heads from i, then on from i + skip
            load = each
            i += skip
            continue
        load += nxt
        i += 1
    return starts + [total] * (cores - len(starts))


def core_rounds(shape: Shape, blk: int, first: int, stop: int) -> tuple[Round, ...]:
    """The rounds of one vector core of the AI core that owns Q blocks [first, stop)
    (numbered over b, n, s1): per head, the blocks go in pairs, one per vector core
    (K:833), and both cores run the rounds of the pair's later block -- with causal
    the earlier block's range is extended to it (useNext, K:703-707, K:740-745); an
    unpaired last block runs alone (K:818-822). Each block's keys go in rounds of
    1024 (the last one shorter, K:853); with causal the round reaching the diagonal
    applies the mask (K:1305, K:1365-1369; earlier rounds need none, K:1686-1690)."""
    per_head = -(-shape.S // blk)
    out: list[Round] = []
    g = first
    while g < stop:
        head_end = min(stop, (g // per_head + 1) * per_head)
        while g < head_end:
            later = min(g + 1, head_end - 1)
            end = (
                min((later % per_head + 1) * blk, shape.S) if shape.causal else shape.S
            )
            n = -(-end // ROUND_KEYS)
            out += [(ROUND_KEYS, False)] * (n - 1)
            out.append((end - ROUND_KEYS * (n - 1), shape.causal))
            g += 2
        g = head_end
    return tuple(out)


def _kv_hit(
    shape: Shape,
    blk: int,
    shares: list[tuple[int, int]],
    cores: list[tuple[Round, ...]],
    t: Target,
) -> float:
    """Fraction of the K/V bytes read that L2 serves. A core reads its head's K/V once
    per pair of Q blocks, as far as its rounds reach; the cores on one K/V head (the
    head of their first Q block) share it, so only the furthest reach of each head
    comes from HBM (perf/l2.py); every other read hits."""
    per_head = (shape.Nq // shape.Nkv) * -(-shape.S // blk)
    heads = np.array([first for first, _ in shares]) // per_head
    reach = np.array([_reach(shape, blk, a, b) for a, b in shares], dtype=np.float64)
    reach *= shape.D * 4
    read = float(sum(k for r in cores for k, _ in r)) * shape.D * 4
    if read <= 0:
        return 0.0
    missed = 1 - l2.hit_fraction(heads, reach, len(cores), t.rate("l2_bytes") / 2)
    return 1 - missed * float(reach.sum()) / read


def _reach(shape: Shape, blk: int, first: int, stop: int) -> int:
    """Keys from the start of K/V that the rounds of Q blocks [first, stop) reach (the
    end of their longest pair, as in ``core_rounds``)."""
    if not shape.causal or first >= stop:
        return shape.S if first < stop else 0
    per_head = -(-shape.S // blk)
    return max(
        min(
            shape.S,
            (min(g + 1, (g // per_head + 1) * per_head - 1, stop - 1) % per_head + 1)
            * blk,
        )
        for g in range(first, stop)
    )


def _ring(
    shape: Shape, blk: int, rounds: tuple[Round, ...], e: Engines, hit: float
) -> tuple[float, float]:
    """(makespan, steady period) of one AI core: the cube serving both vector cores and
    one vector core's program (the other is symmetric), K:860-896."""
    times = {r: _round_times(shape, blk, r, e, hit) for r in set(rounds)}
    f = e.flag_s
    count = len(rounds)
    pc = 0.0  # the vector core's program
    cube_free = 0.0
    b1_end: list[float] = []
    b2_end: list[float] = []
    v1_end: list[float] = []
    starts: list[float] = []
    for t in range(count + 2):
        pc += e.round_s  # scalar loop control
        if 0 < t <= count:
            pc = max(pc, b1_end[t - 1] + f)  # WaitBmm1Result (K:862)
        if t < count:  # IterateBmm1 t (K:871); slot t%2 of S free after vec1 t-2
            slot = v1_end[t - 2] if t >= 2 else 0.0
            start = max(pc + f, cube_free, slot)
            cube_free = start + times[rounds[t]][0]
            b1_end.append(cube_free)
        if 0 < t <= count:  # ProcessVec1 t-1 (K:879)
            pc = max(pc, b1_end[t - 1] + f) + times[rounds[t - 1]][2]
            v1_end.append(pc)
            starts.append(pc)
        if t > 1:  # WaitBmm2Result (K:885)
            pc = max(pc, b2_end[t - 2] + f)
        if 0 < t <= count:  # IterateBmm2 t-1 (K:890)
            start = max(pc + f, cube_free)
            cube_free = start + times[rounds[t - 1]][1]
            b2_end.append(cube_free)
        if t > 1:  # ProcessVec2 t-2 (K:894)
            pc = max(pc, b2_end[t - 2] + f) + times[rounds[t - 2]][3]
    half = len(starts) // 2
    period = (starts[-1] - starts[half]) / max(1, len(starts) - 1 - half)
    return pc, period


def _round_times(
    shape: Shape, blk: int, r: Round, e: Engines, hit: float
) -> tuple[float, float, float, float]:
    """(bmm1, bmm2, softmax, update) seconds of one round of ``keys`` keys
    (``perf/native_round.py``: instruction by instruction, from the cost table)."""
    tb = cost_table(e.target)
    keys, masked = r
    f = tb.clock
    cube = nr.cube_cycles(blk, keys, shape.D, hit, e.active, tb)
    blocks = -(-keys // nr.BASE)
    bmm = [
        nr.matmul_cycles([cube[f"{m} {k}"] for k in _CUBE], blocks) / f
        for m in ("bmm1", "bmm2")
    ]
    vec1 = nr.vec1_cycles(blk, keys, masked, tb)["total"] / f
    vec2 = nr.vec2_cycles(blk, shape.D, tb)["total"] / f
    return bmm[0], bmm[1], vec1, vec2


_CUBE = ("AIC MTE2", "MTE1", "CUBE", "FIXPIPE")


def round_engines(
    shape: Shape, blk: int, r: Round, e: Engines, hit: float
) -> dict[str, float]:
    """Seconds of each engine's part of one round, keyed ``"<step> <engine>"``: the
    cube's steps (bmm1 = Q K^T, bmm2 = P V, for both vector cores) and one vector
    core's (vec1 = softmax, vec2 = update)."""
    tb = cost_table(e.target)
    keys, masked = r
    out = nr.cube_cycles(blk, keys, shape.D, hit, e.active, tb)
    for step, parts in (
        ("vec1", nr.vec1_cycles(blk, keys, masked, tb)),
        ("vec2", nr.vec2_cycles(blk, shape.D, tb)),
    ):
        for k in ("AIV MTE2", "VECTOR", "AIV MTE3"):
            out[f"{step} {k}"] = parts[k]
    return {k: v / tb.clock for k, v in out.items()}
