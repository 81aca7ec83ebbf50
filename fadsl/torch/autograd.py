"""Autograd of a fadsl operator through its backward kernel.

Every operator gets an autograd kernel when it is registered (``register``), so that a
call on inputs that require grad records a node; ``.backward()`` through an operator
that has no backward kernel then raises a FadslError naming how to attach one, instead
of leaving the inputs' ``.grad`` None (PyTorch's fallback only warns). ``attach`` gives
the operator its backward kernel, read when ``.backward()`` runs.

The backward kernel's inputs are found by name: a forward input (``q``), a forward
output (``o``, ``lse``), or ``d`` + a forward output (``do``: the gradient flowing in).
Its outputs ``d`` + a forward input (``dq``) are that input's gradient; inputs without
one (``slopes``, ``seed``) get None.
"""

from __future__ import annotations

from typing import Any

NO_GRADIENT = frozenset({"max_scores"})
"""Outputs without a gradient (FlexAttention's max_scores): autograd marks them."""


def attach(fwd: Any, bwd: Any) -> None:
    """Check that ``bwd`` reads only what ``fwd`` has, then make it ``fwd``'s backward."""
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
    fwd.backward = bwd


def register(fwd: Any, lib: Any) -> None:
    """Register ``fwd``'s autograd: its backward kernel, or an error without one."""
    import torch

    ins, outs = fwd.spec.inputs, fwd.spec.outputs

    def setup_context(
        ctx: Any, inputs: tuple, output: Any, keyword_only_inputs: Any = None
    ) -> None:
        result = output if isinstance(output, tuple) else (output,)
        ctx.save_for_backward(*inputs[: len(ins)], *result)
        fixed = [t for n, t in zip(outs, result) if n in NO_GRADIENT]
        if fixed:
            ctx.mark_non_differentiable(*fixed)
        ctx.scalars = dict(keyword_only_inputs or {})
        ctx.blocks = dict(zip(fwd.spec.derived, inputs[len(ins) :]))

    def backward(ctx: Any, *grads: Any) -> tuple:
        bwd = fwd.backward
        if bwd is None:
            _no_backward(fwd)
        saved = ctx.saved_tensors
        have = dict(zip(ins, saved[: len(ins)]))
        have.update(zip(outs, saved[len(ins) :]))
        for name, g in zip(outs, grads):
            have["d" + name] = g if g is not None else torch.zeros_like(have[name])
        scalars = {n: ctx.scalars.get(n) for n in bwd.spec.scalars}
        blocks = backward_blocks(fwd, bwd, ctx.blocks, have)
        result = bwd(
            *(have[n].contiguous() for n in bwd.spec.inputs), **scalars, **blocks
        )
        result = result if isinstance(result, tuple) else (result,)
        by_name = dict(zip(bwd.spec.outputs, result))
        grads_in = tuple(by_name.get("d" + n) for n in ins)
        return grads_in + (None,) * len(fwd.spec.derived)

    torch.library.register_autograd(
        f"fadsl::{fwd.name}", backward, setup_context=setup_context, lib=lib
    )


def backward_blocks(
    fwd: Any, bwd: Any, blocks: dict[str, Any], have: dict[str, Any]
) -> dict[str, Any]:
    """The backward's block mask (Q blocks per KV block) transposed from the block
    mask the forward was given; {} when it was not given (the backward kernel then
    computes it from the mods)."""
    if not bwd.spec.derived or not blocks or any(v is None for v in blocks.values()):
        return {}
    from fadsl.torch.blocks import transposed_lists

    shape = fwd.block_shape(tuple(have[n] for n in fwd.spec.inputs))
    consts = {**fwd.kernel.const_defaults, **fwd.consts}
    return transposed_lists(blocks, int(consts["block_q"]), shape["Sq"])


def _no_backward(fwd: Any) -> None:
    from fadsl.errors import UsageError
    from fadsl.torch.checks import caller

    raise UsageError(
        f"fadsl.torch: `.backward()` through `{fwd.name}`, which was registered "
        "without a backward kernel, so it cannot compute the gradients of its inputs "
        f"({', '.join(fwd.spec.inputs)})",
        caller(),
        hint="register the forward kernel with its backward kernel: "
        "fadsl.torch.op(kernel, backward=fd.attention_backward(...)) with the "
        "forward's options; or call it on tensors that do not require grad "
        "(.detach(), torch.no_grad())",
        code="torch_no_backward",
    )
