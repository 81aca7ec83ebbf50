"""The modelled zeroing and cast of atomic_add sums (fadsl/perf/atomic_phases.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fadsl import target as targets
from fadsl.driver.source import load_source, select
from fadsl.perf.kernel import KernelModel

ROOT = Path(__file__).parent.parent
SHAPE = dict(B=1, N=8, Sq=4096, Skv=4096, D=128)


def _model(example: str, kernel: str, **consts: object) -> tuple[KernelModel, dict]:
    kdef = select(load_source(str(ROOT / "examples" / example)), kernel)
    k = kdef.build(consts)
    env = {**SHAPE, **{n: v for n, v in k.consts if isinstance(v, int)}}
    return KernelModel(k, targets.get("ascend910b2")), env


def test_the_backward_pays_for_zeroing_and_casting_dq() -> None:
    model, env = _model("fa2_bwd.py", "fa2_bwd")
    kt = model.estimate(env)
    dq = 1 * 8 * 4096 * 128
    t = targets.get("ascend910b2")
    # zero 4 B, read 4 B and write 2 B per dq element; never faster than HBM
    floor = 10 * dq / t.rate("hbm_bytes_per_s")
    assert floor <= kt.atomic_phase_s < 4 * floor
    assert kt.time_s > kt.atomic_phase_s + kt.launch_s
    assert kt.lower_bound_s <= kt.time_s


def test_a_kernel_without_atomic_add_pays_nothing() -> None:
    model, env = _model("fa2.py", "fa2", stages=2)
    kt = model.estimate({**env, "stages": 2})
    assert kt.atomic_phase_s == 0.0


@pytest.mark.parametrize("sq", [4096, 300])
def test_the_phases_add_their_bytes_and_time(
    sq: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """10 bytes of HBM traffic per dq element, and their time, on top of the grid's."""
    import fadsl.perf.kernel as kernel_model

    model, env = _model("fa2_bwd.py", "fa2_bwd")
    env = {**env, "Sq": sq}
    kt = model.estimate(env)
    monkeypatch.setattr(kernel_model, "atomic_phases", lambda *a: (0.0, 0))
    bare = model.estimate(env)
    assert kt.hbm_bytes - bare.hbm_bytes == 10 * 8 * sq * 128
    assert kt.time_s - bare.time_s == pytest.approx(kt.atomic_phase_s)
