"""The KV tail mask runs only in the block that has a tail (issue 16, vector clean-up),
the causal mask only in blocks that cross the diagonal:
the Compare and Selects of ``where(arange(j * block_kv, block_kv) < Skv, s, -inf)`` are
guarded by ``if (block_kv * j + block_kv - 1 >= Skv)``; the diagonal is one mask and one
Select per chunk (issue 27). ``fadsl sim`` of every example
(tests/variants/test_examples_sim.py, tests/backends/ascendc/test_sim.py) runs both
paths: shapes with and without a KV tail."""

from __future__ import annotations

from pathlib import Path

from fadsl.cli import main

ROOT = Path(__file__).resolve().parents[3]
GUARD = "if ((BLOCK_KV * j + BLOCK_KV - 1) >= tiling_.Skv) {"


def _flat(text: str) -> str:
    """``text`` without whitespace (the generated code is clang-formatted)."""
    return "".join(text.split())


def test_the_tail_select_is_guarded_by_the_block_reaching_past_skv(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "fa2"
    assert main(["compile", str(ROOT / "examples" / "fa2.py"), "-o", str(out)]) == 0
    cpp = (out / "fa2_kernel.cpp").read_text()
    guarded = cpp[cpp.index(GUARD) :]
    assert "AscendC::CMPMODE::LT, BLOCK_KV);" in guarded.split("}")[0]
    assert guarded.index("AscendC::Select(s1[r * BLOCK_KV]") < guarded.index(
        "fd.row_max"
    )


def test_the_causal_select_runs_only_in_blocks_crossing_the_diagonal(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A block whose last key is at most the vector core's first row's last visible
    key (``q_idx + Skv - Sq`` at row ``i * block_q + row0``) keeps every element: the
    causal Compare/Select (and the row positions only it reads) run only in a block
    that crosses the diagonal (plan/schedule/diag_guard.py)."""
    out = tmp_path / "fa2c"
    argv = ["compile", str(ROOT / "examples" / "fa2.py"), "--set", "causal=true"]
    assert main(argv + ["-o", str(out)]) == 0
    cpp = (out / "fa2_kernel.cpp").read_text()
    assert cpp.count("only a block that reaches past the bound") == 1
    guard = (
        "if ((BLOCK_KV * j + BLOCK_KV - 1) > "
        "(tiling_.Skv - tiling_.Sq + (BLOCK_Q * i) + row0)) {"
    )
    assert cpp.count(guard) == 1
    inside = cpp[cpp.index(guard) : cpp.index("only a block that reaches past")]
    assert _flat(
        "CompareScalar(mask[r * 32 * fadsl::CeilDiv<int64_t>(BLOCK_KV, 256)], kvIdxF"
    ) in _flat(inside)
    before = cpp[cpp.index("class Fa2Vector") : cpp.index(guard)]
    assert "CMPMODE::LE" not in before


def test_the_causal_diagonal_is_one_mask_and_one_select_per_chunk(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 27, item 4: the diagonal's row thresholds come from the positions (the
    scalar unit computes ``first row + r``), not from UB: no GetValue and no V -> S
    wait; a CompareScalar per row into its own row of mask bits, one barrier and one
    Select over the chunk (the per-row Adds of the row positions is not emitted). It
    was GetValue, CompareScalar, barrier, Select and barrier per row."""
    out = tmp_path / "fa2c"
    argv = ["compile", str(ROOT / "examples" / "fa2.py"), "--set", "causal=true"]
    assert main(argv + ["-o", str(out)]) == 0
    cpp = (out / "fa2_kernel.cpp").read_text()
    vector = cpp[cpp.index("class Fa2Vector") :]
    diag = vector[
        vector.index("crosses the diagonal") : vector.index("reaches past the bound")
    ]
    assert "GetValue" not in vector and "HardEvent::V_S" not in vector
    flat = _flat(diag)
    assert "Adds(t2,qIdxF" not in flat
    first = "static_cast<float>(((tiling_.Skv - tiling_.Sq + (BLOCK_Q * i) + row0) + rc * 32) + r)"
    assert _flat(first) in flat
    assert diag.count("AscendC::Select(") == 1
    assert _flat("VSEL_TENSOR_SCALAR_MODE, 32 * BLOCK_KV);") in flat
    assert diag.count("PipeBarrier") == 2  # before the compares and before the Select


def test_the_tail_mask_positions_are_made_only_under_the_guard(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The arange of KV positions and its cast feed only the guarded mask: full blocks
    skip them and their PipeBarriers too (issue 16, item 5)."""
    out = tmp_path / "fa2"
    assert main(["compile", str(ROOT / "examples" / "fa2.py"), "-o", str(out)]) == 0
    cpp = (out / "fa2_kernel.cpp").read_text()
    vector = cpp[cpp.index("class Fa2Vector") :]
    loop = vector[vector.index("for (int64_t j = 0;") :]
    guard = loop.index(GUARD)
    assert "CreateVecIndex" not in loop[:guard]
    inside = loop[guard : loop.index("fd.row_max")]
    assert inside.index("CreateVecIndex(kvIdx") < inside.index("Cast(kvIdxF, kvIdx")
    assert inside.index("Cast(kvIdxF, kvIdx") < inside.index("CompareScalar(mask")
    # the only barrier between the scaling Muls and the guard is none at all
    assert "PipeBarrier" not in loop[loop.index("AscendC::Muls(s, dot") : guard]
