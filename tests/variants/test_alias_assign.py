"""``y = x`` right after ``x`` is made binds a second name; ``x`` stays defined."""

from __future__ import annotations

import numpy as np

import fadsl as fd
from fadsl.backends.interp import interpret


@fd.kernel
def alias(x: fd.In("S", "D", dtype=fd.f32), y: fd.Out("S", "D", dtype=fd.f32)):
    for i in fd.grid(1):
        xt = fd.load(x[fd.ds(0, 16), :], pad=0)
        e = fd.exp(xt)
        kept = e
        fd.store(y[fd.ds(0, 16), :], e + kept)


def test_an_alias_of_the_last_value_leaves_the_first_name_defined() -> None:
    x = np.linspace(-1, 1, 16 * 4, dtype=np.float32).reshape(16, 4)
    out = interpret(alias.build(), {"S": 16, "D": 4}, {"x": x}).outputs["y"]
    np.testing.assert_allclose(out, 2 * np.exp(x), rtol=1e-6)
