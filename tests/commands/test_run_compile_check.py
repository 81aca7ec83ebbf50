"""``fadsl run`` and the constants ``fadsl compile`` refuses; outputs nothing writes.

The interpreter runs a 100-row block; the cube cannot (16 x 16 fractals), so `run`
warns with the error `compile` gives, from the same checks (driver/lower.py's
``compile_refusal``), when --set changes a tile constant. An output no store writes
is an error before anything runs (passes/lint.py), not an output of NaNs.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import numpy as np
import pytest

from fadsl.cli import main
from fadsl.errors import FadslError

ROOT = Path(__file__).resolve().parents[2]
FA2 = str(ROOT / "examples" / "fa2.py")
SHAPE = "B=1,N=1,Sq=64,Skv=64,D=32"
WARNING = (
    "fadsl: warning: the interpreter runs these tile constants, but `fadsl compile`"
)


def cli(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    return code, err.getvalue()


def test_run_warns_with_the_error_compile_gives(tmp_path: Path) -> None:
    sets = ("--set", "block_q=40", "--set", "block_kv=64")
    code, err = cli("run", FA2, "--shape", SHAPE, *sets, "-o", str(tmp_path / "r"))
    assert code == 0, err
    assert err.startswith(WARNING), err
    refused, compiled = cli("compile", FA2, *sets, "-o", str(tmp_path / "c"))
    assert refused == 1
    assert compiled.strip() in err, (compiled, err)
    assert "--set block_q=48" in err  # the fix


def test_run_warns_when_no_chip_has_room(tmp_path: Path) -> None:
    sets = ("--set", "block_q=1024", "--set", "block_kv=1024")
    code, err = cli("run", FA2, "--shape", SHAPE, *sets, "-o", str(tmp_path / "r"))
    assert code == 0 and err.startswith(WARNING), err
    assert "resource error[E31]" in err and "= hint:" in err


@pytest.mark.parametrize(
    "sets", [(), ("--set", "block_q=32", "--set", "block_kv=64")], ids=["none", "fit"]
)
def test_run_is_quiet_about_constants_compile_takes(
    sets: tuple[str, ...], tmp_path: Path
) -> None:
    code, err = cli("run", FA2, "--shape", SHAPE, *sets, "-o", str(tmp_path / "r"))
    assert code == 0 and "warning" not in err, err


UNSTORED = """
import fadsl as fd


@fd.kernel(default_shape=dict(M=32, K=16))
def copy(x: fd.In("M", "K"), y: fd.Out("M", "K"), z: fd.Out("M", "K"), bm: int = 16):
    M, K = x.shape
    for (i,) in fd.grid(fd.cdiv(M, bm)):
        rows = fd.ds(i * bm, bm)
        fd.store(y[rows, :], fd.load(x[rows, :]))
"""


def test_an_output_nothing_stores_is_an_error_in_the_api(tmp_path: Path) -> None:
    path = tmp_path / "unstored.py"
    path.write_text(UNSTORED, encoding="utf-8")
    import runpy

    kernel = runpy.run_path(str(path))["copy"]
    x = np.zeros((32, 16), np.float16)
    with pytest.raises(FadslError) as caught:
        import fadsl as fd

        fd.interpret(kernel, x=x)
    assert caught.value.code == "output_never_written"
    assert "output `z` of kernel `copy` is never written" in caught.value.message
    assert caught.value.loc is not None and caught.value.loc.line == 6
    assert os.path.basename(caught.value.loc.file) == "unstored.py"
