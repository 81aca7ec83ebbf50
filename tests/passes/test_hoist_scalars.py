"""hoist_scalars (issue 28): a scalar read whose index does not depend on its loop is
made once per task, before the loop, not in every KV block."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import fadsl as fd
from fadsl.driver.source import load_source, select
from fadsl.ir import nodes as ir
from fadsl.passes import hoist_scalars, run_pipeline

ROOT = Path(__file__).resolve().parents[2]


def _kernel(example: str) -> ir.Kernel:
    return select(load_source(str(ROOT / "examples" / example)), None).build({}, None)


def _reads_in_loops(body: tuple[ir.Op, ...], loops: tuple[str, ...] = ()) -> dict:
    """name -> (the loops enclosing it, its index names) of every load_scalar."""
    out: dict = {}
    for op in body:
        if isinstance(op, ir.LoadScalar):
            names = set().union(*(i.free_symbols for i in op.index))
            out[op.name] = (loops, {s.name for s in names})
        elif isinstance(op, ir.For):
            out.update(_reads_in_loops(op.body, loops + (op.var,)))
        elif isinstance(op, ir.Grid):
            out.update(_reads_in_loops(op.body, loops))
    return out


def test_the_alibi_slope_is_read_once_per_task() -> None:
    """`slopes[h]` sat in the KV loop (`slopesGm.GetValue(h)` in every block)."""
    reads = _reads_in_loops(run_pipeline(_kernel("alibi.py")).body)
    slopes = [v for n, v in reads.items() if n.startswith("slopes")]
    assert slopes == [((), {"h"})]
    text = (ROOT / "generated" / "alibi" / "alibi_kernel.cpp").read_text()
    # once per task on the cube and on the vector side (it was also in every KV
    # loop of both: four reads in the text, two per KV block at run time)
    assert text.count("slopesGm.GetValue(h)") == 2
    assert text.index("slopesGm.GetValue(h)") < text.index("for (int64_t j")


def test_reads_that_depend_on_the_loop_stay_in_it() -> None:
    """document_mask's block indices name the KV loop's variable: they stay."""
    before = _reads_in_loops(_kernel("document_mask.py").body)
    after = _reads_in_loops(run_pipeline(_kernel("document_mask.py")).body)
    for name, (loops, index) in before.items():
        if set(loops) & index:
            assert after[name][0] == loops, name


def test_an_invariant_read_leaves_a_plain_loop_and_computes_the_same() -> None:
    @fd.kernel(dtype="fp32", default_shape=dict(N=4, S=64))
    def writes(
        x: fd.In("N", "S", dtype=fd.f32),
        w: fd.In("N", dtype=fd.f32),
        y: fd.Out("N", "S", dtype=fd.f32),
        block: int = 16,
    ):
        for h in fd.grid(N):
            for j in range(fd.cdiv(S, block)):
                t = fd.load(x[h, fd.ds(j * block, block)])
                fd.store(y[h, fd.ds(j * block, block)], t * fd.load_scalar(w[h]))

    kernel = writes.build({}, None)
    moved = hoist_scalars.run(kernel)
    assert [v[0] for v in _reads_in_loops(moved.body).values()] == [()]
    out = fd.interpret(
        writes, x=np.ones((4, 64), np.float32), w=np.arange(4, dtype=np.float32)
    )
    assert np.array_equal(
        out["y"], np.repeat(np.arange(4, dtype=np.float32), 64).reshape(4, 64)
    )
