"""The backward's vector calls per Q step: what the generated fa2_bwd executes under
``fadsl sim --profile`` equals what the cost model charges (issue 27).

``test_counts_kernels.py`` leaves the backward's vector class out: dq's atomic_add
zeroes and casts an f32 sum before and after the grid, and those phases grow with Sq,
as the Q steps do. Here the record's calls are taken between each vector core's first
and last SyncAll (the grid only), at Sq = 256 and 512 over one Skv (the same tasks, so
their set-up and finish cancel in the difference). Before issue 27 the model charged
22 calls a step and the kernel ran 32: the Q tail's row select (``q_idx[:, None] <
Sq``: a Duplicate, RowBroadcast's Brcb and two Adds, CompareScalar, Select) ran in
every block while the model counted it (and the row positions' CreateVecIndex and
Cast) only in the tail block. The kernel now runs the select only there
(``backends/ascendc/vector_guard.py``) and makes the row positions in every block, as
the model now counts them (``plan/schedule/tail_guard.row_mask``: moved into the
branch, they overwrote the softcap backward's live derivative; the softcap sim of
``tests/variants/test_backward_sim.py`` caught it). The model also missed two
Duplicates a step: the pad of lse's column-tail load and the zeroed repeat tail of
``lse_t == -inf``'s CompareScalar. Now 26 executed, 26 modelled.
The cube's calls, the GM copies and the flags match too. The PipeBarriers do not (15
executed, 19 modelled a step): the model puts one before the first op of every
vector step after a hand-over, where the emitter fences only a buffer written since
the last barrier; printed, not asserted.
"""

from __future__ import annotations

from collections import Counter

import pytest

from fadsl.perf import counts

from test_counts_kernels import _bench  # type: ignore[import-not-found]

TARGET = "ascend910b1"
SHAPE = "B=1,N=1,Sq={},Skv=256,D=128"

pytestmark = pytest.mark.cpu_runtime


def _grid_calls(sq: int) -> tuple[Counter, int, dict[str, float]]:
    """(calls per class inside the grid, summed over the cores, a vector core's
    halved as ``test_counts_kernels`` counts them; the model's Q steps; the model's
    calls per step)."""
    from fadsl.backends.sim.record import read_record

    bench = _bench()
    got = bench.run_case("fa2_bwd.py", [], SHAPE.format(sq), TARGET)
    by_core: dict[str, list] = {}
    for r in read_record(got["record"]).rows:
        by_core.setdefault(r.core, []).append(r)
    n: Counter[str] = Counter()
    for core, rows in by_core.items():
        rows.sort(key=lambda r: r.seq)
        syncs = [i for i, r in enumerate(rows) if r.api == "SyncAll"]
        assert len(syncs) >= 2, "the zero and cast phases' SyncAlls"
        for r in rows[syncs[0] + 1 : syncs[-1]]:
            c = counts.class_of(r.api, r.pipe or "", r.src, r.dst)
            if c is not None:
                n[c] += 0.5 if core.startswith("AIV") else 1
    model, env, kt = bench.model_case("fa2_bwd.py", [], SHAPE.format(sq), TARGET)
    return n, kt.iterations, counts.modelled(model, env)


@pytest.mark.slow
def test_the_backwards_vector_calls_per_q_step_equal_the_executed_ones() -> None:
    n1, i1, m1 = _grid_calls(256)
    n2, i2, m2 = _grid_calls(512)
    assert i2 > i1, (i1, i2)
    for c in counts.CLASSES:
        executed = (n2[c] - n1[c]) / (i2 - i1)
        modelled = (m2[c] * i2 - m1[c] * i1) / (i2 - i1)
        print(f"{c}: executed {executed} modelled {modelled} per Q step")
        if c in ("vector", "GM copy", "cross-core flag"):
            assert modelled == pytest.approx(executed, abs=1e-9), (c, executed, modelled)
