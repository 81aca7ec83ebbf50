"""The CPU implementation: fadsl's numpy interpreter, through the Python API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def interpret(
    kernel: Any, consts: Mapping[str, Any], dtype: Any, arrays: Mapping[str, Any]
) -> dict[str, Any]:
    """The kernel's outputs by name for these inputs (``fd.interpret``)."""
    import fadsl

    run = getattr(fadsl, "interpret", None)
    if run is not None:
        return dict(run(kernel, consts=dict(consts), dtype=dtype, **arrays))
    return _interpret_with_the_run_command(kernel, consts, dtype, arrays)


def _interpret_with_the_run_command(
    kernel: Any, consts: Mapping[str, Any], dtype: Any, arrays: Mapping[str, Any]
) -> dict[str, Any]:
    """What ``fadsl run`` does, until ``fd.interpret`` (issue 14) is on main."""
    import argparse

    from fadsl.backends.interp.interpreter import interpret as run
    from fadsl.commands import common
    from fadsl.driver.lower import lower
    from fadsl.ir.dims import solve
    from fadsl.ir.expr import isym

    built = kernel.build(
        {k: v for k, v in consts.items() if k in kernel.const_defaults}
    )
    fixed = {isym(n): v for n, v in built.consts if isinstance(v, int)}
    names = [p.name for p in built.inputs]
    syms = [isym(s) for s in built.shape_syms]
    decl = [built.param(n, built.loc).type.shape for n in names]
    shape = solve(syms, decl, [arrays[n].shape for n in names], fixed) or {}
    args = argparse.Namespace(
        sets=[f"{k}={v}" for k, v in consts.items()],
        dtype=dtype,
        shape=",".join(f"{k}={v}" for k, v in shape.items()),
    )
    binding = common.bind(kernel, args)
    low = lower(binding)
    return dict(run(low.ir, binding.env(), dict(arrays)).outputs)
