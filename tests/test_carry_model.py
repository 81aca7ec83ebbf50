"""The cost model and the emitter agree on which kernels carry their ring across
tasks (plan/schedule/carry.py): the model's decision on the grid it reads (before
the passes) is the one the generated kernel shows, for every checked-in example."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from fadsl import target as targets
from fadsl.commands import common
from fadsl.errors import UsageError
from fadsl.perf.kernel import KernelModel

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(
    p.name
    for p in (ROOT / "generated").iterdir()
    if (ROOT / "examples" / f"{p.name}.py").exists()
)


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_model_carries_the_ring_where_the_generated_kernel_does(example: str) -> None:
    code = (ROOT / "generated" / example / f"{example}_kernel.cpp").read_text()
    target = targets.get(code.split(" for ", 1)[1].split(".", 1)[0])
    args = argparse.Namespace(
        file=str(ROOT / "examples" / f"{example}.py"), kernel=None, sets=[],
        dtype=None, shape=None,
    )  # fmt: skip
    binding = common.build(args)
    try:
        model = KernelModel(binding.kernel, target).at(binding.env())
    except UsageError as e:  # a kernel the model does not take (two KV loops)
        pytest.skip(f"no kernel model: {e}")
    assert (model.carried is not None) == ("carried across tasks" in code)


def test_fa2_is_carried() -> None:
    assert "carried across tasks" in (ROOT / "generated" / "fa2" / "fa2_kernel.cpp").read_text()
