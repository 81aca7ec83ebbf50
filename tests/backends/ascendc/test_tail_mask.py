"""The KV tail mask runs only in the block that has a tail (issue 16, vector clean-up),
the causal mask only in blocks that cross the diagonal:
the Compare and Selects of ``where(arange(j * block_kv, block_kv) < Skv, s, -inf)`` are
guarded by ``if (block_kv * j + block_kv - 1 >= Skv)``. ``fadsl sim`` of every example
(tests/variants/test_examples_sim.py, tests/backends/ascendc/test_sim.py) runs both
paths: shapes with and without a KV tail."""

from __future__ import annotations

from pathlib import Path

from fadsl.cli import main

ROOT = Path(__file__).resolve().parents[3]
GUARD = "if ((BLOCK_KV * j + BLOCK_KV - 1) >= tiling_.Skv) {"


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
    that crosses the diagonal (plan/diag_guard.py)."""
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
    assert "Adds(t2, qIdxF" in inside
    assert "CompareScalar(mask, kvIdxF, rowValue, AscendC::CMPMODE::LE" in inside
    before = cpp[cpp.index("class Fa2Vector") : cpp.index(guard)]
    assert "CMPMODE::LE" not in before


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
