"""Every example in the interpreter against its own reference, fp16 and bf16, with tails;
for the fd.attention examples the example's plain numpy reference must also agree with
the library's built-in reference (two independent statements of the same semantics)."""

from __future__ import annotations

import importlib.util
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from attkit import assert_passes, run

from fadsl.frontend.attention import AttentionKernel
from fadsl.frontend.attention_ref import reference as library_reference

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SHAPES = {
    "causal": dict(B=2, N=2, Sq=200, Skv=150, D=64),
    "sliding_window": dict(B=1, N=2, Sq=700, Skv=650, D=64),
    "alibi": dict(B=1, N=4, Nkv=2, Sq=130, Skv=200, D=64),
    "softcap": dict(B=2, N=2, Sq=100, Skv=170, D=64),
    "gqa": dict(B=1, N=6, Nkv=3, Sq=90, Skv=200, D=64),
    "document_mask": dict(B=1, N=2, Sq=650, Skv=650, D=64),
    "varlen": dict(B=3, N=2, Sq=333, Skv=400, D=64),
    "dropout": dict(B=1, N=2, Sq=150, Skv=190, D=64),
}
TILE = {
    "fa1": dict(causal=True, block_q=64, block_kv=64),
    "fa3": dict(causal=True, block_q=64, block_kv=64),
}


@lru_cache(maxsize=None)
def _example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"fadsl_example_{name}", EXAMPLES / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_attention_example_passes_both_references(name: str, dtype: str) -> None:
    kernel = _example(name).kernel
    assert isinstance(kernel, AttentionKernel)
    r = run(kernel, SHAPES[name], dtype)
    assert_passes(r)  # against the example's own reference
    consts = r.binding.ref_consts()
    mine = kernel.reference(r.inputs, r.binding.shape, consts)
    lib = library_reference(kernel.spec, r.inputs, r.binding.shape, consts)
    for out, ref in mine.items():
        np.testing.assert_allclose(ref, lib[out], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("name", ["fa1", "fa3"])
def test_tile_program_examples_pass(name: str, dtype: str) -> None:
    from fadsl.io import runio
    from fadsl.backends.interp import interpret
    from fadsl.driver.binding import Binding
    from fadsl.ir.types import DType
    from fadsl.passes import run_pipeline

    kdef = getattr(_example(name), name)
    for shape in (
        dict(B=1, N=2, Sq=300, Skv=200, D=64),
        dict(B=2, N=1, Sq=130, Skv=333, D=64),
    ):
        kernel = kdef.build(TILE[name], DType.parse(dtype))
        b = Binding(kernel, shape, {"scale": shape["D"] ** -0.5}, kdef)
        inputs = runio.make_inputs(b, 0)
        result = interpret(run_pipeline(kernel), b.env(), inputs)
        check = runio.check_outputs(b, inputs, result.outputs)
        assert check.passed, [v.line() for v in check.verdicts]
