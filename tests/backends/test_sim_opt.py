"""$FADSL_SIM_OPT: the optimisation level of `fadsl sim`'s build, part of its cache key."""

from __future__ import annotations

import pytest

from fadsl.backends.sim import run
from fadsl.errors import UsageError


def test_the_level_defaults_to_release_and_names_the_cache_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = {"main.cpp": b"int main() {}"}
    monkeypatch.delenv("FADSL_SIM_OPT", raising=False)
    assert run.optimization() == "-O3"
    release = run._key(files)
    monkeypatch.setenv("FADSL_SIM_OPT", "-O1")
    assert run.optimization() == "-O1"
    assert run._key(files) != release


def test_an_unknown_level_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FADSL_SIM_OPT", "-O7")
    with pytest.raises(UsageError, match="FADSL_SIM_OPT='-O7' is not an optimisation"):
        run.optimization()
