"""``fd.attention(..., append_kv=True)`` built with g++ into fadsl's CPU runtime
(``fadsl sim``): Dao's test_flash_attn_kvcache new_kv cases (GQA / MQA, causal, leftpad,
a page table of 16 or 64 rows; rotary in both layouts, a rotary fraction of 0.5) with
the cache poisoned past each sequence's length. The output passes the tolerance rule
against the float64 reference, and the updated caches equal the interpreter's bit for
bit, poison included: the generated kernel writes only the appended slots (and the CPU
runtime refuses two cores writing one GM byte without a wait between them).

The rotary cases failed before issue 30's rotary30 work: the schedule refused them
(23 cross-core flag IDs, E94), then the resource check (12 L1 queue buffers for the
AIC's 8 MTE1_MTE2 event IDs, E52), then the generated C++ did not compile (the rotated
Q, made before the KV loops, was received from the vector cores inside the first loop).
The D = 128 cases (Dao's d=128; both layouts) were refused by the resource check until
rot30 (E31: the [D, D] f32 pairing matrices needed about 234 KB of 910B's 192 KB UB);
the rotation is now column maps on the vector unit (``take_columns``, a Gather per
row), docs/decode.md. With pages of 256 rows (Dao's paged_kv_block_size) the new keys
were also attended in blocks of a page, rotated in f32: 373,504 B of UB (E31) until
they came in blocks of ``block_new`` = 16 rows."""

from __future__ import annotations

import numpy as np
import pytest
from attkit import NEEDS_GXX

import fadsl as fd
from tests.variants.test_append_kv import dao_case, poisoned


@NEEDS_GXX
@pytest.mark.parametrize(
    "case",
    [
        (3, 128, 64, 16, "gqa", True, 0.0, False, True),
        (64, 256, 64, 16, "mqa", True, 0.0, False, False),  # appends span 5 pages
        (3, 128, 64, 16, "gqa", True, 0.5, False, True),  # rotary half, leftpad
        (8, 256, 64, 64, "gqa", True, 0.5, True, True),  # rotary interleaved, leftpad
        (1, 128, 64, 16, "mqa", False, 0.5, True, True),  # not causal: Q at one position
        (3, 128, 128, 16, "gqa", True, 0.5, False, True),  # D=128: half, leftpad
        (8, 256, 128, 64, "gqa", True, 1.0, True, True),  # D=128: interleaved, all of D
        (8, 200, 128, 16, "mqa", False, 1.0, False, False),  # D=128: half, not causal
        (1, 339, 128, 256, "gqa", True, 0.5, False, False),  # D=128, pages of 256
    ],
    ids=lambda c: "-".join(map(str, c)),
)
def test_dao_kvcache_new_kv_through_sim(case: tuple) -> None:
    c = dao_case(case)
    inputs = dict(c["inputs"])
    table, lens = inputs["block_table"], inputs["seqlens_kv"]
    for name in ("k_cache", "v_cache"):
        inputs[name] = poisoned(inputs[name], table, lens, c["page"])
    got = fd.sim(c["kernel"], **inputs)
    verdict = fd.verify(got["o"], c["ref"][0], "fp16")
    assert verdict.passed, verdict
    want = fd.interpret(c["kernel"], **inputs)
    for name in ("k_cache_out", "v_cache_out"):
        assert np.array_equal(
            got[name].view(np.uint16), want[name].view(np.uint16)
        ), name
