"""``fd.attention_backward``: the backward kernel of an ``fd.attention`` variant.

It binds the library program ``fadsl/lib/flash_bwd.py`` to the variant (the same
keywords as ``fd.attention``, less ``return_lse``). Inputs: the forward's inputs plus
``o``, ``do`` (shape and dtype of ``o``) and ``lse`` (f32, as the forward's
``return_lse`` writes it); outputs ``dq``, ``dk``, ``dv`` shaped like q, k, v. Its
reference is ``attention_grad_ref``; its seeded inputs draw q, k, v and do and take o
and lse from the forward reference, so they are consistent (docs/backward.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fadsl.errors import Loc, UsageError
from fadsl.frontend import attention_args as args
from fadsl.frontend.attention import AttentionKernel, AttentionSpec
from fadsl.frontend.attention_params import (
    KV_DIMS,
    QO_DIMS,
    bound_reference,
    check_extra_names,
)
from fadsl.frontend.kernel import KernelDef, ParamSpec
from fadsl.frontend.mod_tensor_grad import (
    check_score_mod_reads,
    grad_name,
    grad_tensors,
)
from fadsl.frontend.mod_tensors import find_tensors
from fadsl.frontend.source import user_frame_loc
from fadsl.ir.kernel_name import check_kernel_name
from fadsl.ir.types import DType

BLOCK_MASK_T = ("q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices")
DEFAULT_SHAPE = {"B": 1, "N": 8, "Nkv": 8, "Sq": 2048, "Skv": 2048, "D": 128}


@dataclass(frozen=True)
class BackwardSpec(AttentionSpec):
    """A variant as its backward kernel reads it (a mask_mod on fixed-length sequences
    gets the forward's block mask transposed: Q blocks per KV block)."""


class AttentionBackwardKernel(AttentionKernel):
    """The kernel ``fd.attention_backward`` returns: flash_bwd bound to one spec."""

    kv_blocks = None  # type: ignore[assignment]  # run prints its loop counts instead
    is_backward = True

    def __init__(self, spec: BackwardSpec, loc: Loc) -> None:
        from fadsl.lib.flash_bwd import flash_attention_backward

        KernelDef.__init__(
            self,
            flash_attention_backward,
            spec.name,
            spec.dtype,
            {"spec": spec},
            DEFAULT_SHAPE,
            bound_reference(spec, "fadsl.frontend.attention_grad_ref"),
        )
        self.spec = spec
        self.loc = loc
        self.specs = _param_specs(spec, self.specs)

    def make_inputs(
        self, shape: Mapping[str, int], consts: Mapping[str, Any], rng: Any
    ) -> dict[str, Any]:
        from fadsl.frontend.attention_bwd_inputs import make_inputs

        out = make_inputs(self.spec, dict(shape), dict(consts), rng)
        return {**out, **self.given_block_mask(shape, consts)}

    def derived_inputs(
        self,
        shape: Mapping[str, int],
        consts: Mapping[str, Any],
        inputs: Mapping[str, Any],
    ) -> dict[str, Any]:
        """The transposed block mask, for --inputs folders."""
        if self.block_mask is not None:
            return self.given_block_mask(shape, consts)
        from fadsl.frontend.attention_bwd_inputs import derived_inputs

        return derived_inputs(self.spec, dict(shape), dict(consts), inputs)

    @property
    def derived(self) -> tuple[str, ...]:
        return BLOCK_MASK_T if self.spec.block_sparse else ()


def _param_specs(
    spec: BackwardSpec, base: tuple[ParamSpec, ...]
) -> tuple[ParamSpec, ...]:
    """q, k, v, o, do, lse in; dq, dk, dv out; then the variant's other inputs."""
    qo, kv = QO_DIMS[spec.layout], KV_DIMS[spec.layout]
    kv = (1,) + kv[1:] if spec.shared_kv else kv
    lse = ("N", "Sq") if spec.varlen else ("B", "N", "Sq")
    out = [
        ParamSpec("q", "in", qo),
        ParamSpec("k", "in", kv),
        ParamSpec("v", "in", kv),
        ParamSpec("o", "in", qo),
        ParamSpec("do", "in", qo),
        ParamSpec("lse", "in", lse, DType.F32),
        ParamSpec("dq", "out", qo),
        ParamSpec("dk", "out", kv),
        ParamSpec("dv", "out", kv),
    ]
    out += [  # gradients of the mods' tensors (fd.tensor(..., requires_grad=True))
        ParamSpec(grad_name(t.name), "out", t.annotation.dims, t.dtype)
        for t in grad_tensors(spec)
    ]
    keep = {"cu_seqlens_q", "cu_seqlens_kv"} if spec.varlen else set()
    keep |= set(BLOCK_MASK_T) if spec.block_sparse else set()
    keep |= {"seed", "offset"} if spec.dropout_p > 0.0 else set()
    by_name = {p.name: p for p in base}
    out += [p for p in base if p.name in keep]
    out += [ParamSpec(t.name, "in", t.annotation.dims, t.dtype) for t in spec.extras]
    scale = by_name["scale"]
    if spec.scale is not None:
        scale = ParamSpec(
            "scale", "scalar", dtype=scale.dtype, default=spec.scale, has_default=True
        )
    out.append(scale)
    out += [p for p in base if p.kind == "const"]
    check_extra_names(spec, out)
    _check_backward_names(spec)
    return tuple(out)


def _check_backward_names(spec: BackwardSpec) -> None:
    grads = {grad_name(t.name) for t in grad_tensors(spec)}
    for t in spec.extras:
        if t.name in ("do", "dq", "dk", "dv") + BLOCK_MASK_T or t.name in grads:
            raise UsageError(
                f"fd.tensor({t.name!r}) has the name of a parameter of the backward "
                "kernel",
                t.loc,
                hint="rename the extra tensor",
            )


def attention_backward(
    name: str,
    score_mod: Callable[..., Any] | None = None,
    mask_mod: Callable[..., Any] | None = None,
    causal: bool = False,
    window: tuple[int, int] | None = None,
    softcap: float | None = None,
    scale: float | None = None,
    dropout_p: float = 0.0,
    layout: str = "BNSD",
    dtype: str = "fp16",
    block_mask: Any = None,
    shared_kv: bool = False,
    **others: Any,
) -> AttentionBackwardKernel:
    """The backward kernel (dq, dk, dv) of the ``fd.attention`` variant with these keywords.

    Args: as ``fd.attention`` (``return_lse`` is not one: the backward reads ``lse``).

    Returns:
        The kernel (assign it at module level for the fadsl CLI). Inputs: the forward's
        plus ``o``, ``do`` and ``lse``; outputs ``dq``, ``dk``, ``dv``.

    Example::

        fwd = fd.attention(name="fwd", causal=True, return_lse=True)
        bwd = fd.attention_backward(name="bwd", causal=True)
    """
    from fadsl.frontend.block_mask_inputs import bind_block_mask, mask_mod_of

    loc = user_frame_loc() or Loc("<unknown>", 1)
    args.backward_keywords(others, loc)
    check_kernel_name(name, loc)
    mask_mod = mask_mod_of(block_mask, mask_mod, loc)
    spec = BackwardSpec(
        name=name,
        score_mod=args.mod(score_mod, 5, "score_mod", loc),
        mask_mod=args.mod(mask_mod, 4, "mask_mod", loc),
        causal=args.flag(causal, "causal", loc),
        window=args.window(window, loc, causal is True),
        softcap=args.positive(softcap, "softcap", loc),
        scale=args.positive(scale, "scale", loc),
        return_lse=False,
        dropout_p=args.probability(dropout_p, loc),
        layout=args.layout(layout, loc),
        dtype=args.dtype(dtype, loc),
        extras=find_tensors(score_mod, mask_mod),
        shared_kv=args.shared_kv(shared_kv, layout, False, loc),
    )
    check_score_mod_reads(spec, find_tensors(score_mod))
    kernel = AttentionBackwardKernel(spec, loc)
    bind_block_mask(kernel, block_mask)
    return kernel
