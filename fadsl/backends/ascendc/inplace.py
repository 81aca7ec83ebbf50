"""In-place outputs (``fadsl/ir/aliases.py``) in the generated project: not yet.

On a device an in-place output is its input's memory; the generated host code
allocates every output itself and would have to hand the kernel the input's buffer
(and ``gen_data`` / ``verify_result`` to compare it as an output). Until it does, a
kernel with one is refused here rather than generated with an output that would start
as garbage."""

from __future__ import annotations

from fadsl.errors import BackendError
from fadsl.ir.aliases import aliased
from fadsl.ir.nodes import Kernel


def refuse_inplace(kernel: Kernel) -> None:
    pairs = aliased(kernel)
    if not pairs:
        return
    out, src = next(iter(pairs.items()))
    raise BackendError(
        f"kernel `{kernel.name}` updates `{src}` in place (output `{out}`); the "
        "Ascend C project does not generate in-place outputs yet",
        kernel.loc,
        hint="run it with the interpreter (fd.interpret / fadsl run); fadsl check "
        "proves its buffers fit",
        code="inplace_alias",
    )
