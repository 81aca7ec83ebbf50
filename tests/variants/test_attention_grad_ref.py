"""The float64 gradient reference checks itself against finite differences of the forward.

``attention_grad_ref.reference`` computes dq, dk, dv by the analytic formulas; here each
element is compared with a central difference of ``sum(o * do)``, where ``o`` is the
forward reference (``attention_ref.reference``, an independent code path) in float64 at
a tiny shape. Every variant the backward supports is covered.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fadsl as fd
from fadsl.frontend import attention_grad_ref, attention_ref
from fadsl.frontend.attention_inputs import make_inputs

slopes = fd.tensor(
    "slopes", "N", init=lambda shape, rng: -(2.0 ** (-np.arange(1, shape[0] + 1.0)))
)
doc = fd.tensor(
    "doc", "Skv", dtype="i32", init=lambda shape, rng: np.array([0, 0, 1, 1, 1, 2])
)


def alibi(score, b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return score + slopes[h] * (q_idx - kv_idx)


def bent(score, b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return fd.where(q_idx >= kv_idx, score * 0.5 + 1.0, fd.tanh(score) * 2.0)


def same_doc(b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return doc[q_idx] == doc[kv_idx]


VARIANTS: dict[str, dict[str, Any]] = {
    "plain": {},
    "causal": dict(causal=True),
    "window": dict(window=(1, 1)),
    "softcap": dict(softcap=1.5, scale=0.9),
    "alibi": dict(score_mod=alibi, causal=True),
    "score_mod_where": dict(score_mod=bent),
    "document_mask": dict(mask_mod=same_doc),
    "dropout": dict(dropout_p=0.3),
    "bsh": dict(layout="BSH", causal=True),
    "tnd": dict(layout="TND", causal=True, softcap=2.0),
}
# Sq != Skv (bottom-right alignment leaves a fully masked row when causal), GQA
SHAPE = {"B": 2, "N": 4, "Nkv": 2, "Sq": 6, "Skv": 5, "D": 3}


def _inputs(spec: Any, shape: dict[str, int]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    data: dict[str, np.ndarray] = dict(
        make_inputs(spec, dict(shape), {"block_q": 4, "block_kv": 4}, rng)
    )
    qs = _dims(spec.layout, shape, "N", "Sq")
    ks = _dims(spec.layout, shape, "Nkv", "Skv")
    for name, dims in (("q", qs), ("k", ks), ("v", ks), ("do", qs)):
        data[name] = rng.standard_normal(dims)
    return data


def _dims(layout: str, s: dict[str, int], n: str, seq: str) -> tuple[int, ...]:
    return {
        "BNSD": (s["B"], s[n], s[seq], s["D"]),
        "BSND": (s["B"], s[seq], s[n], s["D"]),
        "BSH": (s["B"], s[seq], s[n] * s["D"]),
        "TND": (s[seq], s[n], s["D"]),
    }[layout]


def _loss(spec: Any, data: dict[str, np.ndarray], shape: dict[str, int]) -> float:
    o = attention_ref.reference(spec, data, shape, {})["o"]
    return float(np.sum(o * data["do"]))


def _finite_difference(
    spec: Any, data: dict[str, np.ndarray], shape: dict[str, int], name: str
) -> np.ndarray:
    grad = np.zeros(data[name].shape)
    step = 1e-6
    for pos in np.ndindex(*data[name].shape):
        plus, minus = data[name].copy(), data[name].copy()
        plus[pos] += step
        minus[pos] -= step
        hi = _loss(spec, dict(data, **{name: plus}), shape)
        lo = _loss(spec, dict(data, **{name: minus}), shape)
        grad[pos] = (hi - lo) / (2 * step)
    return grad


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_analytic_gradients_equal_finite_differences(variant: str) -> None:
    spec = fd.attention(name=variant, **VARIANTS[variant]).spec
    shape = dict(SHAPE, Skv=6) if spec.mask_mod is not None else dict(SHAPE)
    data = _inputs(spec, shape)
    with np.errstate(all="ignore"):
        grads = attention_grad_ref.reference(spec, data, shape, {})
    for name, grad in (("q", "dq"), ("k", "dk"), ("v", "dv")):
        fd_grad = _finite_difference(spec, data, shape, name)
        assert np.abs(fd_grad).max() > 1e-3, f"{grad}: the loss does not depend on it"
        np.testing.assert_allclose(grads[grad], fd_grad, rtol=1e-5, atol=1e-7)


def test_fully_masked_rows_have_zero_gradient() -> None:
    spec = fd.attention(name="causal", causal=True).spec
    data = _inputs(spec, SHAPE)
    grads = attention_grad_ref.reference(spec, data, SHAPE, {})
    # Sq = 6 > Skv = 5: row 0 sees no key (bottom-right alignment)
    assert (grads["dq"][:, :, 0] == 0).all()
    assert np.isfinite(grads["dq"]).all() and np.isfinite(grads["dk"]).all()
