"""The FA2 example run by the interpreter against its float64 reference (the tolerance rule, README).

Every case must pass ``fadsl.numerics.compare``: max|out - ref64| within twice the error
of a plain same-precision attention plus the dtype's rounding noise, no NaN. The grid
covers the dtypes, head dims, Sq != Skv (bottom-right causal alignment), tails, sequences
shorter than one block, length 1, several batches and heads, and the IR after the pass
pipeline (queues). Shapes are small so the file runs in seconds.
"""

from __future__ import annotations

import importlib.util
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from fadsl.backends.interp import interpret
from fadsl.ir.expr import evaluate
from fadsl.ir.nodes import Kernel, ParamKind
from fadsl.ir.types import DType
from fadsl.numerics import compare, np_dtype

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
F16, BF16, F32 = DType.F16, DType.BF16, DType.F32


@lru_cache(maxsize=None)
def _fa2() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "fadsl_example_fa2_interp", EXAMPLES / "fa2.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=None)
def _kernel(
    causal: bool, dtype: DType, block_q: int, block_kv: int, passes: bool
) -> Kernel:
    kernel: Kernel = _fa2().fa2.build(
        {"causal": causal, "block_q": block_q, "block_kv": block_kv}, dtype
    )
    if passes:
        from fadsl.passes import run_pipeline

        kernel = run_pipeline(kernel)
    return kernel


def _env(kernel: Kernel, shape: dict[str, int]) -> dict[str, Any]:
    env: dict[str, Any] = dict(shape)
    for name, value in kernel.const_values().items():
        if isinstance(value, int) and not isinstance(value, bool):
            env[name] = value
    for p in kernel.params:
        if p.kind is ParamKind.SCALAR and p.default is not None:
            env[p.name] = float(evaluate(p.default, shape))
    return env


def _inputs(shape: dict[str, int], dtype: DType, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    b, n, sq, skv, d = (shape[k] for k in ("B", "N", "Sq", "Skv", "D"))
    sizes = {"q": (b, n, sq, d), "k": (b, n, skv, d), "v": (b, n, skv, d)}
    return {
        name: rng.standard_normal(s).astype(np_dtype(dtype))
        for name, s in sizes.items()
    }


def _check(
    shape: dict[str, int],
    dtype: DType,
    causal: bool,
    block_q: int = 128,
    block_kv: int = 128,
    passes: bool = False,
    seed: int = 0,
) -> Any:
    kernel = _kernel(causal, dtype, block_q, block_kv, passes)
    inputs = _inputs(shape, dtype, seed)
    result = interpret(kernel, _env(kernel, shape), inputs)
    out = result.outputs["o"]
    assert out.dtype == np_dtype(dtype)
    consts = kernel.const_values()
    ref = _fa2().reference(inputs, shape, consts)["o"]
    same = _fa2().reference(inputs, shape, consts, dtype)["o"]
    verdict = compare("o", out, ref, same, dtype)
    assert verdict.passed, verdict.line()
    return result


def _shape(b: int, n: int, sq: int, skv: int, d: int) -> dict[str, int]:
    return {"B": b, "N": n, "Sq": sq, "Skv": skv, "D": d}


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 96, 128, 256])
@pytest.mark.parametrize("dtype", [F16, BF16, F32], ids=lambda t: t.value)
def test_dtypes_and_head_dims(dtype: DType, d: int, causal: bool) -> None:
    """Sq != Skv, both with tails: 3 Q blocks of 64 over 150 rows, 3 KV blocks of 64."""
    _check(_shape(1, 2, 150, 190, d), dtype, causal, block_q=64, block_kv=64)


SHAPES = [
    pytest.param(_shape(1, 2, 300, 200, 64), id="sq>skv-tails"),
    pytest.param(_shape(1, 1, 200, 300, 64), id="sq<skv-tails"),
    pytest.param(_shape(1, 2, 100, 90, 64), id="shorter-than-a-block"),
    pytest.param(_shape(1, 1, 1, 1, 64), id="length-1"),
    pytest.param(_shape(1, 1, 1, 257, 64), id="one-query"),
    pytest.param(_shape(2, 3, 256, 256, 64), id="batches-heads-exact"),
    pytest.param(_shape(2, 1, 130, 5, 96), id="few-keys"),
]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", SHAPES)
def test_shapes(shape: dict[str, int], causal: bool) -> None:
    _check(shape, F16, causal)


@pytest.mark.parametrize("dtype", [BF16, F32], ids=lambda t: t.value)
@pytest.mark.parametrize("shape", [SHAPES[0], SHAPES[3], SHAPES[5]])
def test_shapes_other_dtypes(shape: dict[str, int], dtype: DType) -> None:
    _check(shape, dtype, causal=True)


@pytest.mark.parametrize("blocks", [(64, 32), (32, 64), (16, 16)], ids=str)
def test_block_sizes(blocks: tuple[int, int]) -> None:
    _check(_shape(1, 2, 100, 120, 64), F16, True, *blocks)


def test_causal_skips_blocks_above_the_diagonal() -> None:
    """Skv = Sq = 256 in blocks of 64: Q block i visits KV blocks 0..i only."""
    res = _check(_shape(1, 2, 256, 256, 64), F16, True, block_q=64, block_kv=64)
    tasks, blocks = 2 * 4, 4
    assert res.loop_stats["j"] == (2 * (1 + 2 + 3 + 4), tasks * blocks)
    full = _check(_shape(1, 2, 256, 256, 64), F16, False, block_q=64, block_kv=64)
    assert full.loop_stats["j"] == (tasks * blocks, tasks * blocks)


def test_rows_that_see_no_key_are_zero() -> None:
    """Bottom-right causal with Sq > Skv: the first Sq - Skv query rows see nothing."""
    shape = _shape(1, 1, 200, 70, 64)
    kernel = _kernel(True, F16, 128, 128, False)
    out = interpret(kernel, _env(kernel, shape), _inputs(shape, F16, 3)).outputs["o"]
    assert (out[0, 0, :130] == 0).all()
    assert np.isfinite(out).all()


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shape", [SHAPES[0], SHAPES[2], SHAPES[5]])
def test_after_the_pass_pipeline(shape: dict[str, int], causal: bool) -> None:
    """The pipelined IR (loads through double-buffered queues) computes the same."""
    _check(shape, F16, causal, passes=True)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_kv_tiles_are_shared_by_the_q_blocks_of_a_head(causal: bool) -> None:
    """A K/V tile (loaded directly or through a queue) is held once per (b, h), not once
    per Q block: both dots see it with a batch axis of 1 along the Q-block axis."""
    from fadsl.backends.interp import impls
    from fadsl.ir.nodes import Dot

    seen: list[tuple[int, ...]] = []
    inner = impls.IMPLS[Dot]

    def spy(op: Any, fr: Any) -> Any:
        seen.append(fr.f32(op.b).shape[: fr.k])
        return inner(op, fr)

    impls.IMPLS[Dot] = spy
    try:
        for passes in (False, True):
            _check(_shape(1, 2, 256, 256, 64), F16, causal, 64, 64, passes=passes)
    finally:
        impls.IMPLS[Dot] = inner
    assert seen and all(shape[2] == 1 for shape in seen), seen
