"""Helpers for IR tests: the FA2 example kernel and the sample corpus."""

from __future__ import annotations

import importlib.util
import sys
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from fadsl.ir.nodes import Kernel
from fadsl.ir.types import DType

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SAMPLES = Path(__file__).resolve().parents[1] / "ir_samples"


@lru_cache(maxsize=None)
def _fa2_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "fadsl_example_fa2", EXAMPLES / "fa2.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=None)
def build_fa2(causal: bool = True, dtype: str = "f16") -> Kernel:
    """The FA2 example's IR with ``causal`` and element dtype ``dtype`` (f16, ...)."""
    kernel: Kernel = _fa2_module().fa2.build({"causal": causal}, DType(dtype))
    return kernel


def sample_paths() -> list[Path]:
    return sorted(SAMPLES.glob("*.fir"))
