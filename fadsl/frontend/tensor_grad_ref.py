"""The reference of ``d<tensor>``: gradients of the tensors a score_mod reads.

For one (sequence, query head) with ``dS0 = P * (dP - Delta)`` (the gradient of the
mod's output) and ``S0`` the scores the mod receives (after scale and softcap)::

    d<tensor>[e] += sum over scores of dS0 * (mod(S0; t + h e) - mod(S0; t - h e)) / 2h

a float64 central difference of the mod's eager (numpy) run in each element ``e`` of
the tensor (step 2^-20 relative to |t[e]|): independent of the kernel's forward-mode
derivative (``mod_tensor_grad.py``). It costs two mod runs per element and head, so
it suits the small shapes of tests and ``fadsl run``; above ``BUDGET`` the output is
left unchecked, with a warning.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from fadsl.frontend.mod_tensor_grad import grad_name, grad_tensors
from fadsl.frontend.mods import eager_tensors

BUDGET = 1e9
"""Scores times elements (times the two sides) above which a tensor's reference is
not computed (about 10 s of numpy): ``d<name>`` is then left unchecked, with a
warning on the ``fadsl.reference`` logger naming a smaller shape as the way out."""


def zeros(
    spec: Any, inputs: Mapping[str, np.ndarray], shape: Mapping[str, int]
) -> dict[str, np.ndarray]:
    """A float64 zero gradient per tensor with requires_grad whose reference fits
    ``BUDGET``."""
    scores = shape.get("B", 1) * shape["N"] * shape["Sq"] * shape["Skv"]
    out = {}
    for t in grad_tensors(spec):
        work = 2.0 * scores * inputs[t.name].size
        if work > BUDGET:
            logging.getLogger("fadsl.reference").warning(
                "d%s is not checked: its float64 reference (a central difference "
                "in each of its %d elements) would evaluate the mod at %.1e scores, "
                "over %.0e; check it at a smaller shape",
                t.name,
                inputs[t.name].size,
                work,
                BUDGET,
            )
            continue
        out[grad_name(t.name)] = np.zeros(inputs[t.name].shape, np.float64)
    return out


def add_head(
    spec: Any,
    out: dict[str, np.ndarray],
    inputs: Mapping[str, np.ndarray],
    shape: Mapping[str, int],
    mod: Callable[[np.ndarray], np.ndarray],
    s0: np.ndarray,
    ds0: np.ndarray,
) -> None:
    """Add one head's part to every ``d<tensor>`` of ``out``; ``mod(s)`` runs the
    head's score_mod on numpy scores, reading the tensors bound at the call."""
    live = ds0 != 0.0
    if not live.any():
        return
    s = np.where(live, s0, 0.0)
    arrays = {  # index tensors (document ids) stay integers: they index other tables
        t.name: np.array(inputs[t.name], np.float64 if t.dtype.is_float else np.int64)
        for t in spec.extras
    }
    for t in grad_tensors(spec):
        if grad_name(t.name) not in out:
            continue  # over BUDGET: not checked
        table, grad = arrays[t.name], out[grad_name(t.name)]
        for e in np.ndindex(table.shape):
            grad[e] += _element(mod, s, ds0, arrays, shape, table, e)


def _element(
    mod: Callable[[np.ndarray], np.ndarray],
    s: np.ndarray,
    ds0: np.ndarray,
    arrays: dict[str, np.ndarray],
    shape: Mapping[str, int],
    table: np.ndarray,
    e: tuple[int, ...],
) -> float:
    x = table[e]
    step = np.ldexp(max(abs(float(x)), 1.0), -20)
    sides = []
    for sign in (1.0, -1.0):
        table[e] = x + sign * step
        with eager_tensors(arrays, shape):
            sides.append(np.asarray(mod(s), np.float64))
    table[e] = x
    diff = np.where(ds0 != 0.0, (sides[0] - sides[1]) / (2.0 * step), 0.0)
    return float(np.sum(ds0 * diff))


__all__ = ["add_head", "grad_tensors", "zeros"]
