"""In-place outputs through ``fadsl.torch`` (fadsl/ir/aliases.py).

``torch.ops.fadsl.<name>`` stays functional: it returns the updated caches as the
outputs ``k_cache_out`` / ``v_cache_out`` (a custom op that returns its results traces
under ``torch.compile``). Calling the ``TorchOp`` itself then copies each in-place
output into the tensor the caller passed for its input, as ``flash_attn_with_kvcache``
updates ``k_cache`` / ``v_cache``, and returns every output as well."""

from __future__ import annotations

from typing import Any

from fadsl.ir.aliases import aliased


def write_back(spec: Any, tensors: tuple, result: Any) -> Any:
    """Copy each in-place output of ``result`` into its input among ``tensors``."""
    pairs = aliased(spec.kernel)
    if not pairs:
        return result
    import torch

    outs = result if isinstance(result, tuple) else (result,)
    with torch.no_grad():
        for out_name, in_name in pairs.items():
            if in_name in spec.inputs[: len(tensors)]:
                target = tensors[spec.inputs.index(in_name)]
                target.copy_(outs[spec.outputs.index(out_name)])
    return result
