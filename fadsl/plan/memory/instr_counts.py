"""How many Ascend C calls the backend issues for one op, by its instruction form.

The vector rules (``backends/ascendc/vector_rules.py``, ``vector_where.py``) emit, per
op of a given form (``plan/memory/vector_forms.py``), a few level-2 calls or one call of a
``fadsl_tile.h`` helper whose loops issue level-0 calls; the cube's L1 -> L0 helpers
issue one ``LoadData`` per 16-row strip (or per column block). The cost model charges
these counts (``perf/step_calls.py``); ``tests/perf_timer/test_model_counts.py`` checks
them against the executed-instruction record of the generated kernel, so a change to a
rule or a helper that changes its calls fails there until this module follows.

Counts are per vector core, for a [rows, cols] tile of ``itemsize``-byte elements
(the op's per-core, per-row-chunk shape). ``Calls.barriers`` are the PipeBarrier<PIPE_V>
a rule or helper issues inside itself; the one the emitter puts before a dependent op
(``VectorEmitter._barrier``) is the caller's business.
"""

from __future__ import annotations

from dataclasses import dataclass

REPEAT_BYTES = 256
BLOCK_BYTES = 32
MAX_REPEAT_ROWS = 248
"""fadsl_tile.h ``MAX_REPEAT_ROWS``: rows per level-0 call of the row helpers."""
MAX_BLOCK_REDUCE_REPEATS = 255
"""fadsl_tile.h ``MAX_BLOCK_REDUCE_REPEATS``: repeats per BlockReduceMax/Sum call."""
DIAG_PITCH = 256
"""Bits of one row of a ``mask_diag`` mask: a row's CompareScalar writes 32-byte aligned."""
LOAD_DATA_MAX_REPEAT = 255
"""Fractals per LoadData of the whole-tile transposing helpers (fadsl_tile.h)."""


@dataclass(frozen=True)
class Calls:
    vector: int = 0
    """Calls on PIPE_V (level-2 and level-0 instructions, Brcb, Compare, Select)."""
    barriers: int = 0
    """PipeBarrier<PIPE_V> inside the rule or helper."""
    scalar_reads: int = 0
    """GetValue of a local tensor by the scalar unit (mask_outer's row values)."""

    def __add__(self, o: Calls) -> Calls:
        return Calls(
            self.vector + o.vector,
            self.barriers + o.barriers,
            self.scalar_reads + o.scalar_reads,
        )

    def times(self, n: int) -> Calls:
        return Calls(self.vector * n, self.barriers * n, self.scalar_reads * n)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def block_levels(cols: int, itemsize: int) -> tuple[int, ...]:
    """The row widths after each BlockReduce level of fadsl_tile.h ``RowReduceBlocks``
    for a row of ``cols`` elements, or () where it does not apply: wider than one
    256-byte repeat and a whole number of repeats at every level wider than one, the
    last width whole 32-byte blocks (WholeReduce strides rows in blocks)."""
    per, block = REPEAT_BYTES // itemsize, BLOCK_BYTES // itemsize
    if cols <= per:
        return ()
    width, out = cols, []
    while width > per:
        if width % per:
            return ()
        width //= block
        out.append(width)
    return tuple(out) if width % block == 0 else ()


def row_strips(rows: int) -> int:
    """Level-0 calls along the rows of a row helper: MAX_REPEAT_ROWS rows each."""
    return max(1, _ceil(rows, MAX_REPEAT_ROWS))


def row_broadcast(rows: int, cols: int, itemsize: int) -> Calls:
    """fadsl_tile.h ``RowBroadcast``: a Brcb, a barrier, then one level-0 call per
    row strip and 256-byte column chunk."""
    per = REPEAT_BYTES // itemsize
    return Calls(1 + row_strips(rows) * _ceil(cols, per), 1)


def col_broadcast(rows: int, cols: int, itemsize: int) -> Calls:
    """fadsl_tile.h ``ColBroadcast``: one level-0 call per row strip and column chunk."""
    return Calls(row_strips(rows) * _ceil(cols, REPEAT_BYTES // itemsize))


def outer(rows: int, cols: int, itemsize: int) -> Calls:
    """fadsl_tile.h ``Outer``: Duplicate, barrier, RowBroadcast, barrier, ColBroadcast."""
    return (
        Calls(1, 2)
        + row_broadcast(rows, cols, itemsize)
        + col_broadcast(rows, cols, itemsize)
    )


def row_reduce(rows: int, cols: int, itemsize: int) -> Calls:
    """fadsl_tile.h ``RowReduce`` (RowMax / RowSum): where ``block_levels`` applies,
    ``RowReduceBlocks``; else WholeReduce per row strip and column chunk; with more
    than one chunk, a barrier and a Max / Add per further chunk with a barrier between
    them."""
    if block_levels(cols, itemsize):
        return row_reduce_blocks(rows, cols, itemsize)
    chunks = _ceil(cols, REPEAT_BYTES // itemsize)
    whole = row_strips(rows) * chunks
    if chunks <= 1:
        return Calls(whole)
    return Calls(whole + chunks - 1, 1 + chunks - 2)


def row_reduce_blocks(rows: int, cols: int, itemsize: int) -> Calls:
    """fadsl_tile.h ``RowReduceBlocks``: per BlockReduce level, one call per 255
    repeats of the flat tile and a barrier; then one WholeReduce per row strip."""
    per = REPEAT_BYTES // itemsize
    calls, width = 0, cols
    levels = block_levels(cols, itemsize)
    assert levels, f"no block reduction of {cols} columns"
    for w in levels:
        calls += _ceil(rows * width // per, MAX_BLOCK_REDUCE_REPEATS)
        width = w
    return Calls(calls + row_strips(rows), len(levels))


def compare_pad(rows: int, cols: int, itemsize: int) -> Calls:
    """``vector_where._pad_lanes``: a Compare over a count that is not a whole number
    of 256-byte repeats reads the lanes past it, so a Duplicate zeroes them and a
    barrier follows. One side is counted (CompareScalar's tile; a Compare of two such
    tiles zeroes both), at the op's own element size."""
    return Calls(1, 1) if (rows * cols) % (REPEAT_BYTES // itemsize) else Calls()


def form_calls(form: str, select: str, rows: int, cols: int, itemsize: int) -> Calls:
    """The calls of one op of instruction form ``form`` (``select``: a where's
    branch kinds) on a [rows, cols] tile."""
    if form in ("unary", "cast", "dup", "iota", "full", "scalar"):
        return Calls(1)
    if form == "iota_f32":  # CreateVecIndex, barrier, Cast (passes/lower_vector.py)
        return Calls(2, 1)
    if form in ("rscalar", "rdiv"):  # Muls/Duplicate, barrier, Adds/Div
        return Calls(2, 1)
    if form == "exp2":
        return Calls(2, 1)
    if form == "tanh":
        return Calls(6, 4)
    if form == "sigmoid":
        return Calls(5, 3)
    if form == "row_bcast":
        return row_broadcast(rows, cols, itemsize)
    if form == "col_bcast":
        return col_broadcast(rows, cols, itemsize)
    if form == "outer":
        return outer(rows, cols, itemsize)
    if form == "row_reduce":
        return row_reduce(rows, cols, itemsize)
    if form in ("view", "fused"):
        return Calls()
    dup = Calls(1) if select in ("st", "ss") else Calls()
    if form.startswith("mask_full"):
        dup = dup + compare_pad(rows, cols, itemsize)
    if form == "mask_full":  # Compare, barrier, Select
        return dup + Calls(2, 1)
    if (
        form == "mask_full_row"
    ):  # the [r, 1] side spread first (vector_where._materialise)
        return dup + Calls(1, 2) + row_broadcast(rows, cols, itemsize) + Calls(2, 1)
    if form == "mask_full_col":
        return dup + Calls(1, 2) + col_broadcast(rows, cols, itemsize) + Calls(2, 1)
    if form == "mask_cols":  # Compare, barrier, one Select per row
        return dup + Calls(1 + rows, 1)
    if form == "mask_diag":  # per row CompareScalar; barrier; one Select (or one a row)
        return Calls(rows + (1 if cols % DIAG_PITCH == 0 else rows), 1)
    if (
        form == "mask_outer"
    ):  # per row: GetValue, CompareScalar, barrier, Select, barrier
        return dup + Calls(2, 2, 1).times(rows)
    if form == "gather":  # Cast, Adds, Maxs, Mins, Muls, Gather with barriers between
        return Calls(6, 5)
    if form == "gather_checked":  # TrapOutside's ReduceMax, Muls, ReduceMax first
        return Calls(6 + 3, 5 + 2, 2)
    if form == "take_columns":  # Cast, Muls with barriers, then a Gather per row
        return Calls(2 + rows, 2)
    if form == "philox":
        return Calls()  # a scalar-unit loop writing UB (no vector call)
    raise ValueError(f"no call count for vector form {form!r}")


def load_a(m: int, k: int, transpose: bool, itemsize: int) -> int:
    """LoadData calls moving an [m, k] A tile to L0A: ``LoadA`` / ``LoadAPart`` one per
    16-row strip; ``LoadATransposed`` one per 255 fractals."""
    if transpose:
        frac = _ceil(m, 16) * _ceil(k, BLOCK_BYTES // itemsize)
        return _ceil(frac, LOAD_DATA_MAX_REPEAT)
    return _ceil(m, 16)


def load_b(k: int, n: int, transpose: bool, itemsize: int, part: bool) -> int:
    """LoadData calls moving a [k, n] B window to L0B: ``LoadB`` / ``LoadBPart`` one
    per 16-row strip of k; given as its transpose, ``LoadBTransposedPart`` one per
    column block of k, ``LoadBTransposed`` one per 255 fractals."""
    c0 = BLOCK_BYTES // itemsize
    if not transpose:
        return _ceil(k, 16)
    if part:
        return _ceil(k, c0)
    return _ceil(_ceil(k, c0) * _ceil(n, 16), LOAD_DATA_MAX_REPEAT)


__all__ = [
    "Calls",
    "compare_pad",
    "form_calls",
    "load_a",
    "load_b",
    "row_reduce",
    "row_broadcast",
]
