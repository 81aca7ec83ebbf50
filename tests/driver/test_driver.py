"""The compile driver: ``bind`` and ``lower`` are what every command and the API run.

A Binding is frozen and carries the target; ``lower`` runs the passes once (the IR the
interpreter runs), plans and proves fit only with a target, and keeps an overflow as
``Lowered.error`` instead of raising it, so ``check`` can print its table first.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fadsl import target as targets
from fadsl.driver.binding import Binding, bind
from fadsl.driver.lower import lower
from fadsl.driver.source import load_source, select
from fadsl.errors import ResourceError, UsageError
from fadsl.passes import run_pipeline

ROOT = Path(__file__).resolve().parents[2]
FA2 = select(load_source(str(ROOT / "examples" / "fa2.py")), None)
SHAPE = dict(B=1, N=8, Sq=4096, Skv=4096, D=128)


def _bind(consts: dict | None = None, target: str | None = "ascend910b1") -> Binding:
    sets = {k: (v, None) for k, v in (consts or {}).items()}
    chip = targets.get(target) if target else None
    return bind(FA2, lambda kernel, defaults: dict(SHAPE), sets, None, chip)


def test_a_binding_is_frozen_and_holds_shape_consts_scalars_dtype_target() -> None:
    b = _bind({"block_q": 64})
    assert b.shape == SHAPE and b.consts["block_q"] == 64
    assert b.scalars == {"scale": 128**-0.5}
    assert b.dtype is not None and b.dtype.value == "f16"
    assert b.target is not None and b.target.name == "ascend910b1"
    with pytest.raises(dataclasses.FrozenInstanceError):
        b.shape = {}  # type: ignore[misc]


def test_without_a_target_lower_runs_the_passes_only() -> None:
    b = _bind(target=None)
    low = lower(b)
    assert low.ir == run_pipeline(b.kernel)
    assert low.lowering is None and low.report is None and not low.fits
    with pytest.raises(ValueError, match="no buffer plan"):
        low.plan  # noqa: B018


@pytest.mark.smoke
def test_a_kernel_that_fits_is_planned_and_proved() -> None:
    low = lower(_bind({"block_q": 64, "block_kv": 64}))
    assert low.fits and low.error is None and low.report is not None
    low.require_fit()
    assert low.plan.kernel_type == "MIX_AIC_1_2"
    again = low.check_at(low.binding.env())
    assert [s.used for s in again.spaces] == [s.used for s in low.report.spaces]


def test_an_overflow_is_kept_not_raised_until_required() -> None:
    low = lower(_bind({"block_q": 512, "block_kv": 512}))
    assert not low.fits and isinstance(low.error, ResourceError)
    assert "overflow in kernel `fa2` (fa2.py)" in low.error.message
    with pytest.raises(ResourceError, match="overflow in kernel `fa2`"):
        low.require_fit()


def test_other_sizes_are_planned_from_the_same_ir() -> None:
    low = lower(_bind({"block_q": 64, "block_kv": 64}), plan=False)
    assert low.lowering is None
    small = low.check_at({**low.binding.env(), "block_q": 64})
    big = low.check_at({**low.binding.env(), "block_q": 512, "block_kv": 512})
    assert small.ok and not big.ok


def test_api_spelling_names_consts_not_flags() -> None:
    from fadsl.driver.binding import API, CLI

    def shape(kernel: object, defaults: object) -> dict:
        return dict(SHAPE)

    for spelling, text in ((CLI, "--set block_q=0"), (API, "consts['block_q']=0")):
        with pytest.raises(UsageError) as err:
            bind(FA2, shape, {"block_q": (0, None)}, spelling=spelling)
        assert err.value.message.startswith(f"{text}: `block_q` must be a positive")
