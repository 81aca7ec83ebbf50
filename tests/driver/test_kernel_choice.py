"""Which kernel of a file a command runs without --kernel (driver/source.py).

The only one; or, in a file holding a forward and its backward kernels
(``fd.attention_backward``, or a tile program named ``<forward>_bwd``), the forward.
Several forwards need --kernel, and the hint lists every choice.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fadsl.driver.source import load_source, select
from fadsl.errors import UsageError

VARIANT = """\
import fadsl as fd

fwd = fd.attention(name="fwd", causal=True, return_lse=True)
bwd = fd.attention_backward(name="bwd", causal=True)
"""

TILES = """\
import fadsl as fd


@fd.kernel(default_shape=dict(M=32))
def copy_bwd(dy: fd.In("M"), dx: fd.Out("M"), bm: int = 16):
    for (i,) in fd.grid(fd.cdiv(dy.shape[0], bm)):
        fd.store(dx[fd.ds(i * bm, bm)], fd.load(dy[fd.ds(i * bm, bm)]))


@fd.kernel(default_shape=dict(M=32))
def copy(x: fd.In("M"), y: fd.Out("M"), bm: int = 16):
    for (i,) in fd.grid(fd.cdiv(x.shape[0], bm)):
        fd.store(y[fd.ds(i * bm, bm)], fd.load(x[fd.ds(i * bm, bm)]))
"""


def _chosen(tmp_path: Path, text: str, kernel: str | None = None) -> str:
    path = tmp_path / "k.py"
    path.write_text(text, encoding="utf-8")
    return select(load_source(str(path)), kernel).name  # type: ignore[union-attr]


def test_a_variant_and_its_backward_run_the_forward(tmp_path: Path) -> None:
    assert _chosen(tmp_path, VARIANT) == "fwd"
    assert _chosen(tmp_path, VARIANT, "bwd") == "bwd"


def test_a_tile_program_and_its_bwd_run_the_forward(tmp_path: Path) -> None:
    assert _chosen(tmp_path, TILES) == "copy"
    assert _chosen(tmp_path, TILES, "copy_bwd") == "copy_bwd"


def test_two_forwards_need_kernel_and_the_hint_lists_both(tmp_path: Path) -> None:
    two = VARIANT + 'other = fd.attention(name="other")\n'
    with pytest.raises(UsageError) as caught:
        _chosen(tmp_path, two)
    assert caught.value.code == "several_kernels"
    assert caught.value.hint is not None
    assert (
        "--kernel fwd, --kernel bwd (a backward), --kernel other" in caught.value.hint
    )
