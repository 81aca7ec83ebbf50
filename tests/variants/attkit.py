"""Running ``fd.attention`` kernels in the interpreter the way ``fadsl run`` does."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fadsl.io import runio
from fadsl.backends.interp import InterpResult, interpret
from fadsl.driver.binding import Binding
from fadsl.ir.types import DType
from fadsl.passes import run_pipeline

ROOT = Path(__file__).resolve().parents[2]
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


def symbol_values(kernel: Any, shape: dict[str, int]) -> dict[str, int]:
    """The kernel's shape symbols from ``shape``; the value head dim Dv defaults to D
    (docs/variants.md), as ``--shape`` and ``shape=`` default it."""
    full = dict(shape)
    if "D" in full:
        full.setdefault("Dv", full["D"])
    return {s: full[s] for s in kernel.shape_syms}


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
    full = symbol_values(kernel, full)
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


NEEDS_GXX = pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("cmake") is None,
    reason="needs g++ and cmake",
)
"""Mark of a test that builds C++ with the CPU runtime (add ``cpu_runtime`` too)."""


def sim_source(
    source: str, shape: dict[str, int], folder: Path
) -> tuple[dict[str, np.ndarray], dict]:
    """``fadsl sim`` of a kernel file's text (blocks of 64, BNSD, fp16) in ``folder``.

    Asserts that it passes the tolerance rule and agrees with the interpreter to four
    fp16 units; returns the run folder's q, k, v, o (shaped) and its meta.json.
    """
    src = folder / "kernel.py"
    src.write_text(source)
    out = folder / "sim"
    text = ",".join(f"{k}={v}" for k, v in shape.items())
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "-o", str(out)]
    cmd += ["--shape", text, "--set", "block_q=64", "--set", "block_kv=64"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    assert meta["vs_interpreter"]["o"]["max_abs_diff"] <= 4 * 2.0**-10
    b, n, sq, skv, d = (shape[s] for s in ("B", "N", "Sq", "Skv", "D"))
    dims = {"q": (b, n, sq, d), "k": (b, n, skv, d), "v": (b, n, skv, d)}
    dims["o"] = dims["q"]
    data = {
        name: np.fromfile(out / f"{name}.bin", np.float16).reshape(s)
        for name, s in dims.items()
    }
    return data, meta
