"""``fd.attention(..., append_kv=True)`` built with g++ into fadsl's CPU runtime
(``fadsl sim``): one of Dao's test_flash_attn_kvcache new_kv cases (GQA, causal,
leftpad, a 16-row page table; no rotary: with rotary the kernel needs more
cross-core flag IDs than it may use, docs/decode.md) with the cache poisoned past each
sequence's length. The output passes the tolerance rule against the float64
reference, and the updated caches equal the interpreter's bit for bit, poison
included: the generated kernel writes only the appended slots (and the CPU runtime
refuses two cores writing one GM byte without a wait between them)."""

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
