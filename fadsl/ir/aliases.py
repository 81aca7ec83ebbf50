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
        if p.kind is not ParamKind.OUT or src is None or src.kind is not ParamKind.IN:
            raise UsageError(
                f"`{p.name}` aliases `{p.alias}`: an in-place output must be an "
                "output aliasing an input of the same kernel",
                p.loc,
                hint="give alias= to an fd.Out, naming an fd.In parameter",
                code="inplace_alias",
            )
        if src.type != p.type:
            raise UsageError(
                f"`{p.name}` ({p.type}) aliases `{p.alias}` ({src.type}): an "
                "in-place output has its input's shape and dtype",
                p.loc,
                hint=f"declare `{p.name}` with the dims and dtype of `{p.alias}`",
                code="inplace_alias",
            )


def aliased(kernel: Kernel) -> dict[str, str]:
    """In-place outputs of ``kernel``: output name -> input name."""
    return {p.name: p.alias for p in kernel.params if p.alias is not None}
