"""Paged decode kernels built with the CPU runtime (``fadsl sim``): the decode grid of
issue 18 passes the tolerance rule and agrees with the interpreter; a block table or a
length out of range stops the generated kernel at its guard (``AscendC::Trap()``).

Three builds: examples/decode_paged.py (causal, BSND, GQA heads packed), a non-causal
BNSD kernel with LSE (packed: the LSE of a tile's heads are Sq apart) and a causal one
with LSE and heads not packed. Seeded inputs: pages dealt in a shuffled
order, uneven lengths, the last sequence of length 1.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fadsl as fd

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "decode_paged.py"
WITH_LSE = """import fadsl as fd

kernel = fd.attention(name="decode_lse", paged_kv=True, page_size=128, return_lse=True)
"""
UNPACKED = """import fadsl as fd

kernel = fd.attention(name="decode_heads", paged_kv=True, page_size=128, causal=True,
                      return_lse=True, pack_gqa=False)
"""
SHAPE = "B=4,N=32,Nkv={nkv},Sq={sq},D=128,Pages=32,MaxPages=8"

pytestmark = [
    pytest.mark.cpu_runtime,
    pytest.mark.skipif(
        shutil.which("g++") is None or shutil.which("cmake") is None,
        reason="needs g++ and cmake",
    ),
]


def _sim(source: Path, shape: str, out: Path, extra: list[str] | None = None) -> dict:
    cmd = [sys.executable, "-m", "fadsl", "sim", str(source), "--shape", shape]
    cmd += extra or []
    proc = subprocess.run(
        cmd + ["-o", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((out / "meta.json").read_text())


def _check(meta: dict, out: Path) -> None:
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    for name, agree in meta["vs_interpreter"].items():
        assert agree["nonfinite_mismatch"] == 0, name
        assert agree["max_abs_diff"] <= (4 * 2.0**-10 if name == "o" else 1e-5), agree
    lengths = np.fromfile(out / "seqlens_kv.bin", np.int32)
    assert lengths[-1] == 1 and (lengths % 128 != 0).any(), lengths


@pytest.mark.parametrize("sq", [1, 4])
@pytest.mark.parametrize("nkv", [8, 32])
def test_decode_example_in_the_cpu_runtime(nkv: int, sq: int, tmp_path: Path) -> None:
    out = tmp_path / "sim"
    _check(_sim(EXAMPLE, SHAPE.format(nkv=nkv, sq=sq), out), out)


@pytest.mark.parametrize("sq", [1, 4])
@pytest.mark.parametrize("packed", [True, False])
def test_decode_with_lse_in_the_cpu_runtime(
    packed: bool, sq: int, tmp_path: Path
) -> None:
    src = tmp_path / "decode_lse.py"
    src.write_text(WITH_LSE if packed else UNPACKED)
    out = tmp_path / "sim"
    _check(_sim(src, SHAPE.format(nkv=8, sq=sq), out), out)


@pytest.mark.parametrize(
    "name, index, value",
    [("block_table", (2, 0), 32), ("block_table", (0, 0), -1), ("seqlens_kv", 1, 1025)],
)
def test_guards_stop_the_generated_kernel(name: str, index, value: int) -> None:  # type: ignore[no-untyped-def]
    """The interpreter refuses these inputs before any work; the generated kernel,
    given them anyway, stops at its guard instead of reading another page."""
    from fadsl.backends.sim import run as sim_run
    from fadsl.commands import common
    from fadsl.driver.lower import lower
    from fadsl.io import runio
    from fadsl.target import resolve

    args = argparse.Namespace(
        file=str(EXAMPLE),
        kernel=None,
        sets=[],
        dtype=None,
        shape=SHAPE.format(nkv=8, sq=1),
    )
    binding = common.build(args, target=resolve("ascend910b1", None))
    inputs = runio.make_inputs(binding, 0)
    inputs["seqlens_kv"][:] = [300, 200, 129, 1]
    inputs[name][index] = value
    binary, _ = sim_run.build(lower(binding), str(EXAMPLE))
    with pytest.raises(fd.FadslError, match="Trap on .*index out of range"):
        sim_run.run_binary(binary, binding, inputs, 120.0)
