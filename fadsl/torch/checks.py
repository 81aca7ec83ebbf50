"""The checks of a call of a fadsl operator, made before PyTorch's argument parser or
fadsl's interpreter sees it, so each mistake is a FadslError at the caller's line."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from types import FrameType
from typing import Any

from fadsl.errors import Loc, UsageError
from fadsl.torch.spec import Spec

_FADSL = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_KERNELS = os.path.join(_FADSL, "lib") + os.sep


def caller() -> Loc | None:
    """The user's call: the innermost frame outside fadsl (its kernel library is user
    code) and outside PyTorch, with the call's columns where Python records them."""
    torch = sys.modules.get("torch")
    skip = [_FADSL] + ([os.path.dirname(torch.__file__) + os.sep] if torch else [])
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if path.startswith(_KERNELS) or not path.startswith(tuple(skip)):
            return _loc(frame)
        frame = frame.f_back
    return None


def _loc(frame: FrameType) -> Loc:
    line, col, end = frame.f_lineno, 0, None
    positions = list(frame.f_code.co_positions())
    if 0 <= frame.f_lasti // 2 < len(positions):
        first, last, start, stop = positions[frame.f_lasti // 2]
        if first == line and start is not None:
            col, end = start, (stop if last == line else None)
    return Loc(frame.f_code.co_filename, line, col, end)


def check_arguments(spec: Spec, tensors: Sequence[Any], scalars: Mapping) -> None:
    """As many tensors as the kernel has inputs, and only its scalars as keywords."""
    import torch

    if len(tensors) != len(spec.inputs):
        raise UsageError(
            f"fadsl.torch: `{spec.name}` takes {len(spec.inputs)} tensors "
            f"({', '.join(spec.inputs)}), got {len(tensors)}",
            caller(),
            hint=f"call {spec.name}({', '.join(spec.inputs)}) with one tensor each",
        )
    for name, t in zip(spec.inputs, tensors):
        if not isinstance(t, torch.Tensor):
            raise UsageError(
                f"fadsl.torch: input `{name}` of `{spec.name}` is a "
                f"{type(t).__name__}, not a torch.Tensor",
                caller(),
                hint=f"pass a tensor (torch.from_numpy(...) or torch.as_tensor(...))",
            )
    for name, value in scalars.items():
        if name in spec.derived:  # a block-mask tensor: torch checks its type
            continue
        if name not in spec.scalars:
            known = ", ".join(f"{s}=" for s in spec.scalars) or "none"
            raise UsageError(
                f"fadsl.torch: `{spec.name}` has no scalar `{name}` "
                f"(its scalars: {known})",
                caller(),
                hint="tile constants are fixed at registration: "
                "fadsl.torch.op(kernel, consts={...})",
                code="torch_arguments",
            )
        if value is not None and not _number(value, name in spec.int_scalars):
            kind = "an int" if name in spec.int_scalars else "a number"
            raise UsageError(
                f"fadsl.torch: scalar `{name}` of `{spec.name}` is {value!r}; "
                f"expected {kind} (or None for the kernel's default)",
                caller(),
            )


def _number(value: Any, integral: bool) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (not integral and isinstance(value, float))


def check_tensors(spec: Spec, tensors: Sequence[Any]) -> list[list[int]]:
    """Dtypes, one device, and shapes the kernel reads: the outputs' shapes."""
    for name, want, t in zip(spec.inputs, spec.input_dtypes, tensors):
        got = str(t.dtype).replace("torch.", "")
        if got != want:
            raise UsageError(
                f"fadsl.torch: input `{name}` of `{spec.name}` is {got}, but the "
                f"kernel takes it as {want}",
                caller(),
                hint=f"convert it ({name}.to(torch.{want})), or register the kernel "
                f"for this dtype: fadsl.torch.op(kernel, dtype=...)",
                code="torch_input_dtype",
            )
    devices = {str(t.device) for t in tensors}
    if len(devices) > 1:
        where = ", ".join(f"{n} on {t.device}" for n, t in zip(spec.inputs, tensors))
        raise UsageError(
            f"fadsl.torch: the inputs of `{spec.name}` are on different devices "
            f"({where})",
            caller(),
            hint="move them to one device (.to(q.device))",
            code="torch_devices",
        )
    return spec.output_shapes([list(t.shape) for t in tensors], caller())


def given_shape(spec: Spec, shape: Mapping[str, int]) -> Spec:
    """``spec`` with the shape symbols of ``op(..., shape=)`` fixed: each must be a
    shape symbol of the kernel, a positive int."""
    from dataclasses import replace

    syms = spec.kernel.shape_syms
    for name, value in shape.items():
        if name not in syms or not isinstance(value, int) or value <= 0:
            raise UsageError(
                f"fadsl.torch.op: shape={{{name!r}: {value!r}}}: expected a shape "
                f"symbol of `{spec.name}` and a positive int",
                caller(),
                hint=f"its shape symbols: {', '.join(syms)}",
            )
    return replace(spec, given=tuple(sorted(shape.items())))
