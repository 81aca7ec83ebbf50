"""The resource checker: footprints, padding, cores, overflow errors and their hints.

Hand-made BufferPlans pin the arithmetic independently of the planner; the tests at
the end run the real planner on examples/fa2.py and compare with hand computations.
"""

from __future__ import annotations

import os

import pytest
import sympy

from fadsl import target as targets
from fadsl.errors import Loc, ResourceError
from fadsl.ir.expr import CeilDiv, isym
from fadsl.ir.types import DType
from fadsl.plan.resources import check_resources as cr
from fadsl.plan.memory.buffer_plan import Buffer, BufferPlan, Workspace
from fadsl.plan.resources.footprint_eval import batch, best_pair, exact, largest_fit

BQ, BKV, D, B, N, SQ = (isym(n) for n in ("block_q", "block_kv", "D", "B", "N", "Sq"))
SRC = "            s = fd.dot(qt, kt, transpose_b=True) * scale"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _loc(line: int) -> Loc:
    return Loc("fa2.py", line, 16, 22, text=SRC)


def _buf(
    name: str,
    space: str,
    core: str,
    shape: tuple,
    dtype: DType,
    slots: int,
    line: int,
    role: str = "operand",
    bits: int = 0,
) -> Buffer:
    return Buffer(
        name,
        space,
        "VECCALC",
        core,
        tuple(sympy.sympify(d) for d in shape),
        dtype,
        slots,
        "queue",
        role,
        (),
        _loc(line),
        bits,
    )


def fa2_like(stages: int = 2, kernel_type: str = "MIX_AIC_1_2") -> BufferPlan:
    """A split-chip FA2 plan written by hand: rows of the Q block halved on the AIVs."""
    h = BQ / 2
    cube = (
        _buf("qL1", "L1", "AIC", (BQ, D), DType.F16, 1, 63),
        _buf("kL1", "L1", "AIC", (BKV, D), DType.F16, stages, 75),
        _buf("vL1", "L1", "AIC", (BKV, D), DType.F16, stages, 76),
        _buf("aL0", "L0A", "AIC", (BQ, D), DType.F16, 1, 77),
        _buf("bL0", "L0B", "AIC", (BKV, D), DType.F16, 1, 77),
        _buf("cL0", "L0C", "AIC", (BQ, BKV), DType.F32, 1, 77, "result"),
    )
    vec = (
        _buf("sQue", "UB", "AIV", (h, BKV), DType.F32, stages, 77),
        _buf("pBuf", "UB", "AIV", (h, BKV), DType.F16, 1, 88, "cast"),
        _buf("accBuf", "UB", "AIV", (h, D), DType.F32, 1, 68, "state"),
        _buf("mBuf", "UB", "AIV", (h,), DType.F32, 1, 66, "state"),
        _buf("keep", "UB", "AIV", (1, BKV), DType.BOOL, 1, 81, "mask", bits=1),
    )
    ws = (Workspace("sWs", (BQ, BKV), DType.F32, 1, "S (cube -> vector)", _loc(77)),)
    return BufferPlan(
        "fa2", "ascend910b1", kernel_type, cube + vec, ws, B * N * CeilDiv(SQ, BQ), h
    )


def _env(bq: int, bkv: int, d: int = 128, stages: int = 2) -> dict[str, int]:
    return dict(
        B=1, N=8, Sq=4096, Skv=4096, D=d, block_q=bq, block_kv=bkv, stages=stages
    )


@pytest.mark.parametrize("bq, bkv, d", [(128, 128, 128), (64, 256, 64), (96, 48, 80)])
def test_split_footprints_match_hand_computation(bq: int, bkv: int, d: int) -> None:
    t = targets.get("ascend910b1")
    r = cr.check(fa2_like(), t, _env(bq, bkv, d))
    h = bq // 2

    def pad(x: int, a: int) -> int:
        return -(-x // a) * a

    ub = (
        2 * pad(4 * h * bkv, 32)
        + pad(2 * h * bkv, 32)
        + pad(4 * h * d, 32)
        + pad(4 * h, 32)
        + pad(-(-bkv // 8), 32)
    )
    l1 = pad(2 * bq * d, 32) + 2 * 2 * pad(2 * bkv * d, 32)
    assert r.space("UB").used == ub
    assert r.space("L1").used == l1
    assert r.space("L0A").used == pad(2 * bq * d, 512)
    assert r.space("L0B").used == pad(2 * bkv * d, 512)
    assert r.space("L0C").used == pad(4 * bq * bkv, 1024)
    assert r.space("UB").capacity == 196352 and r.space("UB").core == "AIV"
    assert r.workspace_bytes == 4 * bq * bkv


def test_padding_rules_per_space() -> None:
    t = targets.get("ascend910b1")
    odd = tuple(
        _buf(f"x{s}", s, "AIC", (33,), DType.U8, 2, 1)
        for s in ("UB", "L1", "L0A", "L0B", "L0C")
    )
    plan = BufferPlan("k", t.name, "MIX_AIC_1_2", odd, (), sympy.Integer(1), None)
    used = {s.space: s.used for s in cr.check(plan, t, {}).spaces}
    assert used == {"UB": 128, "L1": 128, "L0A": 1024, "L0B": 1024, "L0C": 2048}


def test_bit_mask_takes_one_bit_per_element() -> None:
    t = targets.get("ascend910b1")
    mask = _buf("m", "UB", "AIV", (BQ, BKV), DType.BOOL, 1, 1, "mask", bits=1)
    plan = BufferPlan("k", t.name, "AIV_ONLY", (mask,), (), sympy.Integer(1), None)
    assert cr.check(plan, t, {"block_q": 64, "block_kv": 80}).space("UB").used == 640


def test_cores_mix_vector_and_coupled() -> None:
    b1, b3, a = (targets.get(n) for n in ("ascend910b1", "ascend910b3", "ascend910a"))
    env = _env(128, 128)
    mix = cr.check(fa2_like(), b1, env).cores
    assert (mix.tasks, mix.block_dim, mix.unit, mix.tasks_per_core) == (
        256,
        24,
        "AIC",
        11,
    )
    vec = cr.check(fa2_like(kernel_type="AIV_ONLY"), b3, env).cores
    assert (vec.block_dim, vec.physical, vec.unit) == (40, 40, "AIV")
    coupled = cr.check(fa2_like(kernel_type="AICORE"), a, env).cores
    assert (coupled.block_dim, coupled.unit) == (30, "AI Core")
    few = cr.check(fa2_like(), b1, {**env, "Sq": 256}).cores
    assert (few.tasks, few.block_dim, few.tasks_per_core) == (16, 16, 1)


def test_mix_block_dim_above_physical_aic_is_refused() -> None:
    t = targets.get("ascend910b1")
    plan = fa2_like()
    report = cr.check(plan, t, _env(64, 64), block_dim=32)
    err = cr.explain(report, plan, t, ("block_q", "block_kv"), None)
    assert not report.ok and err is not None
    assert "asks blockDim 32, but ascend910b1 has 24 physical AIC" in err.message
    assert (
        cr.explain(cr.check(plan, t, _env(64, 64), block_dim=24), plan, t, (), None)
        is None
    )


@pytest.mark.smoke
def test_fitting_plan_has_no_error() -> None:
    t = targets.get("ascend910b1")
    plan = fa2_like()
    report = cr.check(plan, t, _env(128, 128))
    assert report.ok and not report.overflowing()
    assert cr.explain(report, plan, t, ("block_q", "block_kv"), None) is None


def test_overflow_error_accumulates_spaces_and_names_file(golden) -> None:  # type: ignore[no-untyped-def]
    t = targets.get("ascend910b1")
    plan = fa2_like()
    report = cr.check(plan, t, _env(512, 512, 256))
    err = cr.explain(report, plan, t, ("block_q", "block_kv"), Loc("fa2.py", 47))
    assert isinstance(err, ResourceError)
    assert err.message.startswith(
        "UB, L1, L0A, L0B, L0C overflow in kernel `fa2` (fa2.py)"
    )
    assert err.loc is not None and err.loc.line == 77  # the biggest UB buffer's line
    golden(err.render() + "\n", "err")


def test_largest_fit_agrees_with_brute_force() -> None:
    t = targets.get("ascend910b1")
    plan = fa2_like()
    env = _env(512, 512, 128)
    limits = [(plan.footprint(s, t.align(s)), t.capacity(s)) for s in ("UB", "L0C")]
    for name in ("block_q", "block_kv"):
        brute = max(
            (
                v
                for v in range(16, 513, 16)
                if all(exact(f, {**env, name: v}) <= c for f, c in limits)
            ),
            default=None,
        )
        assert largest_fit(limits, name, env) == brute


def test_hint_offers_dominant_size_then_stages() -> None:
    t = targets.get("ascend910b1")
    plan = fa2_like()
    report = cr.check(plan, t, _env(128, 512))
    err = cr.explain(report, plan, t, ("block_q", "block_kv"), None)
    assert err is not None and err.hint is not None
    fit = largest_fit(
        [(u.formula, u.capacity) for u in report.overflowing()], "block_kv", report.env
    )
    assert fit is not None and cr.check(plan, t, _env(128, fit)).ok
    assert not cr.check(plan, t, _env(128, fit + 16)).ok
    assert err.hint.startswith(f"block_kv <= {fit} fits with D=128, block_q=128")
    assert "--set stages=1" in err.hint and "both smaller" not in err.hint


def test_hint_offers_a_pair_when_no_single_size_fits() -> None:
    t = targets.get("ascend910b1")
    plan = fa2_like()
    report = cr.check(plan, t, _env(512, 512, 256))
    err = cr.explain(report, plan, t, ("block_q", "block_kv"), None)
    assert err is not None and err.hint is not None
    assert "no multiple of 16 for block_q fits" in err.hint
    q, kv = _pair_values(err.hint.split("both smaller: ")[1])
    assert cr.check(plan, t, _env(q, kv, 256)).ok


def _pair_values(text: str) -> tuple[int, int]:
    values = dict(
        part.split("=") for part in text.split(" fits")[0].replace("--set ", "").split()
    )
    return int(values["block_q"]), int(values["block_kv"])


def test_batch_is_exact_and_falls_back_for_odd_denominators() -> None:
    import numpy as np

    f = 32 * sympy.ceiling(BQ * BKV / 3) + sympy.ceiling(BQ / 8)
    fn = batch({"x": f})
    qs, kvs = np.meshgrid(np.arange(16, 97, 16), np.arange(16, 97, 16), indexing="ij")
    got = fn({"block_q": qs, "block_kv": kvs})["x"]
    want = [
        [exact(f, {"block_q": int(q), "block_kv": int(k)}) for k in kvs[0]]
        for q in qs[:, 0]
    ]
    assert np.array_equal(np.asarray(got), np.array(want))


def test_best_pair_maximises_the_product() -> None:
    t = targets.get("ascend910b1")
    plan = fa2_like()
    caps = {s: t.capacity(s) for s in ("UB", "L1", "L0A", "L0B", "L0C")}
    fn = batch({s: plan.footprint(s, t.align(s)) for s in caps})
    env = _env(512, 512)
    q, kv = best_pair(fn, caps, "block_q", "block_kv", env)  # type: ignore[misc]
    assert cr.check(plan, t, _env(q, kv)).ok
    for dq, dkv in ((16, 0), (0, 16)):
        if (q + dq) * (kv + dkv) > q * kv and q + dq <= 512 and kv + dkv <= 512:
            assert not cr.check(plan, t, _env(q + dq, kv + dkv)).ok


def test_missing_symbol_is_a_usage_error() -> None:
    from fadsl.errors import UsageError

    t = targets.get("ascend910b1")
    with pytest.raises(UsageError, match="needs a value for D"):
        cr.check(
            fa2_like(), t, {"B": 1, "N": 1, "Sq": 64, "block_q": 64, "block_kv": 64}
        )


def test_report_formula_is_symbolic_in_block_sizes() -> None:
    t = targets.get("ascend910b1")
    report = cr.check(fa2_like(), t, _env(128, 128))
    names = {s.name for s in sympy.sympify(report.space("UB").formula).free_symbols}
    assert names == {"block_q", "block_kv", "D"}
    text = cr.formula_text(fa2_like().in_space("L1"), 32)
    assert text == "pad32(2*D*block_q) + 2*pad32(2*D*block_kv) + 2*pad32(2*D*block_kv)"
    assert os.path.basename(report.buffers[0].buffer.loc.file) == "fa2.py"


def test_buffer_sizes_with_ceiling_render_in_errors() -> None:
    t = targets.get("ascend910b1")
    odd = _buf("bits", "UB", "AIV", (sympy.ceiling(BQ / 16) * 1024,), DType.U8, 1, 81)
    plan = BufferPlan("k", t.name, "AIV_ONLY", (odd,), (), sympy.Integer(1), None)
    report = cr.check(plan, t, {"block_q": 4096})
    err = cr.explain(report, plan, t, ("block_q",), None)
    assert err is not None and "u8[1024*ceiling(block_q/16)]" in err.render()
    # 1024 * ceiling(block_q / 16) <= 196,352 B  =>  block_q <= 16 * 191
    assert err.hint == "block_q <= 3056 fits (--set block_q=3056)"


def test_dtypes_the_unit_lacks_are_refused_per_unit() -> None:
    a = targets.get("ascend910a")
    bf = (
        _buf("aL0", "L0A", "AICORE", (BQ, D), DType.BF16, 1, 77),
        _buf("bL0", "L0B", "AICORE", (BKV, D), DType.BF16, 1, 77),
        _buf("pQue", "UB", "AICORE", (BQ, BKV), DType.BF16, 1, 88),
        _buf("pool", "UB", "AICORE", (BQ * 64,), DType.U8, 1, 82, "temp"),
    )
    plan = BufferPlan("fa2", a.name, "AICORE", bf, (), sympy.Integer(1), None)
    report = cr.check(plan, a, _env(64, 64))
    assert [b.name for b in report.unsupported] == ["aL0", "bL0", "pQue"]
    err = cr.explain(report, plan, a, ("block_q",), None)
    assert err is not None and not report.ok
    assert err.message.startswith(
        "the cube of ascend910a does not take bf16: kernel `fa2` (fa2.py) keeps bf16 "
        "in aL0 (L0A, fa2.py:77), bL0 (L0B, fa2.py:77)"
    )
    assert "the vector unit of ascend910a does not take bf16" in err.render()
    b1 = targets.get("ascend910b1")
    assert cr.check(plan, b1, _env(64, 64)).unsupported == ()


def test_hint_confirms_suggestions_with_their_own_plan() -> None:
    t = targets.get("ascend910b1")
    plan = fa2_like()
    extra = _buf("pool", "UB", "AIV", (BKV * 64,), DType.U8, 1, 82, "temp")

    def replan(env: dict) -> BufferPlan:  # the plan at other sizes keeps one more pool
        return BufferPlan(
            plan.kernel,
            plan.target,
            plan.kernel_type,
            plan.buffers + (extra,),
            plan.workspaces,
            plan.tasks,
            plan.rows_per_vector_core,
        )

    report = cr.check(plan, t, _env(128, 512))
    plain = cr.explain(report, plan, t, ("block_q", "block_kv"), None)
    confirmed = cr.explain(report, plan, t, ("block_q", "block_kv"), None, replan)
    assert plain is not None and confirmed is not None
    unconfirmed = _first_fit(plain.hint or "")
    value = _first_fit(confirmed.hint or "")
    assert value < unconfirmed
    assert cr.check(replan({}), t, _env(128, value)).ok
    assert not cr.check(replan({}), t, _env(128, value + 16)).ok


def _first_fit(hint: str) -> int:
    return int(hint.split(" fits")[0].split("<= ")[1])


# ----------------------------------------------------------------------------
# The real planner on examples/fa2.py, against hand computation
# ----------------------------------------------------------------------------


def _pad(x: int, a: int) -> int:
    return -(-x // a) * a


def _hand_fa2(bq: int, bkv: int, d: int, t: targets.Target) -> dict[str, int]:
    """FA2's per-core footprint, by hand, for the planner's documented choices.

    Vector side (UB, every tile padded to a 256 B repeat): a split chip gives each AIV
    h = block_q / 2 rows, a coupled chip keeps all rows. Cube side: K and V queues with
    two stages, Q and P in L1; one L0A/L0B/L0C tile sized for the larger of the dots.
    On a split chip the output update is deferred (plan/schedule/defer.py), so alpha is kept.
    """
    split = t.split
    h = bq // 2 if split else bq
    # row max / row sum over bkv columns (fadsl_tile.h RowReduce): one f32 per row and
    # 256 B column chunk, each chunk's rows padded to a 32 B block, or the BlockReduce
    # levels' widths (bkv / 8 + bkv / 64 + ...), bounded by bkv / 8 + 2 * bkv / 64 a
    # row: block_kv is a symbol to the plan, which leaves room for either (and for a
    # single chunk, which needs none)
    chunks = -(-bkv // 64) * (-(-h // 8) * 8)
    levels = h * (-(-bkv // 8) + 2 * -(-bkv // 64))
    work = 4 * max(chunks, levels)
    ub = sum(
        _pad(x, 256)
        for x in (
            4 * h,  # m: row max, f32
            4 * h,  # l: row sum, f32
            4 * h * d,  # acc: unnormalised output, f32
            max(4 * h * bkv, 4 * h * d),  # one VECIN queue: S, later P @ V (staging)
            max(4 * bkv, 4 * h),  # pooled f32 row / KV-position temporary
            max(4 * bkv, 4 * h, work),  # KV positions, then both reductions' work
            32 * h,  # broadcast scratch: one 32 B block per row
            -(-h // 8),  # row bit mask (fully masked rows)
            max(
                2 * h * bkv, 2 * h * d
            ),  # one VECOUT queue: P for the cube, then O (f16)
        )
    )
    if split:  # alpha kept for the update one iteration late: two 256 B-aligned slots
        ub += 2 * _pad(4 * h, 256)
    l1 = 2 * 2 * _pad(2 * bkv * d, 32) + _pad(2 * bq * d, 32) + _pad(2 * bq * bkv, 32)
    return {"UB": ub, "L1": l1, **_hand_l0(bq, bkv, d, t)}


def _hand_l0(bq: int, bkv: int, d: int, t: targets.Target) -> dict[str, int]:
    """L0 by hand (plan/memory/l0_plan.py): Q resident in L0A next to one P slot when both fit,
    else one slot for the larger of Q and P; a second slot wherever it fits, within the
    M_MTE1 event pool (8 IDs, 3 kept by the AIC's TPipe on arch 2201; 4 on 910A)."""
    q, p = _pad(2 * bq * d, 512), _pad(2 * bq * bkv, 512)
    b, c = _pad(2 * d * bkv, 512), _pad(4 * max(bq * bkv, bq * d), 1024)
    cap = {s: t.capacity(s) for s in ("L0A", "L0B", "L0C")}
    resident = q + p <= cap["L0A"]
    fixed, a = (q, p) if resident else (0, max(q, p))
    da = 2 if fixed + 2 * a <= cap["L0A"] else 1
    db = 2 if 2 * b <= cap["L0B"] else 1
    dc = 2 if 2 * c <= cap["L0C"] else 1
    pool = (8 if t.arch != 1001 else 4) - (3 if t.arch == 2201 else 0)
    while da + db + resident > pool and max(da, db) > 1:
        da, db = (da - 1, db) if da > 1 else (da, db - 1)
    return {"L0A": fixed + da * a, "L0B": db * b, "L0C": dc * c}


@pytest.mark.parametrize(
    "name, bq, bkv, d",
    [
        ("ascend910b1", 128, 128, 128),
        ("ascend910b1", 64, 256, 64),
        ("ascend910b1", 192, 80, 96),
        ("ascend910_9392", 96, 160, 128),
        ("ascend910a", 128, 128, 128),
        ("ascend910a", 64, 256, 64),
        ("ascend910a", 192, 80, 96),
        ("ascend310p3", 32, 128, 64),
        ("ascend310p3", 96, 48, 112),
        ("ascend310p3", 16, 512, 32),
    ],
)
def test_real_plan_matches_hand_computation(
    name: str, bq: int, bkv: int, d: int
) -> None:
    from fadsl.driver.source import load_source, select
    from fadsl.passes import run_pipeline
    from fadsl.plan.memory.plan_buffers import plan as plan_buffers

    t = targets.get(name)
    kdef = select(load_source(os.path.join(ROOT, "examples", "fa2.py")), None)
    kernel = kdef.build({"block_q": bq, "block_kv": bkv})
    env = {**_env(bq, bkv, d), "scale": 0.1}
    plan = plan_buffers(run_pipeline(kernel), t, env)
    report = cr.check(plan, t, env)
    assert {s.space: s.used for s in report.spaces} == _hand_fa2(bq, bkv, d, t)
    assert report.cores.tasks == 8 * -(-4096 // bq)
    # S (f32) in a ring of three slots (plan/schedule/ring.py DEFAULT_DEPTH); with the deferred
    # update (plan/schedule/defer.py) P @ V (f32) and P (fp16) get three slots too
    want_ws = 3 * (4 * bq * bkv + 4 * bq * d + 2 * bq * bkv) if t.split else 0
    assert report.workspace_bytes == want_ws
