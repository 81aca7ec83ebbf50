"""``fd.atomic_add``: outputs summed over grid points in f32, rounded once (atomics.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import fadsl as fd
from fadsl.backends.interp import interpret
from fadsl.errors import DTypeError


@fd.kernel
def headsum(
    x: fd.In("B", "N", "S", "D"),
    total: fd.Out("B", "S", "D"),
    block: int = 64,
):
    for b, h, i in fd.grid(B, N, fd.cdiv(S, block)):
        rows = fd.ds(i * block, block)
        xt = fd.load(x[b, h, rows, :], pad=0)
        fd.atomic_add(total[b, rows, :], fd.cast(xt, fd.f32) * 0.001)


@fd.kernel
def first_rows(
    x: fd.In("S", "D", dtype=fd.f32),
    y: fd.Out("S", "D", dtype=fd.f32),
    block: int = 16,
):
    for i in fd.grid(2):
        xt = fd.load(x[fd.ds(i * block, block), :], pad=0)
        fd.atomic_add(y[fd.ds(0, block), :], xt)


def _run(kdef, env, **inputs):  # type: ignore[no-untyped-def]
    return interpret(kdef.build(), env, inputs).outputs


@pytest.mark.parametrize("threads", ["1", "2"])
def test_points_adding_to_the_same_positions_all_count(
    threads: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FADSL_THREADS", threads)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 96, 32)).astype(np.float16)  # S=96: a tail block
    out = _run(headsum, dict(B=2, N=6, S=96, D=32), x=x)["total"]
    # f32 sums in head order (the batch order), rounded to f16 once
    acc = np.zeros((2, 96, 32), np.float32)
    for h in range(6):
        acc += x[:, h].astype(np.float32) * np.float32(0.001)
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, acc.astype(np.float16))


def test_uniform_blocks_and_positions_never_added_are_zero() -> None:
    """Every point adds to the same (uniform) block; the rest of y stays 0, not NaN."""
    x = np.arange(48 * 4, dtype=np.float32).reshape(48, 4)
    y = _run(first_rows, dict(S=48, D=4), x=x)["y"]
    np.testing.assert_array_equal(y[:16], x[:16] + x[16:32])
    assert (y[16:] == 0).all()


def test_an_f16_tile_is_refused_at_its_line() -> None:
    @fd.kernel
    def bad(x: fd.In("S", "D"), y: fd.Out("S", "D"), block: int = 16):
        for i in fd.grid(fd.cdiv(S, block)):
            xt = fd.load(x[fd.ds(i * block, block), :], pad=0)
            fd.atomic_add(y[fd.ds(i * block, block), :], xt)

    with pytest.raises(DTypeError, match="adds an f32 tile") as err:
        bad.build()
    assert err.value.loc.file == __file__
    assert "fd.atomic_add(y[" in err.value.loc.source_line()


def test_an_input_is_refused() -> None:
    @fd.kernel
    def bad(x: fd.In("S", "D", dtype=fd.f32), block: int = 16):
        for i in fd.grid(fd.cdiv(S, block)):
            xt = fd.load(x[fd.ds(i * block, block), :], pad=0)
            fd.atomic_add(x[fd.ds(i * block, block), :], xt)

    with pytest.raises(DTypeError, match="adds into outputs"):
        bad.build()


def test_a_store_into_an_atomic_output_is_refused() -> None:
    @fd.kernel
    def bad(
        x: fd.In("S", "D", dtype=fd.f32),
        y: fd.Out("S", "D", dtype=fd.f32),
        block: int = 16,
    ):
        for i in fd.grid(fd.cdiv(S, block)):
            xt = fd.load(x[fd.ds(i * block, block), :], pad=0)
            fd.atomic_add(y[fd.ds(0, block), :], xt)
            fd.store(y[fd.ds(i * block, block), :], xt)

    with pytest.raises(fd.FadslError, match="which atomic_add writes") as err:
        bad.build()
    assert "fd.store(y[" in err.value.loc.source_line()


def test_textual_ir_that_loads_an_atomic_output_is_refused() -> None:
    from fadsl.ir.text.parser import parse_kernel

    sample = Path(__file__).resolve().parents[2] / "ir_samples" / "atomic_add.fir"
    text = sample.read_text().replace(
        "    %xt_1 = cast",
        "    %tt = load() {src = total, index = [b, block*i +: block, 0 +: D]} "
        ": f16[block, D]\n    %xt_1 = cast",
    )
    with pytest.raises(fd.FadslError, match="load of `total`, which atomic_add"):
        parse_kernel(text, "bad.fir")
