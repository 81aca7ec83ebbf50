"""In-place outputs: an output that is the memory of an input (``Param.alias``).

``fd.attention(..., append_kv=True)`` writes the new keys and values into the caches it
reads: the caches are inputs (``k_cache``) and the written caches outputs
(``k_cache_out``) that alias them. A kernel reads the input and writes the output, and
never a position of both (the append writes positions past each sequence's cached
length, which its attention reads from ``k_new``), so the result does not depend on
whether the two are one memory (a device: in place) or the output starts as a copy
(the interpreter).
"""

from __future__ import annotations

from fadsl.errors import UsageError
from fadsl.ir.nodes import Kernel, ParamKind


def check_aliases(kernel: Kernel) -> None:
    """Each alias names an input of the output's type."""
    params = {p.name: p for p in kernel.params}
    for p in kernel.params:
        if p.alias is None:
            continue
        src = params.get(p.alias)
        ok = p.kind is ParamKind.OUT and src is not None and src.kind is ParamKind.IN
        if ok and src is not None and src.type == p.type:
            continue
        got = "" if src is None else f" ({src.kind.value} {src.type})"
        raise UsageError(
            f"`{p.name}` ({p.kind.value} {p.type}) aliases `{p.alias}`{got}: an "
            "in-place output is an fd.Out aliasing an fd.In of the same shape and dtype",
            p.loc,
            hint=f"name an input parameter declared with the dims and dtype of "
            f"`{p.name}`, or drop alias=",
            code="inplace_alias",
        )


def aliased(kernel: Kernel) -> dict[str, str]:
    """In-place outputs of ``kernel``: output name -> input name."""
    return {p.name: p.alias for p in kernel.params if p.alias is not None}
