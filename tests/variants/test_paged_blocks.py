"""A paged KV block that spans several pages (``block_kv`` = 2 or 4 pages of 128), in
the interpreter against the float64 reference that gathers each sequence's pages
itself (``attention_ref``), and the rules around it: pages past a sequence's last page
are not read (a poisoned table tail, columns past the table's end), the values do not
depend on the block, a block that is not whole pages is refused and never tuned.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fadsl as fd
from fadsl.backends.interp import interpret
from fadsl.driver.binding import Binding
from fadsl.io import runio
from fadsl.io.input_checks import check_index_inputs
from fadsl.ir.types import DType
from fadsl.passes import run_pipeline
from attkit import symbol_values

PAGE = 128
SHAPE = dict(B=4, N=32, Nkv=8, Sq=1, D=128, Pages=64, MaxPages=8)
LENGTHS = [300, 1, 128, 517]  # 517 = 4 pages + 5 keys: a last block of 1 page of 4


def _kernel(**kw: Any) -> Any:
    return fd.attention(name="paged", paged_kv=True, page_size=PAGE, **kw)


def _inputs(shape: dict[str, int], lengths: list[int], poison: int = -7) -> dict:
    """Pages dealt in a shuffled order; every column a sequence does not use holds
    ``poison`` (a page that does not exist)."""
    rng = np.random.default_rng(1)
    b, mp = shape["B"], shape["MaxPages"]
    table = rng.permutation(shape["Pages"])[: b * mp].reshape(b, mp)
    used = np.arange(mp)[None, :] < -(-np.array(lengths)[:, None] // PAGE)
    table = np.where(used, table, poison).astype(np.int32)
    return {"block_table": table, "seqlens_kv": np.array(lengths, np.int32)}


def run(kdef: Any, shape: dict[str, int], given: dict, **consts: int) -> Any:
    kernel = kdef.build({"block_q": 16, **consts}, DType.F16)
    full = symbol_values(kernel, shape)
    b = Binding(kernel, full, {"scale": shape["D"] ** -0.5}, kdef)
    data = runio.make_inputs(b, 0)
    data.update(given)
    check_index_inputs(b, data)
    out = interpret(run_pipeline(kernel), b.env(), data).outputs
    return out, runio.check_outputs(b, data, out)


def _passes(check: Any) -> None:
    assert check.passed, [v.line() for v in check.verdicts if not v.passed]


CASES = [
    dict(causal=True),  # packed GQA heads, BNSD
    dict(causal=False, layout="BSND", return_lse=True, pack_gqa=False),
    dict(causal=True, return_lse=True),
]


@pytest.mark.parametrize("splits", [1, 3])
@pytest.mark.parametrize("sq", [1, 4])
@pytest.mark.parametrize("block_kv", [256, 512])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_blocks_of_several_pages_pass_the_tolerance_rule(
    case: int, block_kv: int, sq: int, splits: int
) -> None:
    shape = dict(SHAPE, Sq=sq)
    given = _inputs(shape, LENGTHS)
    out, check = run(
        _kernel(**CASES[case]), shape, given, block_kv=block_kv, kv_splits=splits
    )
    _passes(check)
    assert np.isfinite(out["o"].astype(np.float32)).all()


def test_the_block_changes_no_value_beyond_f32_rounding() -> None:
    """4 pages per block against 1: the same online softmax over other block edges."""
    shape = dict(SHAPE, Sq=4)
    given = _inputs(shape, LENGTHS)
    kdef = _kernel(causal=True, return_lse=True)
    one, _ = run(kdef, shape, given)
    four, _ = run(kdef, shape, given, block_kv=512, kv_splits=3)
    np.testing.assert_allclose(
        four["o"].astype(np.float32), one["o"].astype(np.float32), atol=2e-3
    )
    np.testing.assert_allclose(four["lse"], one["lse"], rtol=1e-5)


def test_pages_past_a_sequences_last_are_not_read() -> None:
    """MaxPages = 6 and 4 pages per block: the last block of a full sequence would
    reach columns 6 and 7, past the table's end, and the others' last blocks reach
    columns holding no page. Reading any of them faults; none is read."""
    shape = dict(SHAPE, MaxPages=6)
    lengths = [517, 300, 1, 768]
    given = _inputs(shape, lengths, poison=-1)
    _, check = run(_kernel(causal=True), shape, given, block_kv=512)
    _passes(check)
    given["block_table"][1, 2] = -1  # a page sequence 1 uses: read, and refused
    with pytest.raises(fd.FadslError, match=r"block_table\[1, 2\] = -1"):
        run(_kernel(causal=True), shape, given, block_kv=512)


def test_the_interpreter_faults_on_a_page_it_reads() -> None:
    """Past the input checks (run without them), a used column holding no page is an
    out-of-range read of the cache, not another page's data."""
    from fadsl.errors import ExecutionError

    kdef = _kernel()
    kernel = kdef.build({"block_kv": 256}, DType.F16)
    full = symbol_values(kernel, SHAPE)
    b = Binding(kernel, full, {"scale": SHAPE["D"] ** -0.5}, kdef)
    data = runio.make_inputs(b, 0)
    data.update(_inputs(SHAPE, LENGTHS))
    data["block_table"][3, 3] = 64
    with pytest.raises(ExecutionError, match=r"page 64 in dimension 0 \(Pages\)"):
        interpret(run_pipeline(kernel), b.env(), data)


@pytest.mark.parametrize("value", [200, 64, 0])
def test_a_block_that_is_not_whole_pages_is_refused(value: int) -> None:
    kdef = _kernel()
    with pytest.raises(fd.FadslError, match=f"block_kv = {value} with page_size = 128"):
        kdef.build({"block_kv": value})
    assert not kdef.allows({"block_kv": value})
    assert kdef.allows({"block_kv": 384}) and kdef.allows({"block_q": 48})


def test_tune_tries_only_whole_pages() -> None:
    import argparse

    from fadsl.commands import tune_cmd
    from fadsl.driver.source import load_source, select
    from fadsl.target import resolve
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "decode_paged.py"
    args = argparse.Namespace(
        file=str(example),
        kernel=None,
        sets=["block_q=16", "stages=2", "kv_splits=3", "v_cores=1"],
        dtype=None,
        shape="B=1,N=32,Nkv=8,Sq=1,D=128,Pages=64,MaxPages=64",
        top=10,
    )
    chosen = select(load_source(args.file), None)
    result = tune_cmd.search(chosen, args, resolve("ascend910b2", None))
    assert result.tuned == ("block_kv",) and result.evaluated == 4
    ranked = {c.values["block_kv"] for c in result.ranked}
    assert {128, 256} <= ranked <= {128, 256, 384, 512}, ranked
