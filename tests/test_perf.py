"""The engine model's L2, the target table's sources, and the calibrated reference
schedule of CANN's native FlashAttention forward (fadsl/perf/, docs/cost-model.md)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest

from fadsl import target as targets
from fadsl.driver.source import load_source, select
from fadsl.perf import calibration, l2, native
from fadsl.perf.kernel import KernelModel

ROOT = Path(__file__).parent.parent


def _fa2(tname: str = "ascend910b2", **rates: float) -> KernelModel:
    kdef = select(load_source(str(ROOT / "examples/fa2.py")), "fa2")
    t = targets.get(tname)
    if rates:
        new = dict(t.rates)
        for k, v in rates.items():
            new[k] = dataclasses.replace(new[k], value=v)
        t = dataclasses.replace(t, rates=new)
    return KernelModel(kdef.build({"stages": 2}), t)


ENV = dict(B=1, N=1, Sq=256, Skv=1024, D=128, block_q=128, block_kv=128, stages=2)
K_BYTES = 1024 * 128 * 2


def test_two_cores_on_one_head_read_k_once_from_hbm() -> None:
    kt = _fa2().estimate(ENV)
    assert kt.tasks == 2 and kt.block_dim == 2  # two Q blocks of one head, two cores
    assert kt.hits == {"k": 0.5, "v": 0.5}  # the second core's K/V reads hit L2
    q_and_o = 2 * 256 * 128 * 2
    assert kt.hbm_bytes == q_and_o + 2 * K_BYTES  # K and V from HBM once each
    assert kt.hbm_bytes == kt.hbm_lower_bound
    no_l2 = _fa2(l2_bytes=1.0).estimate(ENV)  # an L2 too small to hold anything
    assert no_l2.hits == {"k": 0.0, "v": 0.0}
    assert no_l2.hbm_bytes == q_and_o + 2 * 2 * K_BYTES
    # HBM reads are slower than L2 hits (here hidden behind the round's chain)
    aic = "AIC MTE2"
    assert no_l2.engine_iteration_s[aic] > kt.engine_iteration_s[aic]
    assert no_l2.time_s >= kt.time_s


def test_heads_do_not_share_and_lru_evicts() -> None:
    kt = _fa2().estimate({**ENV, "N": 2})
    assert kt.hits == {"k": 0.5, "v": 0.5}  # 4 tasks, 2 heads: each head read once
    keys = np.array([0, 1, 0, 1, 0, 1])  # two heads, one core: rounds of one task
    assert l2.hit_fraction(keys, 10.0, 1, 20.0) == pytest.approx(4 / 6)
    assert l2.hit_fraction(keys, 10.0, 1, 10.0) == 0.0  # room for one key: thrash
    assert l2.hit_fraction(np.array([0, 0, 1, 1]), 10.0, 2, 10.0) == 0.5


SOURCE_MARK = re.compile(
    r"^(UNVERIFIED|assumption|default:|fitted by bench/kernel_model\.py)"
    r"|\.(md|ini|cpp|h|hpp|cc|yaml|py)\b|anandtech|derived"
)


@pytest.mark.parametrize("name", targets.builtin_names())
def test_every_rate_has_a_source_or_an_unverified_mark(name: str) -> None:
    t = targets.get(name)
    for rate in t.rates.values():
        assert SOURCE_MARK.search(rate.source), (name, rate.name, rate.source)
    for fitted in calibration.FITTED:
        if t.split:
            assert t.rates[fitted].source.startswith("fitted by bench/kernel_model.py")


def test_a_target_file_without_the_new_rates_still_loads(tmp_path: Path) -> None:
    data = json.loads((ROOT / "fadsl/targets/ascend910b1.json").read_text())
    for k in targets.OPTIONAL_RATES:
        del data["rates"][k]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    t = targets.load_file(str(path))
    assert t.rate("ddr_bytes_per_cycle") == t.rate("mte2_bytes_per_cycle")
    assert t.rate("l2_bytes") == 0 and t.rates["l2_bytes"].is_default
    kt = KernelModel(_fa2().kernel, t).estimate(ENV)
    assert kt.hits == {"k": 0.0, "v": 0.0} and kt.time_s > 0


def test_native_configuration_follows_the_cann_tiling() -> None:
    b2 = targets.get("ascend910b2")
    # B*N*ceil(S1/64) = 64 > 48 vector cores: S1 block 128 (tiling_general.cpp:3061-3065)
    assert native.s1_block(native.Shape(1, 1, 1, 4096), 48) == 128
    assert native.s1_block(native.Shape(1, 1, 1, 2048), 48) == 64
    four = native.estimate(native.Shape(1, 1, 1, 4096), b2)
    # 32 Q blocks, 2 per AI core (one per vector core): 16 AI cores, 4 rounds each
    assert (four.pairs, four.rounds_per_core) == (16, 4)
    big = native.estimate(native.Shape(1, 1, 1, 32768), b2)
    assert (big.pairs, big.rounds_per_core) == (22, 6 * 32)
    # 256 blocks: 21 AI cores read K/V 6 times, the last one twice; one pass from HBM
    assert big.kv_hit == pytest.approx(1 - 1 / (21 * 6 + 2))


def test_the_calibration_meets_its_targets_but_16k() -> None:
    values = calibration.fit()
    for k, v in values.items():  # the target file carries the fitted values
        assert targets.get("ascend910b2").rate(k) == pytest.approx(v, rel=1e-3)
    for row in calibration.calibration(values):
        if row.fitted:
            assert abs(row.error) < 0.5
        elif row.shape.S != 16384:
            assert row.ok, row
    # the published 910B2 times alone: 8K is on the line through 4K and 32K (time =
    # fixed + per-round x rounds), 16K is 18% above it -- no such model meets 15% there
    line = {s: us / on - 1 for s, _, us, on in calibration.published_line()}
    assert abs(line[8192]) < 0.03 and line[16384] > 0.15


def test_causal_reads_of_uneven_length_never_beat_the_compulsory_traffic() -> None:
    kdef = select(load_source(str(ROOT / "examples/fa2.py")), "fa2")
    model = KernelModel(
        kdef.build({"stages": 2, "causal": True}), targets.get("ascend910b2")
    )
    env = {**ENV, "N": 8, "Sq": 4096, "Skv": 4096}
    kt = model.estimate(env)
    # Q block i reads i + 1 K blocks; the longest reader of a head brings all of K
    assert kt.hbm_bytes == kt.hbm_lower_bound
    # tasks of one key in one round: the longest read is the HBM part
    assert l2.hit_fraction(np.array([0, 0]), np.array([1.0, 3.0]), 2, 100.0) == 0.25
