"""``fd.attention(..., paged_kv=True)`` in the interpreter against a float64 reference
that gathers each sequence's pages itself (``attention_ref.paged_sequences``).

The decode grid of issue 18: B=4, N=32, Nkv=8 (GQA) or 32, D=128, Sq in {1, 4},
sequences of different lengths (not multiples of the page size, one of length 1),
pages scattered in a shuffled order, with and without causal, packed GQA heads or not;
then what the tolerance rule alone would not show: the result follows the block table,
packing changes nothing, and bad lengths or page numbers are refused before any work.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fadsl as fd
from fadsl.io import runio
from fadsl.backends.interp import interpret
from fadsl.driver.binding import Binding
from fadsl.ir.types import DType
from fadsl.passes import run_pipeline
from attkit import symbol_values

PAGE = 128
LENGTHS = np.array([300, 1, 128, 517], np.int32)  # one of length 1, one whole page
SHAPE = dict(B=4, N=32, Nkv=8, Sq=1, D=128, Pages=64, MaxPages=8)


def alibi(score, b, h, q_idx, kv_idx):  # type: ignore[no-untyped-def]
    return score - 0.01 * (h + 1) * (q_idx - kv_idx)


def _kernel(**kw: Any) -> Any:
    return fd.attention(name="paged", paged_kv=True, page_size=PAGE, **kw)


def _inputs(shape: dict[str, int], seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    b, mp = shape["B"], shape["MaxPages"]
    table = rng.permutation(shape["Pages"])[: b * mp].reshape(b, mp)
    return {"block_table": table.astype(np.int32), "seqlens_kv": LENGTHS[:b].copy()}


def run(  # type: ignore[no-untyped-def]
    kdef: Any,
    shape: dict[str, int],
    given: dict[str, np.ndarray] | None = None,
    dtype: DType = DType.F16,
):
    """Interpret ``kdef`` (block_q 16) on seeded q / cache and the given index inputs."""
    kernel = kdef.build({"block_q": 16}, dtype)
    kdef.check_shape(shape)
    full = symbol_values(kernel, shape)
    b = Binding(kernel, full, {"scale": shape["D"] ** -0.5}, kdef)
    data = runio.make_inputs(b, 0)
    data.update(given if given is not None else _inputs(shape))
    from fadsl.io.input_checks import check_index_inputs

    check_index_inputs(b, data)
    out = interpret(run_pipeline(kernel), b.env(), data).outputs
    return b, data, out, runio.check_outputs(b, data, out)


def _passes(check: Any) -> None:
    assert check.passed, [v.line() for v in check.verdicts if not v.passed]


CASES = [  # packed GQA heads by default
    dict(causal=True, return_lse=True),
    dict(causal=False, return_lse=True, pack_gqa=False),
    dict(causal=True, layout="BSND", return_lse=True, pack_gqa=False),
    dict(causal=False, layout="BSND", return_lse=True),
]


@pytest.mark.parametrize("sq", [1, 4])
@pytest.mark.parametrize("nkv", [8, 32])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_decode_grid_passes_the_tolerance_rule(case: int, nkv: int, sq: int) -> None:
    _, _, out, check = run(_kernel(**CASES[case]), dict(SHAPE, Nkv=nkv, Sq=sq))
    _passes(check)
    assert np.isfinite(out["o"].astype(np.float32)).all()


@pytest.mark.parametrize(
    "kw",
    [
        dict(window=(200, 0), causal=True, return_lse=True),
        dict(softcap=5.0, return_lse=True),
        dict(score_mod=alibi, causal=True),
    ],
)
def test_masks_and_mods_see_cache_positions(kw: dict[str, Any]) -> None:
    _, _, _, check = run(_kernel(**kw), dict(SHAPE, Sq=4))
    _passes(check)


@pytest.mark.parametrize("pack", [True, False])
def test_bf16(pack: bool) -> None:
    kdef = _kernel(causal=True, pack_gqa=pack)
    _, _, _, check = run(kdef, dict(SHAPE, Sq=4), dtype=DType.BF16)
    _passes(check)


def test_result_follows_the_block_table() -> None:
    """Checked against another table (a page replaced, or two swapped under a window,
    where positions matter), the same output fails the rule: a kernel that ignored the
    table or the order of its pages would fail it too."""
    kdef = _kernel(window=(150, 0), causal=True)
    binding, data, out, check = run(kdef, dict(SHAPE, Sq=4))
    _passes(check)
    table = data["block_table"]
    replaced, swapped = table.copy(), table.copy()
    replaced[3, 2] = next(p for p in range(SHAPE["Pages"]) if p not in table)
    swapped[3, [2, 3]] = swapped[3, [3, 2]]
    for other in (replaced, swapped):
        wrong = runio.check_outputs(binding, dict(data, block_table=other), out)
        assert not wrong.passed


def test_packed_heads_compute_the_unpacked_numbers() -> None:
    shape = dict(SHAPE, Sq=4)
    _, data, packed, _ = run(_kernel(causal=True, return_lse=True), shape)
    given = {n: data[n] for n in ("block_table", "seqlens_kv")}
    _, data2, plain, _ = run(
        _kernel(causal=True, return_lse=True, pack_gqa=False), shape, given
    )
    for n in ("q", "k_cache", "v_cache"):
        np.testing.assert_array_equal(data[n], data2[n])
    np.testing.assert_allclose(
        packed["o"].astype(np.float32), plain["o"].astype(np.float32), atol=2e-3
    )
    np.testing.assert_allclose(packed["lse"], plain["lse"], rtol=1e-5)


def test_unused_columns_of_the_block_table_are_not_read() -> None:
    given = _inputs(SHAPE)
    given["block_table"][1, 1:] = -7  # sequence 1 has one key: only column 0 is read
    _, _, _, check = run(_kernel(causal=True), SHAPE, given)
    _passes(check)


def test_a_page_out_of_range_is_refused() -> None:
    given = _inputs(SHAPE)
    given["block_table"][3, 4] = 64
    with pytest.raises(fd.FadslError, match=r"block_table\[3, 4\] = 64"):
        run(_kernel(), SHAPE, given)


def test_a_length_past_the_block_table_is_refused() -> None:
    given = _inputs(SHAPE)
    given["seqlens_kv"][2] = 8 * PAGE + 1
    with pytest.raises(fd.FadslError, match=r"seqlens_kv\[2\] = 1025"):
        run(_kernel(), SHAPE, given)


@pytest.mark.parametrize(
    "kw, message",
    [
        (dict(page_size=100), "multiple of 16"),
        (dict(layout="BSH"), "layout BNSD or BSND"),  # TND: chunked prefill
        (dict(dropout_p=0.1), "without dropout"),
        (dict(score_mod=alibi, pack_gqa=True), "pack_gqa=True with a score_mod"),
    ],
)
def test_paged_keywords_are_checked(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(fd.FadslError, match=message):
        fd.attention(name="bad", paged_kv=True, **kw)
    with pytest.raises(fd.FadslError, match="without paged_kv=True"):
        fd.attention(name="bad", page_size=64)


def test_example_passes_and_its_reference_agrees_with_the_library() -> None:
    """examples/decode_paged.py gathers key by key; attention_ref gathers page by page:
    two independent statements of where a sequence's keys are."""
    import importlib.util
    from pathlib import Path

    from fadsl.frontend.attention_ref import reference as library_reference

    path = Path(__file__).resolve().parents[2] / "examples" / "decode_paged.py"
    spec = importlib.util.spec_from_file_location("fadsl_example_decode_paged", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    binding, data, _, check = run(module.kernel, dict(SHAPE, Sq=4))
    _passes(check)
    consts = binding.ref_consts()
    mine = module.reference(data, binding.shape, consts)
    lib = library_reference(module.kernel.spec, data, binding.shape, consts)
    np.testing.assert_allclose(mine["o"], lib["o"], rtol=1e-9, atol=1e-9)


def test_check_tune_timeline_model_the_example(tmp_path: Any) -> None:
    """The commands that model the kernel take every sequence at the block table's full
    length (Binding.model_env); the model bench prints a bandwidth fraction for it."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    shape = "B=2,N=32,Nkv=8,Sq=1,D=128,Pages=64,MaxPages=32"
    base = [sys.executable, "-m", "fadsl"]
    example = str(root / "examples" / "decode_paged.py")
    for cmd in (
        ["check", example, "--shape", shape],
        ["timeline", example, "--shape", shape, "-o", str(tmp_path / "t.svg")],
        ["tune", example, "--shape", shape, "--top", "2"],
    ):
        proc = subprocess.run(base + cmd, cwd=root, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "MODELLED" in proc.stdout and "block_q" in proc.stdout
    sys.path.insert(0, str(root / "bench"))
    try:
        from decode_model import decode_rows
    finally:
        sys.path.remove(str(root / "bench"))
    rows = decode_rows()  # per batch: no split, split with 1 page, tune's block, V
    no1, one1, best1, v1, no8, one8, best8, v8 = rows
    assert [(r.b, r.splits, r.block_kv) for r in (no1, no8)] == [
        (1, 1, 128),
        (8, 1, 128),
    ]
    assert all(0 < r.fraction <= 1 for r in rows)
    assert no1.tasks == 8  # B * Nkv packed tasks: the idle cores split-KV uses
    assert one1.splits > 1 and one1.block_kv == 128 and one1.post_s > 0
    assert one1.tasks == 8 * one1.splits
    assert one1.fraction > no1.fraction  # split-KV: more cores stream the one sequence
    for one, best in ((one1, best1), (one8, best8)):  # the block: fewer iterations
        assert best.block_kv % 128 == 0 and best.seconds <= one.seconds
    for best, v in ((best1, v1), (best8, v8)):  # v_cores 1 or 2, as tune chooses
        assert best.v_cores == 1 and v.seconds <= best.seconds
