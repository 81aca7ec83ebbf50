"""The parameters of ``fd.attention`` kernels: tensors for the layout and the variant.

Dense kernels read ``k`` / ``v`` in the layout of ``q``; paged ones (``paged_kv=True``)
read the cache ``k_cache`` / ``v_cache`` ``[Pages, page_size, Nkv, D]`` through
``block_table`` (i32 ``[B, MaxPages]``) and ``seqlens_kv`` (i32 ``[B]``). Extra tensors
of the mods come after the built-in inputs; their names must not hide a parameter, a
shape symbol or a name the library program reads.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from fadsl.errors import UsageError
from fadsl.frontend.kernel import ParamSpec
from fadsl.ir.types import DType

DEFAULT_SHAPE = {"B": 1, "N": 8, "Nkv": 8, "Sq": 2048, "Skv": 2048, "D": 128}
PAGED_SHAPE = {
    "B": 4,
    "N": 32,
    "Nkv": 8,
    "Sq": 1,
    "D": 128,
    "Pages": 64,
    "MaxPages": 16,
}
BLOCK_MASK = ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices")
PAGED = ("k_cache", "v_cache", "block_table", "seqlens_kv")

QO_DIMS: dict[str, tuple[str, ...]] = {
    "BNSD": ("B", "N", "Sq", "D"),
    "BSND": ("B", "Sq", "N", "D"),
    "BSH": ("B", "Sq", "N * D"),
    "TND": ("Sq", "N", "D"),
}
KV_DIMS: dict[str, tuple[str, ...]] = {
    "BNSD": ("B", "Nkv", "Skv", "D"),
    "BSND": ("B", "Skv", "Nkv", "D"),
    "BSH": ("B", "Skv", "Nkv * D"),
    "TND": ("Skv", "Nkv", "D"),
}
DV = "Dv"
"""The value head dim (docs/variants.md): v / v_cache and o end in it; it defaults to D."""


def with_dv(dims: tuple[str, ...]) -> tuple[str, ...]:
    """``dims`` of q / k with the head dim D replaced by the value head dim Dv."""
    return tuple(
        d.replace("D", DV) if d in ("D", "N * D", "Nkv * D") else d for d in dims
    )


def param_specs(spec: Any, base: tuple[ParamSpec, ...]) -> tuple[ParamSpec, ...]:
    """The kernel's parameters: tensors for the layout and variant, scale, constants."""
    qo, kv = QO_DIMS[spec.layout], KV_DIMS[spec.layout]
    out = [ParamSpec("q", "in", qo)]
    if spec.paged_kv:
        from fadsl.frontend.attention_quant import cache_dtype, quant_params

        cache = ("Pages", spec.page_size, "Nkv", "D")
        out.append(ParamSpec("k_cache", "in", cache, cache_dtype(spec)))
        if not getattr(spec, "v_from_k", False):  # MLA: V is k_cache's first Dv
            out.append(ParamSpec("v_cache", "in", with_dv(cache), cache_dtype(spec)))
        out += [
            ParamSpec("block_table", "in", ("B", "MaxPages"), DType.I32),
            ParamSpec("seqlens_kv", "in", ("B",), DType.I32),
        ]
        out += quant_params(spec)  # an int8 cache's scales (and offsets)
    else:
        from fadsl.frontend.attention_quant import cache_dtype, quant_params

        kv = (1,) + kv[1:] if spec.shared_kv else kv
        out += [
            ParamSpec("k", "in", kv, cache_dtype(spec)),
            ParamSpec("v", "in", with_dv(kv), cache_dtype(spec)),
        ]
        out += quant_params(spec)  # an int8 k / v: its scales (and offsets)
    out.append(ParamSpec("o", "out", with_dv(qo)))
    if spec.return_lse:
        dims = ("N", "Sq") if spec.varlen else ("B", "N", "Sq")
        out.append(ParamSpec("lse", "out", dims, DType.F32))
    if spec.return_max_scores:
        dims = ("N", "Sq") if spec.varlen else ("B", "N", "Sq")
        out.append(ParamSpec("max_scores", "out", dims, DType.F32))
    keep = {"cu_seqlens_q", "cu_seqlens_kv"} if spec.varlen else set()
    keep -= {"cu_seqlens_kv"} if spec.paged_kv else set()  # prefill: seqlens_kv
    keep |= set(BLOCK_MASK) if spec.block_sparse else set()
    keep |= {"seed", "offset"} if spec.dropout_p > 0.0 else set()
    by_name = {p.name: p for p in base}
    out += [
        by_name[n]
        for n in ("cu_seqlens_q", "cu_seqlens_kv") + BLOCK_MASK + ("seed", "offset")
        if n in keep
    ]
    if spec.paged_kv and not spec.varlen:  # split-KV's parts (kv_splits; paged.py)
        # packed in BSND: heads adjacent ([.., Sq, N]); else positions ([.., N, Sq])
        rows = ("Sq", "N") if spec.pack_gqa and spec.layout == "BSND" else ("N", "Sq")
        part = ("kv_splits", "B") + rows
        out += [
            ParamSpec("o_part", "scratch", part + (DV,), DType.F32),
            ParamSpec("lse_part", "scratch", part, DType.F32),
        ]
    out += [ParamSpec(t.name, "in", t.annotation.dims, t.dtype) for t in spec.extras]
    out.append(scale_param(by_name["scale"], spec.scale))
    consts = [p for p in base if p.kind == "const"]
    if spec.paged_kv:  # a paged KV block is one page unless tune or --set widen it
        block = spec.page_size
        if spec.varlen:  # chunked prefill: pages up to 128 keys (prefill_args.py)
            from fadsl.frontend.prefill_args import prefill_block_kv

            block = prefill_block_kv(spec.page_size)
        consts = [_paged_block_kv(p, block) for p in consts]
    from fadsl.frontend.attention_quant import quant_consts

    consts = quant_consts(spec, consts)
    out += consts
    check_extra_names(spec, out)
    return tuple(out)


def _paged_block_kv(p: ParamSpec, page: int) -> ParamSpec:
    if p.name != "block_kv":
        return p
    return ParamSpec("block_kv", "const", default=page, has_default=True)


_RESERVED = frozenset(
    (
        "q",
        "k",
        "v",
        "o",
        "lse",
        "max_scores",
        "cu_seqlens_q",
        "cu_seqlens_kv",
        "seed",
        "offset",
        "scale",
        "spec",
        "block_q",
        "block_kv",
        "stages",
        "o_part",
        "lse_part",
        "kv_splits",
        "v_cores",
    )
    + BLOCK_MASK
    + PAGED
    + ("k_scale", "v_scale", "k_offset", "v_offset")
)


def check_extra_names(spec: Any, params: list[ParamSpec]) -> None:
    for t in spec.extras:
        if t.name in _RESERVED:
            raise UsageError(
                f"fd.tensor({t.name!r}) has the name of a parameter of the attention "
                "kernel",
                t.loc,
                hint="rename the extra tensor",
            )
        if t.name in _library_names():
            raise UsageError(
                f"fd.tensor({t.name!r}) has the name of a shape symbol or of a name "
                "the attention program (fadsl/lib/flash.py) reads; as a parameter it "
                "would hide it",
                t.loc,
                hint="rename the extra tensor",
            )


def _library_names() -> frozenset[str]:
    """Shape symbols, and the module globals ``flash_attention`` reads (``fd``, its
    helpers): an extra tensor is a parameter of it, so it must not take these names."""
    from fadsl.lib import flash, paged, prefill

    read = set(flash.flash_attention.__code__.co_names) & set(vars(flash))
    read |= set(paged.paged_attention.__code__.co_names) & set(vars(paged))
    read |= set(prefill.paged_prefill.__code__.co_names) & set(vars(prefill))
    return frozenset(DEFAULT_SHAPE) | {"Pages", "MaxPages", DV} | frozenset(read)


def scale_param(base: ParamSpec, value: float | None) -> ParamSpec:
    """The library's ``scale`` parameter, its default replaced by a fixed ``scale=``."""
    if value is None:
        return base
    return ParamSpec(
        "scale", "scalar", dtype=base.dtype, default=float(value), has_default=True
    )


def bound_reference(spec: Any, module: str) -> Callable[..., dict[str, Any]]:
    """The kernel's reference: ``module``'s ``reference(spec, inputs, shape, consts,
    dtype)`` with ``spec`` bound, imported only when called (the references import
    numpy-heavy helpers that ``fadsl compile`` never needs)."""

    def reference(
        inputs: dict, shape: dict, consts: dict, dtype: DType | None = None
    ) -> dict[str, Any]:
        return importlib.import_module(module).reference(
            spec, inputs, shape, consts, dtype
        )

    return reference
