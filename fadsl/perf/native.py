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
from fadsl.perf.engines import Engines
from fadsl.target import Target

ROUND_KEYS = 1024
"""S2 block 128 x nRatio 8 (T:3066, T:3074)."""
SOFTMAX_OPS = 5
"""Vector ops per S element: Muls, row max, subtract, row sum, cast (K:1308, K:1470,
SoftmaxFlashV2 K:1949-2008); the exp is counted as a transcendental."""
UPDATE_OPS = 2
"""Vector ops per O element per round: multiply by exp(m_old - m_new), add (K:2227-2229)."""
CHUNK_ROWS = 8
"""Rows of S per vector chunk: 1024 / 1024 * 8 (K:1062)."""
BARRIERS_PER_CHUNK = 5
"""PipeBarrier<PIPE_V> per chunk of ProcessVec1 (K:1307, 1351, 1355, 1396, 1443)."""


@dataclass(frozen=True)
class Shape:
    B: int
    Nq: int
    Nkv: int
    S: int
    D: int = 128


@dataclass(frozen=True)
class NativeTime:
    """The modelled native kernel (MODELLED)."""

    time_s: float
    flops: float
    s1_block: int
    pairs: int
    """AI cores used (pairs of vector cores)."""
    rounds_per_core: int
    round_s: float
    """Steady seconds per round of the busiest vector core."""
    kv_hit: float
    hbm_bytes: float
    l2_bytes: float

    @property
    def tflops(self) -> float:
        return self.flops / self.time_s / 1e12


def s1_block(shape: Shape, aiv: int) -> int:
    """T:3061-3065."""
    return 128 if shape.B * shape.Nq * -(-shape.S // 64) > aiv else 64


def estimate(shape: Shape, target: Target) -> NativeTime:
    blk = s1_block(shape, target.aiv_cores)
    total = shape.B * shape.Nq * -(-shape.S // blk)
    core_num = min(total, target.aiv_cores)
    share = -(-total // core_num) * 2  # Q blocks per AI core (T:3241)
    pairs = -(-total // share)
    per_aiv = share // 2
    rounds = per_aiv * -(-shape.S // ROUND_KEYS)
    e = Engines.of(target, pairs)
    # the K/V head each AI core works on: its first Q block's (b, n2)
    per_head = (shape.Nq // shape.Nkv) * -(-shape.S // blk)
    heads = (np.arange(pairs) * share) // per_head
    kv_bytes = 2 * shape.S * shape.D * 2
    hit = l2.hit_fraction(heads, kv_bytes, pairs, target.rate("l2_bytes") / 2)
    ring = _ring(shape, blk, rounds, e, hit)
    flops = 4.0 * shape.B * shape.Nq * shape.S * shape.S * shape.D
    time = e.launch_s + e.task_s + ring[0]
    kv_total = float(kv_bytes * per_aiv * pairs)  # each core reads K/V per Q-block pair
    return NativeTime(
        time_s=time,
        flops=flops,
        s1_block=blk,
        pairs=pairs,
        rounds_per_core=rounds,
        round_s=ring[1],
        kv_hit=hit,
        hbm_bytes=kv_total * (1 - hit),
        l2_bytes=kv_total * hit,
    )


def _ring(
    shape: Shape, blk: int, rounds: int, e: Engines, hit: float
) -> tuple[float, float]:
    """(makespan, steady period) of one AI core: the cube serving both vector cores and
    one vector core's program (the other is symmetric), K:860-896."""
    keys, d = ROUND_KEYS, shape.D
    s_elems = blk * keys  # one vector core's S tile per round
    # cube, for both vector cores: bmm1 = Q K^T, bmm2 = P V (one K/V load into L1)
    bmm1 = _matmul(
        e,
        load=e.read_s(keys * d * 2, hit) + e.read_s(2 * blk * d * 2, 1.0),  # K; Q
        mte1=e.mte1_s(2 * blk * d * 2, 2 * keys * d * 2),
        cube=e.cube_s(2 * 2 * blk * keys * d),
        fix=e.fixpipe_s(2 * s_elems * 4),
    )
    bmm2 = _matmul(
        e,
        load=e.read_s(keys * d * 2, hit) + e.read_s(2 * s_elems * 2, 1.0),  # V; P
        mte1=e.mte1_s(2 * s_elems * 2, 2 * keys * d * 2),
        cube=e.cube_s(2 * 2 * blk * keys * d),
        fix=e.fixpipe_s(2 * blk * d * 4),
    )
    chunks = -(-blk // CHUNK_ROWS)
    vec1 = (
        e.read_s(s_elems * 4, 1.0)
        + e.vector_s(SOFTMAX_OPS * s_elems, s_elems, BARRIERS_PER_CHUNK * chunks)
        + e.write_s(s_elems * 2)
    )
    o_bytes = blk * d * 4
    vec2 = (
        2 * e.read_s(o_bytes, 1.0)
        + e.vector_s(UPDATE_OPS * blk * d, blk, 1)
        + e.write_s(o_bytes)
    )
    f = e.flag_s
    pc = 0.0  # the vector core's program
    cube_free = 0.0
    b1_end: list[float] = []
    b2_end: list[float] = []
    v1_end: list[float] = []
    starts: list[float] = []
    for t in range(rounds + 2):
        pc += e.round_s  # scalar loop control
        if 0 < t <= rounds:
            pc = max(pc, b1_end[t - 1] + f)  # WaitBmm1Result (K:862)
        if t < rounds:  # IterateBmm1 t (K:871); slot t%2 of S free after vec1 t-2
            slot = v1_end[t - 2] if t >= 2 else 0.0
            start = max(pc + f, cube_free, slot)
            cube_free = start + bmm1
            b1_end.append(cube_free)
        if 0 < t <= rounds:  # ProcessVec1 t-1 (K:879)
            pc = max(pc, b1_end[t - 1] + f) + vec1
            v1_end.append(pc)
            starts.append(pc)
        if t > 1:  # WaitBmm2Result (K:885)
            pc = max(pc, b2_end[t - 2] + f)
        if 0 < t <= rounds:  # IterateBmm2 t-1 (K:890)
            start = max(pc + f, cube_free)
            cube_free = start + bmm2
            b2_end.append(cube_free)
        if t > 1:  # ProcessVec2 t-2 (K:894)
            pc = max(pc, b2_end[t - 2] + f) + vec2
    period = (starts[-1] - starts[len(starts) // 2]) / max(
        1, len(starts) - 1 - len(starts) // 2
    )
    return pc, period


def _matmul(e: Engines, load: float, mte1: float, cube: float, fix: float) -> float:
    """One IterateAll: the matmul library pipelines its 128-wide base blocks over the
    cube core's engines, so it takes the busiest engine's time plus one base block of
    the others (the pipe fill), 8 base blocks per 1024 keys."""
    parts = (load, mte1, cube, fix)
    return max(parts) + (sum(parts) - max(parts)) / 8
