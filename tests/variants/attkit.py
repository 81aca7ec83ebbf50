"""Running ``fd.attention`` kernels in the interpreter the way ``fadsl run`` does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fadsl import runio
from fadsl.backends.interp import InterpResult, interpret
from fadsl.commands.common import Binding
from fadsl.ir.types import DType
from fadsl.passes import run_pipeline

SMALL = {"block_q": 64, "block_kv": 64}


@dataclass
class Run:
    binding: Binding
    inputs: dict[str, np.ndarray]
    result: InterpResult
    check: Any

    @property
    def out(self) -> dict[str, np.ndarray]:
        return self.result.outputs


def bind(
    kdef: Any,
    shape: dict[str, int],
    dtype: str = "fp16",
    sets: dict[str, Any] | None = None,
) -> Binding:
    kernel = kdef.build(dict(SMALL, **(sets or {})), DType.parse(dtype))
    full = dict(shape)
    full.setdefault("Nkv", full["N"])
    kdef.check_shape(full)
    full = {s: full[s] for s in kernel.shape_syms}
    scale = kdef.spec.scale if kdef.spec.scale is not None else full["D"] ** -0.5
    return Binding(kernel, full, {"scale": scale}, kdef)


def run(
    kdef: Any,
    shape: dict[str, int],
    dtype: str = "fp16",
    sets: dict[str, Any] | None = None,
    seed: int = 0,
    inputs: dict[str, np.ndarray] | None = None,
    passes: bool = True,
) -> Run:
    """Interpret ``kdef`` on seeded (or given) inputs and check it against float64."""
    b = bind(kdef, shape, dtype, sets)
    data = runio.make_inputs(b, seed) if inputs is None else inputs
    kernel = run_pipeline(b.kernel) if passes else b.kernel
    result = interpret(kernel, b.env(), data)
    return Run(b, data, result, runio.check_outputs(b, data, result.outputs))


def assert_passes(r: Run) -> None:
    bad = [v.line() for v in r.check.verdicts if not v.passed]
    assert r.check.passed and not bad, bad
