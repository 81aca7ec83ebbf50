"""``fd.attention``: a complete attention kernel from the library FA2 program plus hooks.

The builder validates the variant, finds the extra tensors its mods read, declares the
kernel's parameters for the layout, and returns an ``AttentionKernel`` (a KernelDef the
CLI finds at module level) whose float64 reference, seeded inputs and block mask have
the same semantics as the kernel (``docs/variants.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from fadsl.errors import Loc, UsageError
from fadsl.frontend import attention_args as args
from fadsl.frontend.attention_params import BLOCK_MASK, bound_reference, param_specs
from fadsl.frontend.attention_spec import AttentionSpec
from fadsl.frontend.kernel import KernelDef
from fadsl.ir.kernel_name import check_kernel_name
from fadsl.frontend.mod_tensors import find_tensors
from fadsl.frontend.mla import v_from_k_flag
from fadsl.frontend.source import user_frame_loc
from fadsl.ir.types import DType


class AttentionKernel(KernelDef):
    """The kernel ``fd.attention`` returns: the FA2 program bound to one spec."""

    block_mask: Any = None
    """The ``fd.create_block_mask`` result its runs read (``block_mask=``), if any."""

    def __init__(self, spec: AttentionSpec, loc: Loc) -> None:
        from fadsl.frontend.prefill_args import program_of

        program, shape = program_of(spec)
        super().__init__(
            program,
            spec.name,
            spec.dtype,
            {"spec": spec},
            shape,
            bound_reference(spec, "fadsl.frontend.attention_ref"),
        )
        self.spec = spec
        self.loc = loc
        self.specs = param_specs(spec, self.specs)

    def build(self, consts: Mapping[str, Any] | None = None, dtype: DType | None = None):  # type: ignore[no-untyped-def]
        if consts and "spec" in consts:
            raise UsageError(
                f"--set spec: the variant of `{self.name}` is fixed by its "
                "fd.attention(...) call",
                self.loc,
                hint="change the keywords of fd.attention; --set changes block_q, "
                "block_kv, stages and scale (kv_splits with paged_kv)",
            )
        if self.spec.paged_kv:
            from fadsl.frontend.attention_args import check_paged_block

            check_paged_block((consts or {}).get("block_kv"), self.spec, self.loc)
        return super().build(consts, dtype)

    def allows(self, consts: Mapping[str, int]) -> bool:
        """A paged kernel's block_kv is a whole number of pages."""
        block = consts.get("block_kv")
        if not self.spec.paged_kv or block is None:
            return True
        return block > 0 and block % self.spec.page_size == 0

    def check_given_shape(self, given: Collection[str]) -> None:
        """The symbols the user wrote (not defaulted): v_from_k needs Dv among them."""
        if self.spec.v_from_k:
            from fadsl.frontend.mla import require_value_dim

            require_value_dim(given, self.loc)

    def check_shape(self, shape: Mapping[str, int]) -> None:
        """N must be a multiple of Nkv (GQA / MQA); v_from_k needs Dv <= D."""
        if self.spec.v_from_k:
            from fadsl.frontend.mla import check_value_columns

            check_value_columns(shape, self.loc)
        n, nkv = shape.get("N"), shape.get("Nkv")
        if n is not None and nkv is not None and n % nkv:
            raise UsageError(
                f"--shape N={n}, Nkv={nkv}: N must be a multiple of Nkv (each group of "
                f"N / Nkv query heads shares one KV head)",
                self.loc,
                hint=f"e.g. Nkv={_divisor(n, nkv)} (GQA) or Nkv=1 (MQA), or leave Nkv "
                "out (Nkv = N)",
                code="gqa_heads",
            )

    def make_inputs(
        self, shape: Mapping[str, int], consts: Mapping[str, Any], rng: Any
    ) -> dict[str, Any]:
        from fadsl.frontend.attention_inputs import make_inputs

        out = make_inputs(self.spec, dict(shape), dict(consts), rng)
        return {**out, **self.given_block_mask(shape, consts)}

    def given_block_mask(
        self, shape: Mapping[str, int], consts: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The inputs of the kernel's own BlockMask (``block_mask=``); {} without."""
        if self.block_mask is None:
            return {}
        from fadsl.frontend.block_mask_inputs import block_mask_inputs

        return block_mask_inputs(self.block_mask, self, shape, consts, self.loc)

    def derived_inputs(
        self,
        shape: Mapping[str, int],
        consts: Mapping[str, Any],
        inputs: Mapping[str, Any],
    ) -> dict[str, Any]:
        """Inputs computed from the others (the block mask), for --inputs folders."""
        if self.block_mask is not None:
            return self.given_block_mask(shape, consts)
        from fadsl.frontend.attention_inputs import derived_inputs

        return derived_inputs(self.spec, dict(shape), dict(consts), inputs)

    def check_inputs(
        self,
        shape: Mapping[str, int],
        consts: Mapping[str, Any],
        inputs: Mapping[str, Any],
    ) -> None:
        """Refuse invalid cu_seqlens and block masks, naming the element."""
        from fadsl.frontend.attention_checks import check_inputs

        check_inputs(self.spec, self.loc, shape, consts, inputs)

    @property
    def derived(self) -> tuple[str, ...]:
        return BLOCK_MASK if self.spec.block_sparse else ()

    def modelled_scalars(self, shape: Mapping[str, int]) -> dict[str, Any]:
        """What `tune` and `timeline` assume for inputs the kernel reads as scalars
        (``model_assumption`` says it in words): a paged kernel's sequences as long
        as the block table allows; packed (TND) sequences all of one length, the
        ``Sq`` and ``Skv`` tokens shared evenly (``cu_seqlens[b] = b * (S // B)``)."""
        if self.spec.paged_kv and self.spec.varlen and {"B", "MaxPages"} <= set(shape):
            from fadsl.frontend.prefill_args import prefill_scalars

            return prefill_scalars(shape, self.spec.page_size)
        if self.spec.paged_kv and "MaxPages" in shape:
            return {"seqlens_kv": shape["MaxPages"] * self.spec.page_size}
        if self.spec.varlen and {"B", "Sq", "Skv"} <= set(shape):
            b = shape["B"]
            return {
                f"cu_seqlens_{x}": tuple(k * (shape[s] // b) for k in range(b + 1))
                for x, s in (("q", "Sq"), ("kv", "Skv"))
            }
        return {}

    def model_assumption(self, shape: Mapping[str, int]) -> str | None:
        """``modelled_scalars`` in words, for the output of `tune` and `timeline`."""
        values = self.modelled_scalars(shape)
        if "seqlens_kv" in values and "cu_seqlens_q" in values:
            from fadsl.frontend.prefill_args import prefill_assumption

            return prefill_assumption(shape, self.spec.page_size)
        if "seqlens_kv" in values:
            return (
                "every sequence as long as its block table allows: seqlens_kv[b] = "
                f"MaxPages * P = {values['seqlens_kv']}"
            )
        if "cu_seqlens_q" in values:
            lq, lkv = values["cu_seqlens_q"][1], values["cu_seqlens_kv"][1]
            return (
                f"the B={shape['B']} packed sequences all of one length, {lq} query "
                f"and {lkv} key tokens each (Sq // B, Skv // B); sequences of "
                "different lengths take a different time"
            )
        return None

    def kv_blocks(
        self,
        shape: Mapping[str, int],
        consts: Mapping[str, Any],
        inputs: Mapping[str, Any],
        stats: Mapping[str, tuple[int, int]],
    ) -> tuple[int, int]:
        """(KV blocks computed, Q-block x KV-block pairs) over all batches and heads."""
        from fadsl.frontend.attention_inputs import kv_block_pairs

        loops = ("jp", "jf") if self.spec.block_sparse else ("j",)
        done = sum(stats.get(name, (0, 0))[0] for name in loops)
        return done, kv_block_pairs(self.spec, dict(shape), dict(consts), inputs)


def quant_fields(
    kv_dtype: Any, kv_scale: Any, kv_offset: Any, cache: tuple[Any, ...], loc: Loc
) -> dict[str, Any]:
    """The int8-cache fields of the spec (fadsl/frontend/attention_quant.py);
    ``cache``: (paged_kv, layout, shared_kv)."""
    from fadsl.frontend.attention_quant import quant_keywords

    dtype, scale, offset = quant_keywords(kv_dtype, kv_scale, kv_offset, cache, loc)
    return {"kv_dtype": dtype, "kv_scale": scale, "kv_offset": offset}


def _divisor(n: int, nkv: int) -> int:
    return max(d for d in range(1, nkv + 1) if n % d == 0)


# ----------------------------------------------------------------------------
# The public builder
# ----------------------------------------------------------------------------


def attention(
    name: str,
    score_mod: Callable[..., Any] | None = None,
    mask_mod: Callable[..., Any] | None = None,
    causal: bool = False,
    window: tuple[int, int] | None = None,
    softcap: float | None = None,
    scale: float | None = None,
    return_lse: bool = False,
    dropout_p: float = 0.0,
    layout: str = "BNSD",
    dtype: str = "fp16",
    paged_kv: bool = False,
    page_size: int | None = None,
    pack_gqa: bool | None = None,
    block_mask: Any = None,
    return_max_scores: bool = False,
    shared_kv: bool = False,
    v_from_k: bool = False,
    kv_dtype: str | None = None,
    kv_scale: str | None = None,
    kv_offset: bool = False,
    append_kv: bool = False,
    rotary: str | None = None,
    leftpad: bool = False,
) -> AttentionKernel:
    """A FlashAttention-2 forward kernel for one attention variant.

    Args:
        name: kernel name, a C identifier.
        score_mod: ``score_mod(score, b, h, q_idx, kv_idx) -> score`` (FlexAttention).
        mask_mod: ``mask_mod(b, h, q_idx, kv_idx) -> mask``; True keeps the score.
        causal: keep kv_idx <= q_idx + Skv - Sq (bottom-right aligned).
        window: (left, right): keep q_idx + Skv - Sq - left <= kv_idx <= ... + right;
            -1 leaves that side unbounded. With causal the right side is 0 or -1.
        softcap: score = softcap * tanh(score / softcap), before score_mod.
        scale: multiplies q @ k^T first; default D ** -0.5 (a runtime scalar).
        return_lse: adds the output ``lse`` (f32, log-sum-exp of each row; -inf for a
            row that sees no key).
        dropout_p: drop probability; kept probabilities are scaled by 1 / (1 - p).
            Adds the inputs ``seed`` (i32[2]) and ``offset`` (i32[1]).
        layout: "BNSD", "BSND", "BSH", or "TND" (packed variable-length sequences with
            the inputs ``cu_seqlens_q`` / ``cu_seqlens_kv``, i32[B + 1]).
        dtype: "fp16", "bf16" or "fp32".
        paged_kv: K and V come from a paged cache: the inputs ``k_cache``, ``v_cache``
            [Pages, page_size, Nkv, D], ``block_table`` (i32 [B, MaxPages]) and
            ``seqlens_kv`` (i32 [B]) replace ``k`` and ``v`` (docs/decode.md). With
            layout "TND": chunked prefill, ``cu_seqlens_q`` places each sequence's
            chunk and ``seqlens_kv`` counts its own keys too (fadsl/lib/prefill.py).
        page_size: rows of a page, a multiple of 16 from 16 to 512 (default 128).
        pack_gqa: paged: one task holds query heads of one KV head, at every
            position (BNSD) or one (BSND) (default: on unless a mod is given).
        return_max_scores: adds the output ``max_scores`` (f32, shaped as lse):
            each row's largest score after scale, softcap, score_mod and the masks
            (-inf for a row that sees no key), as FlexAttention's; no gradient.
        shared_kv: k and v have batch 1, broadcast over the B query batches (a
            prefix shared by every sequence); not with TND or paged_kv.
        v_from_k: paged MLA decode: no ``v_cache`` input; V is the first ``Dv``
            columns of ``k_cache`` (the latent; docs/decode.md); needs paged_kv.
        append_kv: with paged_kv: write the inputs ``k_new`` / ``v_new`` into the
            cache at each sequence's length first (outputs ``k_cache_out`` /
            ``v_cache_out``, the caches in place); ``rotary`` ("interleaved" or
            "half", inputs ``rotary_cos`` / ``rotary_sin``) rotates Q and the new
            keys; ``leftpad`` adds the input ``leftpad`` (docs/decode.md).
        block_mask: what ``fd.create_block_mask`` returns: the kernel's mask_mod is
            its mask_mod, its block sizes and default shape the BlockMask's, and its
            runs read the BlockMask instead of computing one.
        kv_dtype: "int8": k_cache / v_cache (or k / v, layout BNSD or BSND) are
            int8, dequantised as ``(x + offset) * scale`` after each load
            (docs/decode.md).
        kv_scale: with kv_dtype: "channel" (fp32 k_scale [Nkv, D], v_scale
            [Nkv, Dv]) or "token" (k_scale / v_scale [Pages, page_size, Nkv];
            contiguous k / v: [B, Nkv, Skv]).
        kv_offset: with kv_dtype: adds the inputs k_offset / v_offset (shaped as
            the scales).

    Returns:
        The kernel (assign it at module level for the fadsl CLI).

    Example::

        def alibi(score, b, h, q_idx, kv_idx):
            return score - 0.5 * (q_idx - kv_idx)
        kernel = fd.attention(name="alibi", score_mod=alibi, causal=True)
    """
    from fadsl.frontend.block_mask_inputs import bind_block_mask, mask_mod_of

    loc = user_frame_loc() or Loc("<unknown>", 1)
    check_kernel_name(name, loc)
    mask_mod = mask_mod_of(block_mask, mask_mod, loc)
    has_mods = score_mod is not None or mask_mod is not None
    page = args.paged(
        paged_kv,
        page_size,
        pack_gqa,
        args.layout(layout, loc),
        args.probability(dropout_p, loc),
        has_mods,
        loc,
        args.flag(return_max_scores, "return_max_scores", loc),
    )
    if append_kv or rotary is not None or leftpad:
        return _append(name, loc, locals(), page)  # type: ignore[return-value]
    spec = AttentionSpec(
        name=name,
        score_mod=args.mod(score_mod, 5, "score_mod", loc),
        mask_mod=args.mod(mask_mod, 4, "mask_mod", loc),
        causal=args.flag(causal, "causal", loc),
        window=args.window(window, loc, causal is True),
        softcap=args.positive(softcap, "softcap", loc),
        scale=args.positive(scale, "scale", loc),
        return_lse=args.flag(return_lse, "return_lse", loc),
        dropout_p=args.probability(dropout_p, loc),
        layout=args.layout(layout, loc),
        dtype=args.dtype(dtype, loc),
        extras=find_tensors(score_mod, mask_mod),
        paged_kv=page[0],
        page_size=page[1],
        pack_gqa=page[2],
        return_max_scores=args.flag(return_max_scores, "return_max_scores", loc),
        shared_kv=args.shared_kv(shared_kv, layout, paged_kv, loc),
        v_from_k=v_from_k_flag(v_from_k, paged_kv, loc),
        **quant_fields(
            kv_dtype, kv_scale, kv_offset, (paged_kv, layout, shared_kv), loc
        ),
    )
    kernel = AttentionKernel(spec, loc)
    bind_block_mask(kernel, block_mask)
    return kernel


def _append(name: str, loc: Loc, kw: dict[str, Any], page: Any) -> Any:
    """``append_kv=True`` (fadsl/frontend/attention_append.py)."""
    from fadsl.frontend.attention_append import append_attention

    defaults = dict(
        score_mod=None,
        mask_mod=None,
        window=None,
        softcap=None,
        return_lse=False,
        dropout_p=0.0,
        block_mask=None,
        return_max_scores=False,
        shared_kv=False,
        pack_gqa=None,
    )
    refused = {k: kw[k] for k, v in defaults.items() if kw[k] != v}
    if not kw["append_kv"] or not kw["paged_kv"]:  # rotary / leftpad need both
        flags = ("append_kv", "paged_kv")
        refused = {k: kw[k] for k in flags if not kw[k]}
    keywords = dict(
        kw,
        layout=args.layout(kw["layout"], loc),
        dtype=args.dtype(kw["dtype"], loc),
        page_size=page[1],
        causal=args.flag(kw["causal"], "causal", loc),
        scale=args.positive(kw["scale"], "scale", loc),
    )
    return append_attention(name, loc, keywords, refused)
