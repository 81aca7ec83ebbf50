"""``fd.attention(..., paged_kv=True, append_kv=True, rotary=..., leftpad=...)``: the
kernel of fadsl/lib/paged_append.py bound to one variant (docs/decode.md).

Its parameters: q (BNSD or BSND), the caches ``k_cache`` / ``v_cache``
[Pages, page_size, Nkv, D / Dv], ``block_table``, ``seqlens_kv``, ``k_new`` / ``v_new``
(Q's layout with Nkv heads), with rotary ``rotary_cos`` / ``rotary_sin`` f32
[MaxPos, RotaryHalf] (rotary_dim = 2 * RotaryHalf <= D), with leftpad ``leftpad`` i32
[B]; outputs ``o`` and the updated caches ``k_cache_out`` / ``v_cache_out``, which are
the caches in place (fadsl/ir/aliases.py; the interpreter returns them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from fadsl.errors import Loc, UsageError
from fadsl.frontend.append_inputs import check_append_inputs, make_append_inputs
from fadsl.frontend.attention_params import (
    DV,
    QO_DIMS,
    bound_reference,
    scale_param,
    with_dv,
)
from fadsl.frontend.kernel import KernelDef, ParamSpec
from fadsl.ir.types import DType

ROTARY = (None, "interleaved", "half")
APPEND_SHAPE = {"B": 2, "N": 8, "Nkv": 2, "Sq": 1, "D": 128, "Pages": 64, "MaxPages": 8}


@dataclass(frozen=True)
class AppendSpec:
    """One append variant: the compile-time constant ``spec`` of paged_append.py."""

    name: str
    causal: bool
    scale: float | None
    layout: str
    dtype: DType
    page_size: int
    rotary: str | None
    leftpad: bool


class AppendKernel(KernelDef):
    """The kernel ``fd.attention(..., append_kv=True)`` returns."""

    def __init__(self, spec: AppendSpec, loc: Loc) -> None:
        from fadsl.lib.paged_append import paged_append_attention

        shape = dict(APPEND_SHAPE)
        if spec.rotary is not None:
            shape.update(MaxPos=shape["MaxPages"] * spec.page_size, RotaryHalf=32)
        super().__init__(
            paged_append_attention,
            spec.name,
            spec.dtype,
            {"spec": spec},
            shape,
            bound_reference(spec, "fadsl.frontend.append_ref"),
        )
        self.spec = spec
        self.loc = loc
        self.specs = append_specs(spec, self.specs)

    def make_inputs(
        self, shape: Mapping[str, int], consts: Mapping[str, Any], rng: Any
    ) -> dict[str, Any]:
        return make_append_inputs(self.spec, dict(shape), rng)

    def check_inputs(
        self,
        shape: Mapping[str, int],
        consts: Mapping[str, Any],
        inputs: Mapping[str, Any],
    ) -> None:
        check_append_inputs(self.spec, self.loc, shape, inputs)


def append_specs(
    spec: AppendSpec, base: tuple[ParamSpec, ...]
) -> tuple[ParamSpec, ...]:
    """The parameters for the layout, page size, rotary and leftpad."""
    qo = QO_DIMS[spec.layout]
    new = tuple("Nkv" if d == "N" else d for d in qo)
    cache = ("Pages", spec.page_size, "Nkv", "D")
    out = [
        ParamSpec("q", "in", qo),
        ParamSpec("k_cache", "in", cache),
        ParamSpec("v_cache", "in", with_dv(cache)),
        ParamSpec("block_table", "in", ("B", "MaxPages"), DType.I32),
        ParamSpec("seqlens_kv", "in", ("B",), DType.I32),
        ParamSpec("k_new", "in", new),
        ParamSpec("v_new", "in", with_dv(new)),
    ]
    if spec.rotary is not None:
        table = ("MaxPos", "RotaryHalf")
        out += [
            ParamSpec("rotary_cos", "in", table, DType.F32),
            ParamSpec("rotary_sin", "in", table, DType.F32),
        ]
    if spec.leftpad:
        out.append(ParamSpec("leftpad", "in", ("B",), DType.I32))
    out += [
        ParamSpec("o", "out", with_dv(qo)),
        ParamSpec("k_cache_out", "out", cache, alias="k_cache"),
        ParamSpec("v_cache_out", "out", with_dv(cache), alias="v_cache"),
    ]
    by_name = {p.name: p for p in base}
    out.append(scale_param(by_name["scale"], spec.scale))
    for p in base:
        if p.kind != "const":
            continue
        if p.name == "block_kv":  # one page per step of the cached keys
            p = ParamSpec("block_kv", "const", default=spec.page_size, has_default=True)
        if p.name == "stages":  # two exceed the AIC's MTE1_MTE2 event IDs (E52)
            p = ParamSpec("stages", "const", default=1, has_default=True)
        out.append(p)
    return tuple(out)


def append_attention(
    name: str,
    loc: Loc,
    keywords: Mapping[str, Any],
    refused: Mapping[str, Any],
) -> AppendKernel:
    """The append kernel of ``fd.attention``'s keywords (already validated by it:
    name, causal, scale, layout, dtype, page_size), or E132 for what it lacks."""
    for key, value in refused.items():
        what = (
            f"append_kv, rotary and leftpad need append_kv=True and paged_kv=True "
            f"(a paged cache to append to), got {key}={value!r}"
            if key in ("append_kv", "paged_kv")
            else f"fd.attention(append_kv=True) does not take {key}={value!r} yet"
        )
        raise UsageError(
            what,
            loc,
            hint="append_kv supports causal, scale, layout BNSD / BSND, dtype, "
            "page_size, rotary and leftpad (docs/decode.md)",
            code="append_unsupported",
        )
    rotary = keywords["rotary"]
    if rotary not in ROTARY:
        raise UsageError(
            f"rotary={rotary!r}: expected 'interleaved', 'half' or None",
            loc,
            hint="'interleaved' pairs columns (2i, 2i + 1) (GPT-J); 'half' pairs "
            "(i, i + rotary_dim / 2) (GPT-NeoX)",
            code="append_unsupported",
        )
    if keywords["layout"] not in ("BNSD", "BSND"):
        raise UsageError(
            f"append_kv with layout={keywords['layout']!r}: expected 'BNSD' or 'BSND'",
            loc,
            hint="give q, k_new and v_new as [B, N, Sq, D] or [B, Sq, N, D]",
            code="append_unsupported",
        )
    spec = AppendSpec(
        name=name,
        causal=bool(keywords["causal"]),
        scale=keywords["scale"],
        layout=keywords["layout"],
        dtype=keywords["dtype"],
        page_size=keywords["page_size"],
        rotary=rotary,
        leftpad=bool(keywords["leftpad"]),
    )
    return AppendKernel(spec, loc)


__all__ = ["AppendKernel", "AppendSpec", "DV", "append_attention", "append_specs"]
