"""$FADSL_SIM_OPT: the optimisation level of `fadsl sim`'s build, part of its cache key."""

from __future__ import annotations

import pytest

from fadsl.backends.sim import toolchain
from fadsl.errors import UsageError


def test_the_level_defaults_to_o1_and_names_the_cache_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = {"main.cpp": b"int main() {}"}
    monkeypatch.delenv("FADSL_SIM_OPT", raising=False)
    assert toolchain.optimization() == "-O1"
    default = toolchain.build_key(files)
    monkeypatch.setenv("FADSL_SIM_OPT", "-O3")
    assert toolchain.optimization() == "-O3"
    assert toolchain.build_key(files) != default


def test_an_unknown_level_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FADSL_SIM_OPT", "-O7")
    with pytest.raises(UsageError, match="FADSL_SIM_OPT='-O7' is not an optimisation"):
        toolchain.optimization()
