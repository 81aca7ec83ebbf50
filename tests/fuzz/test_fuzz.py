"""Fuzzing with hypothesis: DSL programs, textual IR and command lines (issue 7).

Each property of ``fuzz_properties.PROPERTIES`` runs its CI share of examples,
derandomized so that a failure reproduces on every machine; about 1,100 examples in
total. ``scripts/fuzz.py`` runs the same properties at scale with fresh seeds.
"""

from __future__ import annotations

from typing import Any

import pytest
from fuzz_properties import PROPERTIES, Property, Workspace
from fuzzkit import fuzz_settings
from hypothesis import given


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace(str(tmp_path_factory.mktemp("fuzz")))


@pytest.mark.parametrize(
    "prop",
    [
        pytest.param(p, marks=[getattr(pytest.mark, m) for m in p.marks])
        for p in PROPERTIES
    ],
    ids=lambda p: p.name.replace(" ", "_"),
)
def test_property_holds(prop: Property, workspace: Workspace) -> None:
    @fuzz_settings(prop.ci_examples)
    @given(example=prop.strategy(workspace))
    def holds(example: Any) -> None:
        prop.check(workspace, example)

    holds()


def test_ci_runs_at_least_500_examples() -> None:
    assert sum(p.ci_examples for p in PROPERTIES) >= 500
