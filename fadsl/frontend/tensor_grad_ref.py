"""The reference of ``d<tensor>``: gradients of the tensors a score_mod reads.

For one (sequence, query head) with ``dS0 = P * (dP - Delta)`` (the gradient of the
mod's output) and ``S0`` the scores the mod receives (after scale and softcap)::

    d<tensor>[e] += sum over scores of dS0 * (mod(S0; t + h e) - mod(S0; t - h e)) / 2h

a float64 central difference of the mod's eager (numpy) run in each element ``e`` of
the tensor (step 2^-20 relative to |t[e]|): independent of the kernel's forward-mode
derivative (``mod_tensor_grad.py``). It costs two mod runs per element and head, so
it suits the small shapes of tests and ``fadsl run``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from fadsl.frontend.mod_tensor_grad import grad_name, grad_tensors
from fadsl.frontend.mods import eager_tensors


def zeros(spec: Any, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A float64 zero gradient per tensor with requires_grad."""
    return {
        grad_name(t.name): np.zeros(inputs[t.name].shape, np.float64)
        for t in grad_tensors(spec)
    }


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
    arrays = {t.name: np.array(inputs[t.name], np.float64) for t in spec.extras}
    for t in grad_tensors(spec):
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
