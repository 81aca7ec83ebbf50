"""One round (up to 1024 keys) of CANN's FlashAttentionScore forward, instruction by
instruction, charged from the cost table (``perf/costs.py``); ``perf/native.py``
runs the rounds through the kernel's ring.

Read, not copied; K = hicann/ops-transformer
``attention/flash_attention_score/op_kernel/flash_attention_score_s1s2_bn2gs1.h``,
F = mirror-cann/asc-devkit ``impl/adv_api/detail/activation/softmax/membase/v220/
softmax_flashv2_impl.h``, R = the same folder's ``common/softmax_flashv2_impl/
softmax_flashv2_block_reduce_impl.h``:

- ProcessVec1 (K:1249-1510) walks a vector core's S in chunks of 8 rows (K:1062). The
  S chunk i+1 is read into the pong buffer while chunk i computes (the V_MTE2 events
  A/B, K:1284, K:1405-1409), and P of chunk i is written while i+1 computes (MTE3_V,
  K:1460, K:1500): the three overlap, so a chunk costs the slowest of its read, its
  vector work and its write, plus the flag hand-overs between them.
- A chunk's vector work: Muls by the scale (K:1308), SoftmaxFlashV2's basic-block
  update path (F:209-273: the row max as a 4-step tree of BlockReduceMax / Max, R:13-37;
  Copy, Max, Sub and Exp of the running max; Brcb and one Sub per 64 columns, F:57-73;
  Exp; the row sum as the same tree; Mul and Add of the running sum), Cast to fp16
  (K:1470): 34 vector calls and 19 PipeBarriers at 1024 keys. Causal rounds on the
  diagonal add the mask's read and a SelectWithBytesMask (K:1816-1832).
- ProcessVec2 reads P@V and the running O, O = O x exp(m_old - m_new) + P@V (a Brcb,
  one Mul per 64 columns, an Add), writes O back (K:2194-2244).
- The cube's two matmuls run through the matmul library in base blocks of 128 keys
  (S2 base 128 x nRatio 8, T:3066, T:3074): one K (or V) copy, one LoadData per
  operand tile, one Mmad and (bmm1) one Fixpipe per base block and 128 rows; the
  library pipelines its base blocks, so a matmul takes its busiest engine plus one
  base block of the others.
"""

from __future__ import annotations

from fadsl.perf.costs import CostTable

CHUNK_ROWS = 8
"""Rows of S per ProcessVec1 chunk at 1024 keys (K:1062)."""
BASE = 128
"""Keys per matmul base block (T:3066)."""
FLOAT_REPEAT = 64
"""f32 elements per vector repeat (256 B)."""
TRANSCENDENTAL = frozenset({"Exp"})

Call = tuple[str, float]
"""A vector call: (name, repeats)."""


def softmax_chunk(keys: int, masked: bool) -> tuple[list[Call], int]:
    """The vector calls and PipeBarriers of one 8-row chunk of ``keys`` keys."""
    reps = CHUNK_ROWS * keys / FLOAT_REPEAT  # one pass over the chunk
    tree = [("BlockReduce", reps / 8), ("BlockReduce", reps / 64), ("Max", 1.0),
            ("BlockReduce", 1.0)]  # fmt: skip
    subs = [("Sub", reps / max(1, keys // FLOAT_REPEAT))] * max(1, keys // FLOAT_REPEAT)
    calls: list[Call] = [("Muls", reps)]
    barriers = 1
    if masked:
        calls.append(("SelectWithBytesMask", reps))
        barriers += 1
    calls += tree + [("Copy", 1.0), ("Max", 1.0), ("Sub", 1.0), ("Exp", 1.0)]
    calls += [("Brcb", 1.0)] + subs + [("Exp", reps)]
    calls += tree + [("Mul", 1.0), ("Add", 1.0), ("Cast", reps)]
    barriers += 4 + 4 + 2 + 1 + 4 + 2 + 1
    return calls, barriers


def update_calls(blk: int, d: int) -> tuple[list[Call], int]:
    """ProcessVec2's O update on one vector core's ``blk`` rows."""
    reps = blk * d / FLOAT_REPEAT
    cols = max(1, d // FLOAT_REPEAT)
    calls = [("Brcb", max(1.0, blk / 8))] + [("Mul", reps / cols)] * cols
    return calls + [("Add", reps)], 3


def vector_cycles(calls: list[Call], barriers: int, tb: CostTable) -> float:
    """Cycles of the vector pipe: each call its start-up and repeats, each barrier
    the pipeline's drain and itself."""
    per = 256 / (4 * tb["vector_elems_per_cycle"])
    busy = 0.0
    for name, reps in calls:
        cost = per * (tb["vector_transcendental_cost"] if name in TRANSCENDENTAL else 1)
        busy += tb["vector_startup_cycles"] + reps * cost
    drain = tb["vector_latency_cycles"] + tb["pipe_barrier_cycles"]
    issue = (len(calls) + barriers) * tb["scalar_issue_cycles"]
    return max(busy + barriers * drain, issue)


def copy_cycles(nbytes: float, rate: float, tb: CostTable) -> float:
    return tb["copy_startup_cycles"] + tb["burst_cycles"] + nbytes / rate


def read_rate(tb: CostTable, hit: float, active: int) -> float:
    """Bytes per cycle of one core's MTE2 with ``hit`` of the bytes from L2."""
    f = tb.clock
    ddr = min(tb["ddr_bytes_per_cycle"], tb["hbm_bytes_per_s"] / max(1, active) / f)
    return 1.0 / (hit / tb["mte2_bytes_per_cycle"] + (1.0 - hit) / ddr)


def vec1_cycles(blk: int, keys: int, masked: bool, tb: CostTable) -> dict[str, float]:
    """ProcessVec1 of one vector core: per engine busy cycles and the pipelined
    total (``"total"``)."""
    chunks = -(-blk // CHUNK_ROWS)
    elems = CHUNK_ROWS * keys
    read = copy_cycles(elems * 4, tb["mte2_bytes_per_cycle"], tb)
    if masked:
        read += copy_cycles(elems, tb["mte2_bytes_per_cycle"], tb)
    calls, barriers = softmax_chunk(keys, masked)
    vec = vector_cycles(calls, barriers, tb)
    write = copy_cycles(elems * 2, tb["mte3_bytes_per_cycle"], tb)
    step = max(read, vec, write) + 2 * tb["flag_cycles"]
    return {
        "AIV MTE2": chunks * read,
        "VECTOR": chunks * vec,
        "AIV MTE3": chunks * write,
        "total": read + chunks * step + write,
    }


def vec2_cycles(blk: int, d: int, tb: CostTable) -> dict[str, float]:
    o_bytes = blk * d * 4
    read = 2 * copy_cycles(o_bytes, tb["mte2_bytes_per_cycle"], tb)
    calls, barriers = update_calls(blk, d)
    vec = vector_cycles(calls, barriers, tb)
    write = copy_cycles(o_bytes, tb["mte3_bytes_per_cycle"], tb)
    flags = 2 * tb["flag_cycles"]
    return {
        "AIV MTE2": read,
        "VECTOR": vec,
        "AIV MTE3": write,
        "total": read + vec + write + flags,
    }


def cube_cycles(
    blk: int, keys: int, d: int, hit: float, active: int, tb: CostTable
) -> dict[str, float]:
    """Per engine cycles of bmm1 (Q K^T) and bmm2 (P V) for both vector cores' Q
    blocks (2 blk rows: the matmul's IBSHARE operand loads K/V once for both)."""
    rows = 2 * blk
    nb = -(-keys // BASE)
    mc = -(-rows // BASE)
    kv = read_rate(tb, hit, active)
    l2 = tb["mte2_bytes_per_cycle"]
    ld = tb["load_data_startup_cycles"]
    mm = tb["mmad_startup_cycles"]
    fx = tb["fixpipe_startup_cycles"]
    flops = 2.0 * rows * keys * d
    cube = flops / tb["cube_flops_per_cycle"]
    kv_bytes = keys * d * 2
    out = {
        "bmm1 AIC MTE2": nb * copy_cycles(kv_bytes / nb, kv, tb)
        + mc * copy_cycles(rows * d * 2 / mc, l2, tb),
        "bmm1 MTE1": (mc + nb) * ld
        + rows * d * 2 / tb["l1_to_l0a_bytes_per_cycle"]
        + kv_bytes / tb["l1_to_l0b_bytes_per_cycle"],
        "bmm1 CUBE": mc * nb * mm + cube,
        "bmm1 FIXPIPE": mc * nb * fx + rows * keys * 4 / tb["fixpipe_bytes_per_cycle"],
        "bmm2 AIC MTE2": nb * copy_cycles(kv_bytes / nb, kv, tb)
        + mc * nb * copy_cycles(rows * keys * 2 / (mc * nb), l2, tb),
        "bmm2 MTE1": (mc * nb + nb) * ld
        + rows * keys * 2 / tb["l1_to_l0a_bytes_per_cycle"]
        + kv_bytes / tb["l1_to_l0b_bytes_per_cycle"],
        "bmm2 CUBE": mc * nb * mm + cube,
        "bmm2 FIXPIPE": mc * fx + rows * d * 4 / tb["fixpipe_bytes_per_cycle"],
    }
    return out


def matmul_cycles(parts: list[float], blocks: int) -> float:
    """One IterateAll: the busiest engine plus one base block of the others."""
    return max(parts) + (sum(parts) - max(parts)) / max(1, blocks)
