"""fadsl kernels as PyTorch operators (extra ``fadsl[torch]``; docs/pytorch.md).

``fadsl.torch.op(forward, backward=None)`` registers ``torch.ops.fadsl.<name>``, a
``torch.library`` custom operator taking and returning tensors:

- CPU: fadsl's numpy interpreter (golden outputs in a PyTorch test);
- Meta / fake tensors: the output shapes and dtypes the kernel declares, so functions
  calling it trace under ``torch.compile``;
- autograd, with ``backward``: the backward kernel, run the same way;
- PrivateUse1 (an NPU through torch_npu), only when torch_npu imports: the CANN
  operator package ``fadsl compile`` writes under ``op/``, through aclnn. UNVERIFIED.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fadsl.errors import UsageError
from fadsl.torch.spec import Spec, given_scalars, spec_of

_LIBRARY: list[Any] = []
_OPS: dict[str, TorchOp] = {}


class TorchOp:
    """A registered operator; calling it calls ``torch.ops.fadsl.<name>``."""

    def __init__(self, spec: Spec, kernel: Any, consts: dict, dtype: Any) -> None:
        self.spec = spec
        self.kernel = kernel
        self.consts = consts
        self.dtype = dtype
        self.backward: TorchOp | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def __call__(self, *tensors: Any, block_mask: Any = None, **keywords: Any) -> Any:
        """``op(q, k, v, scale=...)``; ``block_mask=`` (what ``fd.create_block_mask``
        returns) gives the block-mask tensors, which are otherwise computed from the
        mods."""
        import torch

        from fadsl.torch.checks import check_arguments

        check_arguments(self.spec, tensors, keywords)
        if block_mask is not None:
            keywords.update(self.block_mask_tensors(block_mask, tensors))
        from fadsl.torch.inplace import write_back

        result = getattr(torch.ops.fadsl, self.name)(*tensors, **keywords)
        return write_back(self.spec, tensors, result)  # in-place outputs (append_kv)

    def block_mask_tensors(self, block_mask: Any, tensors: tuple) -> dict[str, Any]:
        """The kernel's block-mask inputs from ``block_mask``, on the inputs' device."""
        import torch

        from fadsl.torch.checks import caller

        consts = {**self.kernel.const_defaults, **self.consts}
        shape = self.block_shape(tensors)
        made = self.kernel.block_mask_inputs(block_mask, shape, consts, caller())
        return {n: torch.from_numpy(a).to(tensors[0].device) for n, a in made.items()}

    def block_shape(self, tensors: tuple) -> dict[str, int]:
        """The kernel's shape symbols read from its positional input tensors."""
        from fadsl.torch.checks import caller, check_tensors

        check_tensors(self.spec, tensors)
        env = self.spec.symbols([list(t.shape) for t in tensors], caller())
        syms = set(self.spec.kernel.shape_syms)
        return {str(k): int(v) for k, v in env.items() if str(k) in syms}

    def split(self, args: tuple, keywords: dict) -> tuple[tuple, dict[str, Any]]:
        """(required tensors, the block-mask tensors given) of a dispatched call,
        which passes the optional tensors positionally or by keyword."""
        n = len(self.spec.inputs)
        blocks = dict(zip(self.spec.derived, args[n:]))
        blocks.update({k: v for k, v in keywords.items() if k in self.spec.derived})
        return args[:n], {k: v for k, v in blocks.items() if v is not None}

    def run_cpu(self, *args: Any, **keywords: Any) -> Any:
        from fadsl.torch.checks import check_tensors
        from fadsl.torch.convert import from_numpy, to_numpy
        from fadsl.torch.interp import interpret

        tensors, blocks = self.split(args, keywords)
        check_tensors(self.spec, tensors)
        arrays = {n: to_numpy(t) for n, t in zip(self.spec.inputs, tensors)}
        arrays.update({n: to_numpy(t) for n, t in blocks.items()})
        consts = {**self.consts, **given_scalars(self.spec, keywords)}
        sizes = self.block_shape(tensors) if self.spec.given else None
        out = interpret(self.kernel, consts, self.dtype, arrays, sizes)
        pairs = zip(self.spec.outputs, self.spec.output_dtypes)
        result = tuple(from_numpy(out[n], dt) for n, dt in pairs)
        return result[0] if len(result) == 1 else result

    def run_fake(self, *args: Any, **keywords: Any) -> Any:
        import torch

        from fadsl.torch.checks import check_tensors

        tensors, _ = self.split(args, keywords)
        shapes = check_tensors(self.spec, tensors)
        result = tuple(
            tensors[0].new_empty(s, dtype=getattr(torch, dt))
            for s, dt in zip(shapes, self.spec.output_dtypes)
        )
        return result[0] if len(result) == 1 else result


def op(
    forward: Any,
    backward: Any = None,
    *,
    consts: Mapping[str, Any] | None = None,
    dtype: Any = None,
    shape: Mapping[str, int] | None = None,
) -> TorchOp:
    """Register ``forward`` (what ``@fd.kernel`` or ``fd.attention`` returns) as
    ``torch.ops.fadsl.<name>``; with ``backward`` (e.g. ``fd.attention_backward``),
    autograd runs it. ``consts`` fixes tile constants (as ``--set``); runtime scalars
    are keyword arguments of each call. ``shape`` fixes shape symbols no input's dims
    hold (``shape={"Dv": 512}`` for MLA with ``v_from_k``). Registering the same
    kernel again returns the operator already registered."""
    _require_torch()
    fwd = _register(forward, consts, dtype, shape)
    if backward is not None and fwd.backward is None:
        from fadsl.torch.autograd import attach

        attach(fwd, _register(backward, consts, dtype))
    return fwd


def _require_torch() -> None:
    from fadsl.torch.checks import caller

    try:
        import torch  # noqa: F401
    except ImportError:
        raise UsageError(
            "fadsl.torch needs PyTorch, which is not installed",
            caller(),
            hint="pip install 'fadsl[torch]' (a CPU build is enough off the NPU)",
        ) from None


def _register(
    kernel: Any,
    consts: Mapping[str, Any] | None,
    dtype: Any,
    shape: Mapping[str, int] | None = None,
) -> TorchOp:
    import torch

    import fadsl
    from fadsl.torch.checks import caller

    if not isinstance(kernel, fadsl.KernelDef):
        raise UsageError(
            f"fadsl.torch.op: expected a kernel, got {type(kernel).__name__}",
            caller(),
            hint="pass what @fd.kernel or fd.attention(...) returns",
        )
    known = _OPS.get(kernel.name)
    if known is not None:
        if known.kernel is not kernel:
            raise UsageError(
                f"fadsl.torch.op: an operator fadsl::{kernel.name} is already "
                "registered for another kernel",
                caller(),
                hint="give each kernel its own name (torch keeps operators per process)",
            )
        return known
    tiles = {k: v for k, v in (consts or {}).items() if k in kernel.const_defaults}
    derived = tuple(getattr(kernel, "derived", ()) or ())
    spec = spec_of(kernel.build(tiles, _dtype(dtype)), caller(), derived)
    if shape:
        from fadsl.torch.checks import given_shape

        spec = given_shape(spec, shape)
    _check_consts(spec, kernel, consts or {})
    if not _LIBRARY:
        _LIBRARY.append(torch.library.Library("fadsl", "FRAGMENT"))
    lib = _LIBRARY[0]
    made = TorchOp(spec, kernel, dict(consts or {}), dtype)
    lib.define(spec.schema)
    lib.impl(spec.name, made.run_cpu, "CPU")
    torch.library.register_fake(f"fadsl::{spec.name}", made.run_fake, lib=lib)
    from fadsl.torch.autograd import register

    register(made, lib)
    from fadsl.torch.npu import register_npu

    register_npu(made, lib)
    _OPS[kernel.name] = made
    return made


def _check_consts(spec: Spec, kernel: Any, consts: Mapping[str, Any]) -> None:
    """Every name of ``consts`` is a tile constant or a scalar of the kernel."""
    from fadsl.torch.checks import caller

    known = [*kernel.const_defaults, *spec.scalars]
    shown = [n for n in known if isinstance(kernel.const_defaults.get(n, 0), int)]
    for name in consts:
        if name not in known:
            raise UsageError(
                f"fadsl.torch.op: `{kernel.name}` has no constant or scalar `{name}`",
                caller(),
                hint=f"its constants and scalars: {', '.join(shown) or 'none'}",
                code="torch_register_consts",
            )


def _dtype(dtype: Any) -> Any:
    if dtype is None:
        return None
    from fadsl.ir.types import DType
    from fadsl.torch.checks import caller

    if isinstance(dtype, DType):
        return dtype
    try:
        return DType.parse(str(dtype))
    except ValueError:
        raise UsageError(
            f"fadsl.torch.op: dtype={dtype!r} is no dtype fadsl knows",
            caller(),
            hint="use fp16, bf16 or fp32",
        ) from None
