"""The ``fd.attention`` contract: parameters per variant, extra tensors found through
closures and globals, and errors that name the user's line with a hint."""

from __future__ import annotations

import pytest
from attkit import bind

import fadsl as fd
from fadsl.errors import KernelSyntaxError, UsageError

ids = fd.tensor("ids", "Skv", dtype="i32")


def _params(k: fd.KernelDef) -> list[tuple[str, str]]:
    kernel = k.build({"block_q": 64, "block_kv": 64})
    return [(p.name, p.kind.value) for p in kernel.params]


def test_parameters_follow_the_variant() -> None:
    assert _params(fd.attention(name="a")) == [
        ("q", "in"),
        ("k", "in"),
        ("v", "in"),
        ("o", "out"),
        ("scale", "scalar"),
    ]
    k = fd.attention(name="b", return_lse=True, dropout_p=0.1, layout="TND")
    assert _params(k) == [
        ("q", "in"),
        ("k", "in"),
        ("v", "in"),
        ("o", "out"),
        ("lse", "out"),
        ("cu_seqlens_q", "in"),
        ("cu_seqlens_kv", "in"),
        ("seed", "in"),
        ("offset", "in"),
        ("scale", "scalar"),
    ]
    kernel = k.build({"block_q": 64})
    shapes = {p.name: str(p.type) for p in kernel.params}
    assert shapes["q"] == "f16[Sq, N, D]" and shapes["lse"] == "f32[N, Sq]"
    assert shapes["cu_seqlens_q"] == "i32[B + 1]"
    assert sorted(kernel.shape_syms) == sorted(
        ["B", "N", "Nkv", "Sq", "Skv", "D", "Dv"]
    )


def test_bsh_declares_hidden_size_n_times_d() -> None:
    kernel = fd.attention(name="h", layout="BSH").build({})
    assert {p.name: str(p.type) for p in kernel.params}["k"] == "f16[B, Skv, D*Nkv]"


def test_extra_tensors_come_from_globals_and_closures() -> None:
    scales = fd.tensor("scales", "N")

    def by_head(score, b, h, q_idx, kv_idx):
        return score * scales[h]

    def keep(b, h, q_idx, kv_idx):
        return ids[kv_idx] >= 0

    k = fd.attention(name="x", score_mod=by_head, mask_mod=keep)
    names = [n for n, _ in _params(k)]
    assert names[4:] == [
        "kv_num_blocks",
        "kv_indices",
        "full_kv_num_blocks",
        "full_kv_indices",
        "ids",
        "scales",
        "scale",
    ]


def test_scale_keyword_is_the_scalar_default() -> None:
    kernel = fd.attention(name="s", scale=0.125).build({})
    scale = next(p for p in kernel.params if p.name == "scale")
    assert float(scale.default) == 0.125


@pytest.mark.parametrize(
    "kw,message",
    [
        (dict(window=(3,)), "window must be (left, right)"),
        (dict(window=(-2, 0)), "window must be (left, right)"),
        (dict(softcap=0.0), "softcap must be a positive finite number"),
        (dict(dropout_p=1.0), "dropout_p must be in [0, 1)"),
        (dict(layout="SBH"), "layout must be one of BNSD, BSND, BSH, TND"),
        (dict(dtype="int8"), "dtype must be fp16, bf16 or fp32"),
        (dict(causal=1), "causal must be True or False"),
        (dict(name="2fast"), "not a usable C identifier"),
        (dict(score_mod=lambda s, b, h, q: s), "takes 4 argument(s)"),
    ],
)
def test_bad_keywords_name_the_call(kw: dict, message: str) -> None:
    kw = dict(dict(name="k"), **kw)
    with pytest.raises(UsageError) as err:
        fd.attention(**kw)
    assert message in err.value.message
    assert err.value.loc is not None and err.value.loc.file == __file__


def test_mask_mod_must_return_a_mask() -> None:
    def not_a_mask(b, h, q_idx, kv_idx):
        return q_idx - kv_idx

    k = fd.attention(name="m", mask_mod=not_a_mask)
    with pytest.raises(
        KernelSyntaxError, match=r"returned a tile i32\[block_q, block_kv\], not a mask"
    ) as err:
        k.build({})
    assert err.value.loc.file == __file__


def test_an_unboundable_gather_is_refused_at_the_mod() -> None:
    """``ids[kv_idx + 1]`` is a gather (test_mod_gather.py); an index read from a
    tensor into a dimension of runtime size cannot be given a UB window."""

    def chased(b, h, q_idx, kv_idx):
        return ids[ids[kv_idx]] == 0

    k = fd.attention(name="g", mask_mod=chased)
    with pytest.raises(KernelSyntaxError, match="cannot bound the index") as err:
        k.build({})
    assert (
        err.value.loc.file == __file__
        and "ids[ids[kv_idx]]" in err.value.loc.source_line()
    )


def test_two_tensors_with_one_name_are_refused() -> None:
    a, b2 = fd.tensor("w", "N"), fd.tensor("w", "N")

    def mod(score, b, h, q_idx, kv_idx):
        return score * a[h] + b2[h]

    with pytest.raises(UsageError, match="both named 'w'"):
        fd.attention(name="w2", score_mod=mod)


def test_extra_tensor_cannot_take_a_builtin_name() -> None:
    lse = fd.tensor("lse", "N")

    def mod(score, b, h, q_idx, kv_idx):
        return score + lse[h]

    with pytest.raises(UsageError, match="has the name of a parameter"):
        fd.attention(name="n", score_mod=mod)


@pytest.mark.parametrize("name", ["D", "Skv", "fd", "task", "kv_step"])
def test_extra_tensor_cannot_hide_a_name_the_library_program_reads(name: str) -> None:
    # found by the hostile-names fuzz leg: fd.tensor("D") ended in "shape must be a
    # scalar expression, got TensorRef" pointing into fadsl/lib/flash.py
    extra = fd.tensor(name, "N")

    def mod(score, b, h, q_idx, kv_idx):
        return score + extra[h]

    with pytest.raises(UsageError, match="shape symbol or of a name the attention"):
        fd.attention(name="n", score_mod=mod).build({})


def test_the_variant_cannot_be_changed_with_set() -> None:
    with pytest.raises(UsageError, match="fixed by its fd.attention"):
        fd.attention(name="c", causal=True).build({"spec": None})


def test_reference_reads_extra_tensors_outside_their_shape_clearly() -> None:
    def doc_mask(b, h, q_idx, kv_idx):
        return ids[q_idx] == ids[kv_idx]

    k = fd.attention(name="d", mask_mod=doc_mask)
    b = bind(k, dict(B=1, N=1, Sq=100, Skv=50, D=64))
    from fadsl.io import runio

    with pytest.raises(UsageError, match="outside its shape"):
        runio.make_inputs(b, 0)
