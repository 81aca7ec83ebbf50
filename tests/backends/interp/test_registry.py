"""Every IR op class has interpreter semantics (house style 3.4)."""

from __future__ import annotations

import pytest

import fadsl.backends.interp.interpreter  # noqa: F401  (registers every impl)
from fadsl.backends.interp import impls
from fadsl.errors import InternalError
from fadsl.ir import nodes as ir


def test_every_op_class_has_an_impl() -> None:
    missing = impls.missing_impls()
    assert missing == [], f"op classes without an @impl: {', '.join(missing)}"


def test_the_check_notices_a_missing_impl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(impls.IMPLS, ir.Tanh)
    assert impls.missing_impls() == ["Tanh"]


def test_registering_twice_is_refused() -> None:
    with pytest.raises(InternalError, match="a second interpreter impl for Exp"):
        impls.impl(ir.Exp)(lambda op, fr: None)


def test_registry_is_keyed_by_class() -> None:
    assert all(isinstance(cls, type) and issubclass(cls, ir.Op) for cls in impls.IMPLS)
    assert set(impls.IMPLS) == set(ir.all_op_classes())
