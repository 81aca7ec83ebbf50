"""Gradients of captured tensors (issue 29, item 3): ``requires_grad=True``.

The attention-gym builtins written as there - ALiBi with the slope from ``h``, ALiBi
slopes as a tensor, a relative-position table, T5 buckets, document offsets - plus a
per-head scale, a scalar chain (``exp(logit_scale[h])``) and block reads (a full
``[N, Sq, Skv]`` bias, a ``[Skv]`` key bias): ``fd.attention_backward`` in the
interpreter (fp32) against central finite differences of the float64 forward
reference of ``sum(o * do)``, in q, k, v and in every captured tensor with
``requires_grad``. In fp16 / bf16 the outputs pass the tolerance rule against the
float64 reference (``tensor_grad_ref.py``, an independent central difference of the
mod). None of this exists on main: ``fd.tensor`` takes no ``requires_grad`` there.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from attkit import assert_passes, bind, run

import fadsl as fd
from fadsl.backends.interp import interpret
from fadsl.errors import BackendError, KernelSyntaxError, UsageError
from fadsl.frontend.attention_ref import reference as forward_reference
from fadsl.io import runio
from fadsl.passes import run_pipeline


def _normal(s: tuple[int, ...], g: np.random.Generator) -> np.ndarray:
    return g.standard_normal(s)


NB, MAX_DIST = 32, 128
slopes = fd.tensor("slopes", "N", init=lambda s, g: g.uniform(0.1, 0.5, s),
                   requires_grad=True)  # fmt: skip
alpha = fd.tensor("alpha", "N", init=lambda s, g: g.uniform(0.5, 1.5, s),
                  requires_grad=True)  # fmt: skip
logit_scale = fd.tensor("logit_scale", "N", init=_normal, requires_grad=True)
rel = fd.tensor("rel", "Sq + Skv - 1", init=_normal, requires_grad=True)
t5 = fd.tensor("t5", "N", NB, init=_normal, requires_grad=True)
full_bias = fd.tensor("full_bias", "N", "Sq", "Skv", init=_normal, requires_grad=True)
key_bias = fd.tensor("key_bias", "Skv", init=_normal, requires_grad=True)
document_id = fd.tensor(
    "document_id", "Sq", dtype="i32", init=lambda s, g: np.arange(s[0]) * 3 // s[0]
)
offsets = fd.tensor("offsets", 4, dtype="i32", init=lambda s, g: np.arange(4) * 7)
doc_bias = fd.tensor("doc_bias", 4, init=lambda s, g: g.uniform(0.5, 1.5, s),
                     requires_grad=True)  # fmt: skip


def alibi_from_h(score, b, h, q_idx, kv_idx):
    return score + fd.exp2(-8.0 * (h + 1) / fd.shape.N) * (kv_idx - q_idx)


def alibi_tensor(score, b, h, q_idx, kv_idx):
    return score + slopes[h] * (kv_idx - q_idx)


def head_scale(score, b, h, q_idx, kv_idx):
    return score * alpha[h]


def exp_scale(score, b, h, q_idx, kv_idx):
    return score * fd.exp(logit_scale[h]) * 0.5


def rel_bias(score, b, h, q_idx, kv_idx):
    return score + rel[q_idx - kv_idx + fd.shape.Skv - 1]


def bucket(rel_pos):
    """T5's bidirectional bucket of ``rel_pos`` (attention-gym / mesh-tensorflow)."""
    half, exact = NB // 2, NB // 4
    side = fd.cast(rel_pos > 0, fd.i32) * half
    d = fd.abs(rel_pos)
    big = exact + fd.cast(
        fd.log(fd.cast(fd.maximum(d, 1), fd.f32) / exact)
        / math.log(MAX_DIST / exact)
        * (half - exact),
        fd.i32,
    )
    return side + fd.where(d < exact, d, fd.minimum(big, half - 1))


def t5_bias(score, b, h, q_idx, kv_idx):
    return score + t5[h, bucket(kv_idx - q_idx)]


def doc_offset(score, b, h, q_idx, kv_idx):
    doc = document_id[q_idx]
    start = offsets[doc]  # keys before the query's document are pushed down
    return (score - 0.05 * fd.cast(kv_idx - start, fd.f32)) * doc_bias[doc]


def block_biases(score, b, h, q_idx, kv_idx):
    return score + full_bias[h, q_idx, kv_idx] + fd.tanh(key_bias[kv_idx])


MODS = {
    "alibi_from_h": (alibi_from_h, True),
    "alibi_tensor": (alibi_tensor, True),
    "head_scale": (head_scale, False),
    "exp_scale": (exp_scale, False),
    "rel_bias": (rel_bias, True),
    "t5_bias": (t5_bias, False),
    "doc_offset": (doc_offset, True),
    "block_biases": (block_biases, False),
}
SHAPE = dict(B=1, N=4, Nkv=2, Sq=20, Skv=27, D=8)  # GQA, tails of 4 and 11
TILES = dict(block_q=16, block_kv=16)


def _bwd(name: str, dtype: str) -> object:
    mod, causal = MODS[name]
    return fd.attention_backward(
        name=f"g_{name}_{dtype}", score_mod=mod, causal=causal, dtype=dtype
    )


def _loss(spec: object, x: dict[str, np.ndarray], env: dict, do: np.ndarray) -> float:
    o = forward_reference(spec, x, env, {"scale": env["D"] ** -0.5})["o"]
    return float(np.sum(o * do))


def _finite_difference(
    spec: object, x: dict[str, np.ndarray], env: dict, name: str, at: list
) -> np.ndarray:
    """d sum(o * do) / d x[name] at the positions ``at``, central, float64."""
    out = []
    for e in at:
        step = 1e-6 * max(1.0, abs(float(x[name][e])))
        sides = []
        for sign in (1.0, -1.0):
            y = dict(x, **{name: x[name].copy()})
            y[name][e] += sign * step
            sides.append(_loss(spec, y, env, x["do"]))
        out.append((sides[0] - sides[1]) / (2 * step))
    return np.array(out)


def _positions(shape: tuple[int, ...], count: int, rng) -> list[tuple[int, ...]]:
    every = list(np.ndindex(shape))
    if len(every) <= count:
        return every
    return [every[i] for i in rng.choice(len(every), count, replace=False)]


@pytest.mark.parametrize("name", sorted(MODS))
def test_gradients_match_float64_finite_differences(name: str) -> None:
    kdef = _bwd(name, "fp32")
    b = bind(kdef, SHAPE, "fp32", TILES)
    data = runio.make_inputs(b, 1)
    got = interpret(run_pipeline(b.kernel), b.env(), data).outputs
    x = {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in data.items()}
    rng = np.random.default_rng(0)
    grads = ["q", "k", "v"] + [t.name for t in kdef.spec.extras if t.requires_grad]
    assert name == "alibi_from_h" or len(grads) > 3, "a mod with a learnable tensor"
    for t in grads:
        at = _positions(x[t].shape, 12 if t in "qkv" else 40, rng)
        want = _finite_difference(kdef.spec, x, b.env(), t, at)
        have = np.array([got["d" + t][e] for e in at], np.float64)
        tol = 2e-4 * max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(have, want, rtol=0, atol=tol, err_msg=f"d{t}")
        assert np.abs(want).max() > 1e-3, f"d{t} is ~0: the test would not notice"


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("name", ["rel_bias", "t5_bias", "exp_scale"])
def test_half_precision_passes_the_tolerance_rule(name: str, dtype: str) -> None:
    r = run(_bwd(name, dtype), dict(SHAPE, Sq=40, Skv=56), dtype, sets=TILES)
    grads = [n for n in r.out if n.startswith("d") and n not in ("dq", "dk", "dv")]
    assert grads and all(v.name in r.out for v in r.check.verdicts)
    assert {v.name for v in r.check.verdicts} >= set(grads)
    assert_passes(r)


def test_the_reference_is_checked_against_the_forward_too() -> None:
    """tensor_grad_ref (the float64 reference `fadsl run` checks d<tensor> with)
    agrees with finite differences of the whole forward, not only of the mod."""
    from fadsl.frontend.attention_grad_ref import reference

    kdef = _bwd("t5_bias", "fp32")
    b = bind(kdef, SHAPE, "fp32", TILES)
    data = runio.make_inputs(b, 2)
    x = {k: v.astype(np.float64) if v.dtype.kind == "f" else v for k, v in data.items()}
    ref = reference(kdef.spec, x, b.env(), {"scale": SHAPE["D"] ** -0.5})
    at = _positions(x["t5"].shape, 30, np.random.default_rng(1))
    want = _finite_difference(kdef.spec, x, b.env(), "t5", at)
    have = np.array([ref["dt5"][e] for e in at])
    np.testing.assert_allclose(have, want, rtol=0, atol=1e-6 * max(1, abs(want).max()))


def test_an_integer_tensor_cannot_require_grad() -> None:
    with pytest.raises(UsageError) as info:
        fd.tensor("ids", "Sq", dtype="i32", requires_grad=True)
    assert info.value.code == "tensor_grad_not_float"


def test_a_tensor_read_through_floor_is_refused_at_the_mods_line() -> None:
    def stepped(score, b, h, q_idx, kv_idx):
        return score + fd.floor(rel[q_idx - kv_idx + fd.shape.Skv - 1])

    with pytest.raises(KernelSyntaxError) as info:
        bind(fd.attention_backward(name="stepped_rel", score_mod=stepped), SHAPE)
    assert info.value.code == "tensor_grad_not_differentiable"
    assert info.value.loc.line == stepped.__code__.co_firstlineno + 1


def test_the_ascendc_backend_lowers_a_block_of_columns() -> None:
    """key_bias[kv_idx] (refused with E136 before): its column sums are added from the
    block's start. A hand-written scatter_add without base / width is still refused
    (tests/errors/catalogue.py, ``tensor_grad_not_on_ascendc``)."""
    from fadsl.driver.lower import lower
    from fadsl.target import get

    shape = dict(B=1, N=4, Nkv=2, Sq=72, Skv=80, D=64)
    b = bind(_bwd("block_biases", "fp16"), shape, "fp16", dict(block_q=64))
    low = lower(b.__class__(**{**b.__dict__, "target": get("ascend910b1")}))
    assert low.error is None, low.error
    assert "dkey_bias" in {a.output for a in low.plan.atomics}


def test_without_requires_grad_the_backward_is_unchanged() -> None:
    plain = fd.tensor("rel", "Sq + Skv - 1", init=_normal)

    def bias(score, b, h, q_idx, kv_idx):
        return score + plain[q_idx - kv_idx + fd.shape.Skv - 1]

    kernel = bind(fd.attention_backward(name="plain_rel", score_mod=bias), SHAPE).kernel
    outs = [p.name for p in kernel.params if p.kind.value == "out"]
    assert outs == ["dq", "dk", "dv"]


def test_the_scatter_sums_every_element_that_hits_one_entry(tmp_path: Path) -> None:
    """tests/ir_samples/scatter_add.fir: each grid point adds x[i*16 + j] into
    drel[h, i*16 + j + 3]; with N heads every entry holds N times the element."""
    from fadsl.ir.text.parser import parse_kernel

    root = Path(__file__).resolve().parents[1]
    kernel = parse_kernel((root / "ir_samples" / "scatter_add.fir").read_text())
    x = np.arange(20, dtype=np.float32)
    out = interpret(kernel, {"N": 3, "T": 20}, {"x": x}).outputs["drel"]
    want = np.zeros((3, 40), np.float32)
    want[:, 3:23] = x
    np.testing.assert_array_equal(out, want)


def test_a_reference_over_budget_is_left_unchecked_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The float64 reference of d<tensor> costs two mod runs per element and head:
    above tensor_grad_ref.BUDGET it is not computed (fadsl run then prints no verdict
    for it) and the logger says so, instead of running for minutes."""
    from fadsl.frontend import tensor_grad_ref
    from fadsl.frontend.attention_grad_ref import reference

    kdef = _bwd("rel_bias", "fp32")
    b = bind(kdef, SHAPE, "fp32", TILES)
    data = runio.make_inputs(b, 3)
    consts = {"scale": SHAPE["D"] ** -0.5}
    assert "drel" in reference(kdef.spec, data, b.env(), consts)
    monkeypatch.setattr(tensor_grad_ref, "BUDGET", 1000.0)
    with caplog.at_level("WARNING", logger="fadsl.reference"):
        ref = reference(kdef.spec, data, b.env(), consts)
    assert "drel" not in ref and {"dq", "dk", "dv"} <= set(ref)
    assert "drel is not checked" in caplog.text


def test_a_tensor_only_a_mask_mod_reads_cannot_require_grad() -> None:
    keep = fd.tensor("keep", "Skv", requires_grad=True)

    def mask(b, h, q_idx, kv_idx):
        return keep[kv_idx] > 0.0

    with pytest.raises(UsageError) as info:
        fd.attention_backward(name="mask_only", mask_mod=mask)
    assert info.value.code == "tensor_grad_not_differentiable"
    assert "no score_mod" in str(info.value)


def scaled_rel(score, b, h, q_idx, kv_idx):
    return score * alpha[h] + rel[q_idx - kv_idx + fd.shape.Skv - 1]


@pytest.mark.parametrize(
    "layout, extra",
    [("BSND", {}), ("BSND", {"softcap": 20.0}), ("TND", {"dropout_p": 0.1})],
)
def test_layouts_softcap_and_dropout_pass_the_tolerance_rule(
    layout: str, extra: dict
) -> None:
    """A scalar read and a gather of two learnable tensors, BSND (B=2, GQA) and
    packed TND sequences, with softcap (the mod's input is softcapped) and dropout
    (dP carries the forward's mask): d<tensor> by the rule against float64."""
    shape = dict(B=2, N=4, Nkv=2, Sq=40, Skv=56, D=16)
    if layout == "TND":
        shape = dict(B=2, N=2, Nkv=1, Sq=70, Skv=90, D=16)
    name = f"lay_{layout}_{'_'.join(extra) or 'plain'}"
    kdef = fd.attention_backward(
        name=name, score_mod=scaled_rel, causal=True, layout=layout, **extra
    )
    r = run(kdef, shape, "fp16", sets=TILES)
    assert {"dalpha", "drel"} <= {v.name for v in r.check.verdicts}
    assert_passes(r)
