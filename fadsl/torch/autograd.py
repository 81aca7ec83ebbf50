"""Autograd of a fadsl operator through its backward kernel.

The backward kernel's inputs are found by name: a forward input (``q``), a forward
output (``o``, ``lse``), or ``d`` + a forward output (``do``: the gradient flowing in).
Its outputs ``d`` + a forward input (``dq``) are that input's gradient; inputs without
one (``slopes``, ``seed``) get None.
"""

from __future__ import annotations

from typing import Any


def attach(fwd: Any, bwd: Any, lib: Any) -> None:
    import torch

    ins, outs = fwd.spec.inputs, fwd.spec.outputs
    for name in bwd.spec.inputs:
        if name not in ins and name not in outs and name[1:] not in outs:
            from fadsl.errors import UsageError
            from fadsl.torch.checks import caller

            raise UsageError(
                f"fadsl.torch.op: backward kernel `{bwd.name}` reads `{name}`, which is "
                f"neither an input nor an output of `{fwd.name}` nor d<output>",
                caller(),
                hint="pass the backward kernel of this forward kernel (same inputs, "
                "outputs and options)",
                notes=[
                    f"`{fwd.name}` takes {', '.join(ins)} and returns {', '.join(outs)}",
                    f"`{bwd.name}` takes {', '.join(bwd.spec.inputs)}",
                ],
                code="torch_backward_mismatch",
            )

    def setup_context(
        ctx: Any, inputs: tuple, output: Any, keyword_only_inputs: Any = None
    ) -> None:
        result = output if isinstance(output, tuple) else (output,)
        ctx.save_for_backward(*inputs[: len(ins)], *result)
        given = dict(keyword_only_inputs or {})
        ctx.scalars = {n: given.get(n) for n in bwd.spec.scalars}

    def backward(ctx: Any, *grads: Any) -> tuple:
        saved = ctx.saved_tensors
        have = dict(zip(ins, saved[: len(ins)]))
        have.update(zip(outs, saved[len(ins) :]))
        for name, g in zip(outs, grads):
            have["d" + name] = g if g is not None else torch.zeros_like(have[name])
        result = bwd(*(have[n].contiguous() for n in bwd.spec.inputs), **ctx.scalars)
        result = result if isinstance(result, tuple) else (result,)
        by_name = dict(zip(bwd.spec.outputs, result))
        return tuple(by_name.get("d" + n) for n in ins)

    torch.library.register_autograd(
        f"fadsl::{fwd.name}", backward, setup_context=setup_context, lib=lib
    )
    fwd.backward = bwd
