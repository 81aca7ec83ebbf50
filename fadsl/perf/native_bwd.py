"""A reference schedule of CANN's own FlashAttentionScoreGrad (the backward), in
fadsl's model, charged from the one cost table (``perf/costs.py``) as the forward
reference (``perf/native.py``) is. MODELLED: no published backward speed was found to
fit or hold it out against (searched: pto-isa, tilelang-ascend, torch_npu pages).

Read, not copied, from hicann/ops-transformer ``attention/flash_attention_score_grad``
(T = op_host/flash_attention_score_grad_tiling_s1s2_bn2gs1s2_sab.cpp, K =
op_kernel/flash_attention_score_grad_s1s2_bn2gs1s2_sab.h, E = op_kernel/
flash_attention_score_grad.cpp, doc = docs/FAG算子设计介绍.md), fp16, BNSD, D = 128,
no pse, no dropout, S1 = S2 >= 2048 (the cases bench/backward_model.py runs):

- template: "SameAB" (UB splits S1 and S2, cores split S2), taken for fp16 whenever
  S1 or S2 >= 1024 (doc §5 table; T:109-150 accepts every non-fp32 BNSD input);
- CV block (one cube/vector round): s1CvInner x s2CvInner = 512 x 512 (T:72-74,
  T:1210-1211); the re-sizing for S2 < 2048 (T:1105-1144) does not apply here;
- core split: the valid (s1o, s2o) blocks, in (b, n2, g, s2o, s1o) order (K:845-885),
  are dealt 24 at a time, one per cube core (CalcValidBlock, K:888-1028); causal skips
  the blocks above the diagonal (s1oIdxUp, K:917-940), a diagonal block is masked;
- per AI core a 3-slot ring (dbParams[taskId % 3], 2 workspace slots): the cube issues
  MM1 of block t (S = Q K^T and dP = dO V^T into GM, K:1046-1352), the vector cores
  compute block t-1, then the cube runs dQ += dS K, dK += dS^T Q, dV += P^T dO of t-1
  with atomic adds into f32 GM (ComputeMMDqkv, K:1529-2090; order K:2688-2760);
- vector (ComputeVec, K:3578-3699): chunks of 32 rows x 256 keys (baseMN 128 x 64
  = 8192 elements, T:25-26, T:1253; VEC_S2_LEN 256, K:420), half the chunks per
  vector core; per chunk SubGrapA (K:3149-3444: read S, Muls by the scale, the mask
  on the diagonal, SimpleSoftMax against the forward's max/sum, Cast, write P) and
  SubGrapB (K:3445-3577: read Delta and dP, Sub per 64 columns, Mul by P, Cast,
  write dS); each subgraph's read -> compute -> write is flag-serialised, and the
  two subgraphs share MTE3_MTE2 events so the next read overlaps the other's compute;
- one launch (E:140-190): pre (zero the f32 dQ/dK/dV workspace), Sfmg (Delta =
  rowsum(dO * O) into GM), SyncAll, the main loop, SyncAll, post (cast the f32
  workspace to fp16 dq, dk, dv).

The matmuls are charged as the forward reference charges its own (``native_round``:
base blocks of 128 x 128, T:1300-1302; the busiest engine plus one base block of
the others).
"""

from __future__ import annotations

from dataclasses import dataclass

from fadsl.perf import native_round as nr
from fadsl.perf.costs import CostTable, cost_table
from fadsl.perf.engines import Engines
from fadsl.target import Target

CV_BLOCK = 512
"""s1CvInner = s2CvInner (T:72-74, T:1210-1211)."""
CHUNK_ROWS, CHUNK_KEYS = 32, 256
"""One vector chunk: 8192 / VEC_S2_LEN rows x VEC_S2_LEN keys (T:1253, K:420)."""


@dataclass(frozen=True)
class Shape:
    B: int
    N: int
    S: int
    D: int = 128
    causal: bool = False


@dataclass(frozen=True)
class NativeBwdTime:
    """The modelled native backward (MODELLED)."""

    time_s: float
    blocks: int
    """Valid 512 x 512 CV blocks."""
    cores: int
    tasks_per_core: int
    """Blocks of the busiest cube core."""
    block_s: tuple[float, float, float]
    """Seconds of one block's MM1 (cube), vector work (one vector core) and
    dQ/dK/dV matmuls (cube)."""
    pre_post_s: float
    """Pre (zero, Delta) and post (cast) phases, with their SyncAlls."""


def valid_blocks(shape: Shape) -> list[bool]:
    """Per valid CV block in dealing order, whether it is on the diagonal (masked)."""
    outer = -(-shape.S // CV_BLOCK)
    out: list[bool] = []
    for _ in range(shape.B * shape.N):
        for s2o in range(outer):
            first = s2o if shape.causal else 0
            out += [shape.causal and s1o == s2o for s1o in range(first, outer)]
    return out


def estimate(shape: Shape, target: Target) -> NativeBwdTime:
    tb = cost_table(target)
    blocks = valid_blocks(shape)
    cores = min(target.aic_cores, len(blocks))
    e = Engines.of(target, cores)
    hit = _input_hit(shape, len(blocks))
    mm1, dqkv = (c / tb.clock for c in cube_cycles(shape.D, hit, cores, tb))
    vec = {m: vec_cycles(m, tb) / tb.clock for m in (False, True)}
    ends = [
        _ring([vec[m] for m in blocks[c::cores]], mm1, dqkv, e) for c in range(cores)
    ]
    busiest = max(range(cores), key=lambda c: ends[c] + c * e.dispatch_s)
    start = e.launch_s - e.dispatch_s * max(0, cores - 1) + busiest * e.dispatch_s
    phases = pre_post_s(shape, tb) + 2 * e.flag_s  # two SyncAll (assumed one hand-over)
    return NativeBwdTime(
        time_s=start + e.task_s + phases + ends[busiest],
        blocks=len(blocks),
        cores=cores,
        tasks_per_core=len(blocks[busiest::cores]),
        block_s=(mm1, vec[False], dqkv),
        pre_post_s=phases,
    )


def _ring(vec: list[float], mm1: float, dqkv: float, e: Engines) -> float:
    """One AI core's blocks through Process (K:2688-2760): the cube issues MM1 t,
    then (after the vector cores' block t-1 and the hand-over) the dQ/dK/dV matmuls
    of t-1; the vector cores run block t-1 once MM1 t-1 was handed over."""
    f = e.flag_s
    cube = vec_free = 0.0
    mm1_end: list[float] = []
    for t in range(len(vec) + 1):
        if t < len(vec):
            cube += e.round_s + mm1
            mm1_end.append(cube)
        if t >= 1:
            vec_free = max(vec_free, mm1_end[t - 1] + f) + vec[t - 1]
            cube = max(cube, vec_free + f) + dqkv
    return cube


def _input_hit(shape: Shape, blocks: int) -> float:
    """Fraction of the Q, K, V, dO reads L2 serves: each block's matmuls read 7
    tiles of 512 x D (MM1: Q, K, dO, V; then K, Q, dO), the HBM reads each input
    once (all four fit in the L2 at these shapes)."""
    tile = CV_BLOCK * shape.D * 2
    total = 7.0 * tile * blocks
    compulsory = 4.0 * shape.B * shape.N * shape.S * shape.D * 2
    return max(0.0, 1.0 - compulsory / total) if total else 0.0


def matmul(
    m: int, n: int, k: int, rate_a: float, rate_b: float, tb: CostTable
) -> float:
    """Cycles of one m x n x k fp16 matmul through the matmul library (f32 out to
    GM), as ``native_round.cube_cycles`` charges the forward's."""
    base = nr.BASE
    mb, nb, kb = -(-m // base), -(-n // base), -(-k // base)
    a_bytes, b_bytes = m * k * 2, n * k * 2
    parts = [
        mb * nr.copy_cycles(a_bytes / mb, rate_a, tb)
        + nb * nr.copy_cycles(b_bytes / nb, rate_b, tb),
        (mb + nb) * kb * tb["load_data_startup_cycles"]
        + a_bytes / tb["l1_to_l0a_bytes_per_cycle"]
        + b_bytes / tb["l1_to_l0b_bytes_per_cycle"],
        mb * nb * kb * tb["mmad_startup_cycles"]
        + 2.0 * m * n * k / tb["cube_flops_per_cycle"],
        mb * nb * tb["fixpipe_startup_cycles"]
        + m * n * 4 / tb["fixpipe_bytes_per_cycle"],
    ]
    return nr.matmul_cycles(parts, mb * nb)


def cube_cycles(d: int, hit: float, active: int, tb: CostTable) -> tuple[float, float]:
    """(MM1, dQ/dK/dV) cycles of one 512 x 512 block: MM1 = S = Q K^T and
    dP = dO V^T (K:1333-1348); then dQ = dS K, dK = dS^T Q, dV = P^T dO (dS and P
    from the GM workspace, ComputeMMDqkv K:1529-2090)."""
    inp = nr.read_rate(tb, hit, active)
    ws = tb["mte2_bytes_per_cycle"]
    blk = CV_BLOCK
    mm1 = 2 * matmul(blk, blk, d, inp, inp, tb)
    dqkv = 3 * matmul(blk, d, blk, ws, inp, tb)
    return mm1, dqkv


def chunk_calls(masked: bool) -> tuple[list[nr.Call], int, list[nr.Call], int]:
    """(calls, PipeBarriers) of SubGrapA and of SubGrapB on one 32 x 256 chunk."""
    reps = CHUNK_ROWS * CHUNK_KEYS / nr.FLOAT_REPEAT
    cols = CHUNK_KEYS // nr.FLOAT_REPEAT
    per_col = reps / cols
    a: list[nr.Call] = [("Muls", reps)]
    a_bar = 2
    if masked:
        a.append(("Select", reps))
        a_bar += 1
    # SimpleSoftMax against the forward's max and sum, per 64 columns (Sub, Exp, Div)
    a += [("Sub", per_col)] * cols + [("Exp", per_col)] * cols
    a += [("Div", per_col)] * cols + [("Cast", reps)]
    a_bar += 3 + 1
    b: list[nr.Call] = [("Sub", per_col)] * cols + [("Mul", reps), ("Cast", reps)]
    return a, a_bar, b, 4


def vec_cycles(masked: bool, tb: CostTable) -> float:
    """One vector core's ComputeVec of one block: its half of the chunks; per chunk
    the vector pipe runs A then B while MTE2 reads the next operands and MTE3
    writes P and dS, except that the next chunk's S read waits for this chunk's P
    write (the MTE3_MTE2 event A)."""
    chunks = (CV_BLOCK // CHUNK_ROWS) * (CV_BLOCK // CHUNK_KEYS) // 2
    elems = CHUNK_ROWS * CHUNK_KEYS
    l2 = tb["mte2_bytes_per_cycle"]
    read_s = nr.copy_cycles(elems * 4, l2, tb) + nr.copy_cycles(CHUNK_ROWS * 64, l2, tb)
    if masked:
        read_s += nr.copy_cycles(elems, l2, tb)
    read_dp = nr.copy_cycles(elems * 4, l2, tb) + nr.copy_cycles(
        CHUNK_ROWS * 32, l2, tb
    )
    write = nr.copy_cycles(elems * 2, tb["mte3_bytes_per_cycle"], tb)
    a, a_bar, b, b_bar = chunk_calls(masked)
    va, vb = nr.vector_cycles(a, a_bar, tb), nr.vector_cycles(b, b_bar, tb)
    flag = tb["flag_cycles"]
    period = max(
        va + vb + 2 * flag,
        va + write + read_s + 3 * flag,
        read_s + read_dp,
        2 * write,
    )
    return read_s + chunks * period + write


def pre_post_s(shape: Shape, tb: CostTable) -> float:
    """Pre (zero the f32 dQ/dK/dV workspace), Sfmg (read dO and O, write Delta in
    8 floats per row) and post (read the f32 workspace, write fp16 dq, dk, dv): bytes
    at the chip's HBM bandwidth (an assumption: the workspace may partly stay in L2)."""
    elems = shape.B * shape.N * shape.S * shape.D
    rows = shape.B * shape.N * shape.S
    pre = 3 * elems * 4 + 2 * elems * 2 + rows * 32
    post = 3 * elems * 4 + 3 * elems * 2
    return (pre + post) / tb["hbm_bytes_per_s"]


def useful_flops(shape: Shape) -> float:
    """Five matmuls of 2 D FLOPs per visible (query, key) pair."""
    s = shape.S
    pairs = s * (s + 1) / 2 if shape.causal else s * s
    return 10.0 * shape.D * pairs * shape.B * shape.N
