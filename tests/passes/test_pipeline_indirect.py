"""A pipelined load whose block comes through a table read in the loop body (a page of
a block table): the prefetch of iteration j + 1 must read the table at j + 1 itself.

The load's rows also depend on j (a bound, as the tail of a sequence's last page
does), so the pass prefetches it. Before, it issued the load with the body's scalar,
which names iteration j's entry and is not defined yet in the prologue: the IR did not
run, or the prefetched block was the wrong one.
"""

from __future__ import annotations

import numpy as np
import pytest

import fadsl as fd
from fadsl.backends.interp import interpret
from fadsl.ir.types import DType
from fadsl.passes import run_pipeline


@fd.kernel(default_shape=dict(R=6, P=5, D=16))
def gather_rows(
    src: fd.In("P", 16, "D", dtype=fd.f32),
    table: fd.In("R", dtype=fd.i32),
    out: fd.Out(1, 16, "D", dtype=fd.f32),
    stages: int = 2,
):
    for g in fd.grid(1):
        acc = fd.zeros((16, D), fd.f32)
        for j in fd.pipelined(R, stages=stages):
            page = fd.load_scalar(table[j])
            acc = acc + fd.load(src[page, fd.ds(0, 16, 16 * (R - j)), :])
        fd.store(out[g, :, :], acc)


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_prefetched_blocks_read_their_own_table_entry(stages: int) -> None:
    shape = dict(R=6, P=5, D=16)
    kernel = run_pipeline(gather_rows.build({"stages": stages}, DType.F32))
    rng = np.random.default_rng(0)
    src = rng.standard_normal((5, 16, 16)).astype(np.float32)
    table = np.array([3, 0, 4, 4, 1, 2], np.int32)
    out = interpret(kernel, shape, {"src": src, "table": table}).outputs["out"]
    np.testing.assert_allclose(out[0], src[table].sum(axis=0), rtol=1e-5)
