"""Small defects of the API's input checks found by hostile use (issue 28)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import fadsl as fd
from fadsl.cli import main
from fadsl.errors import FadslError

FA2 = str(Path(__file__).resolve().parents[2] / "examples" / "fa2.py")

PAGED = dict(B=2, N=2, Nkv=1, Sq=1, D=64, Pages=4, MaxPages=2)


def test_a_float32_q_for_an_fp16_kernel_is_blamed_on_q() -> None:
    """The kernel used to be built in the first array's dtype (q's float32), and the
    error then named `k` (float16, the kernel's own dtype) as the odd one."""
    kernel = fd.attention(name="i28_dtype", dtype="fp16")
    q = np.zeros((1, 2, 64, 64), np.float32)
    kv = np.zeros((1, 2, 64, 64), np.float16)
    with pytest.raises(FadslError) as info:
        fd.interpret(kernel, q=q, k=kv, v=kv)
    text = info.value.render()
    assert "input `q` is float32" in text and "here float16 (as `k`, `v`)" in text
    assert "q.astype(np.float16)" in text
    assert info.value.loc is not None and info.value.loc.file == __file__


def test_the_int64_seqlens_hint_names_its_own_dtype_only() -> None:
    """`seqlens_kv` is always int32: the hint offered dtype='fp16' / 'bf16' / 'fp32'."""
    kernel = fd.attention(name="i28_paged", paged_kv=True, page_size=16)
    lengths = np.array([20, 30], np.int64)
    with pytest.raises(FadslError) as info:
        fd.interpret(kernel, shape=PAGED, seqlens_kv=lengths)
    text = info.value.render()
    assert "seqlens_kv.astype(np.int32)" in text and "always int32" in text
    assert "fp16" not in text


def test_skv_zero_is_refused_by_the_api_as_by_the_cli(capsys) -> None:  # type: ignore[no-untyped-def]
    """`--shape Skv=0` was refused and arrays with Skv = 0 accepted; both now go
    through one rule (driver.binding.size_problem) with one error code."""
    kernel = fd.attention(name="i28_empty")
    q = np.zeros((1, 2, 64, 64), np.float16)
    empty = np.zeros((1, 2, 0, 64), np.float16)
    with pytest.raises(FadslError) as info:
        fd.interpret(kernel, q=q, k=empty, v=empty)
    text = info.value.render()
    assert "error[E24]" in text and "gives Skv=0 (its dimension 2)" in text
    assert "sizes must be positive" in text
    with pytest.raises(FadslError, match="sizes must be positive"):
        fd.check(kernel, shape=dict(B=1, N=2, Sq=64, Skv=0, D=64))
    assert main(["check", FA2, "--shape", "B=1,N=2,Sq=64,Skv=0,D=64"]) == 1
    assert (
        "error[E24]: --shape Skv=0: sizes must be positive" in capsys.readouterr().err
    )


def test_attention_backward_names_a_forward_only_keyword() -> None:
    """`fd.attention_backward(return_lse=True)` was a bare TypeError."""
    with pytest.raises(FadslError) as info:
        fd.attention_backward(name="i28_bwd", return_lse=True)
    text = info.value.render()
    assert "takes no `return_lse`" in text and "reads the forward's `lse`" in text
    assert info.value.loc is not None and info.value.loc.file == __file__
    with pytest.raises(FadslError, match="did you mean `causal`"):
        fd.attention_backward(name="i28_bwd", causl=True)
