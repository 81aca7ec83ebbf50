"""sim's comparison with the interpreter (``backends/sim/run.compare_with_interpreter``)."""

from __future__ import annotations

import warnings

import numpy as np

import fadsl as fd
from fadsl.backends.interp.interpreter import interpret
from fadsl.backends.sim.run import compare_with_interpreter
from fadsl.driver.binding import API, bind
from fadsl.driver.lower import lower
from fadsl.io.runio import make_inputs


def test_an_lse_row_of_minus_inf_compares_without_a_numpy_warning() -> None:
    """Issue 28: `fadsl sim` printed numpy's `RuntimeWarning: invalid value
    encountered in subtract` when an LSE row was -inf in both results (a causal
    query row that keeps no key): -inf - -inf was computed before being masked."""
    kernel = fd.attention(name="sim_cmp_causal", causal=True, return_lse=True)
    shape = dict(B=1, N=1, Nkv=1, Sq=32, Skv=16, D=64, Dv=64)
    binding = bind(kernel, lambda k, d: dict(shape), spelling=API)
    low = lower(binding)
    inputs = make_inputs(binding, 0)
    outputs = interpret(low.ir, binding.env(), inputs).outputs
    assert np.isneginf(outputs["lse"]).any()  # rows 0..15 keep no key
    wrong = dict(outputs, lse=outputs["lse"].copy())
    wrong["lse"][0, 0, -1] = -np.inf  # a finite row the sim got as -inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = compare_with_interpreter(low, inputs, outputs)
        differs = compare_with_interpreter(low, inputs, wrong)
    assert same["lse"]["nonfinite_mismatch"] == 0 and same["lse"]["max_abs_diff"] == 0
    assert differs["lse"]["nonfinite_mismatch"] == 1
