"""Fixtures for IR tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from irutil import build_fa2

from fadsl.ir.nodes import Kernel


@pytest.fixture
def fa2() -> Callable[..., Kernel]:
    """``fa2(causal=True, dtype="f16")``: the FA2 example's IR."""
    return build_fa2
