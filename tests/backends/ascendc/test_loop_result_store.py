"""Loop-carried values stored straight to GM: ``acc = fd.dot(p, vt) + acc`` in a KV loop,
then ``fd.store(o[...], acc)`` after the loop (the loop's result) or inside it (the
yielded value). Both live in the loop-carried state buffer, a TBuf with no VECOUT
queue, so the store waits on the V -> MTE3 event before the copy and MTE3 -> V after it
(vector_io). After the loop the compiler used to stop with an internal
``KeyError: 'acc_3'``; inside it, the yielded value took a VECOUT queue tile, freed
after the loop out of its C++ scope (g++ refused the kernel), and never copied into
the state."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from fadsl.cli import main

PROGRAM = """import fadsl as fd


@fd.kernel(dtype="fp16", default_shape=dict(B=1, N=2, Sq=256, Skv=256, D=64))
def acc_store(
    q: fd.In("B", "N", "Sq", "D"),
    k: fd.In("B", "N", "Skv", "D"),
    v: fd.In("B", "N", "Skv", "D"),
    o: fd.Out("B", "N", "Sq", "D", dtype=fd.f32),
    rs: fd.Out("B", "N", "Sq", dtype=fd.f32),
    block_q: int = 128,
    block_kv: int = 128,
):
    B, N, Sq, D = q.shape
    Skv = k.shape[2]
    for b, h, i in fd.grid(B, N, fd.cdiv(Sq, block_q)):
        rows = fd.ds(i * block_q, block_q)
        qt = fd.load(q[b, h, rows, :], pad=0)
        acc = fd.zeros((block_q, D), fd.f32)
        l = fd.zeros((block_q,), fd.f32)
        for j in fd.pipelined(fd.cdiv(Skv, block_kv), stages=2):
            cols = fd.ds(j * block_kv, block_kv)
            kt = fd.load(k[b, h, cols, :], pad=0)
            vt = fd.load(v[b, h, cols, :], pad=0)
            s = fd.dot(qt, kt, transpose_b=True)
            l = l + fd.row_sum(s)
            acc = fd.dot(fd.cast(s, v.dtype), vt) + acc
        fd.store(o[b, h, rows, :], acc)
        fd.store(rs[b, h, rows], l)
"""

# PROGRAM plus every iteration's running sum stored inside the loop (no deferred
# update then: the update's result is stored in the iteration that makes it).
IN_LOOP = PROGRAM.replace(
    '    rs: fd.Out("B", "N", "Sq", dtype=fd.f32),\n',
    '    rs: fd.Out("B", "N", "Sq", dtype=fd.f32),\n'
    '    run: fd.Out("B", "N", "Sq", "D", dtype=fd.f32),\n',
).replace(
    "            acc = fd.dot(fd.cast(s, v.dtype), vt) + acc\n",
    "            acc = fd.dot(fd.cast(s, v.dtype), vt) + acc\n"
    "            fd.store(run[b, h, rows, :], acc)\n",
)


def _write(tmp_path: Path, program: str = PROGRAM) -> Path:
    src = tmp_path / "acc_store.py"
    src.write_text(program, encoding="utf-8")
    return src


def test_a_loop_result_stored_straight_after_the_loop_compiles(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "gen"
    code = main(["compile", str(_write(tmp_path)), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    kernel = (out / "acc_store_kernel.cpp").read_text(encoding="utf-8")
    store = kernel[kernel.index("fd.store(o[b, h, rows, :], acc)") :]
    before, copy = store.index("HardEvent::V_MTE3"), store.index(
        "AscendC::DataCopyPad("
    )
    assert before < copy < store.index("HardEvent::MTE3_V")


@pytest.mark.cpu_runtime
@pytest.mark.skipif(
    shutil.which("g++") is None or shutil.which("cmake") is None,
    reason="needs g++ and cmake",
)
@pytest.mark.parametrize(
    "program",
    [
        pytest.param(IN_LOOP, id="in-and-after-the-loop"),
        # the same stores after a deferred update's drain (a redundant variant)
        pytest.param(PROGRAM, id="after-a-deferred-loop", marks=pytest.mark.slow),
    ],
)
def test_sim_of_stored_loop_carried_values_agrees_with_the_interpreter(
    tmp_path: Path, capsys: pytest.CaptureFixture, program: str
) -> None:
    # q and k in {-1, 0, 1}: every score is a small integer, exact in f16, so the sim
    # and the interpreter differ only by the order of P @ V's f32 additions.
    # Tails in Sq and Skv; three KV iterations.
    shape = dict(B=1, N=2, Sq=200, Skv=300, D=64)
    rng = np.random.default_rng(0)
    ins = tmp_path / "in"
    ins.mkdir()
    arrays = {
        "q": rng.integers(-1, 2, (1, 2, 200, 64)).astype(np.float16),
        "k": rng.integers(-1, 2, (1, 2, 300, 64)).astype(np.float16),
        "v": rng.standard_normal((1, 2, 300, 64)).astype(np.float16),
    }
    for name, a in arrays.items():
        a.tofile(ins / f"{name}.bin")
    out = tmp_path / "sim"
    sh = ",".join(f"{k}={v}" for k, v in shape.items())
    args = ["sim", str(_write(tmp_path, program)), "--shape", sh, "--inputs", str(ins)]
    code = main(args + ["-o", str(out)])
    assert code == 0, capsys.readouterr().err
    meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    q, k, v = (arrays[n].astype(np.float64) for n in ("q", "k", "v"))
    s = q @ k.transpose(0, 1, 3, 2)
    want = {"o": s @ v, "rs": s.sum(axis=-1)}
    if program is IN_LOOP:
        want["run"] = want["o"]  # the last iteration's running sum is the whole sum
    assert set(meta["vs_interpreter"]) == set(want)
    for name, ref in want.items():
        agree = meta["vs_interpreter"][name]
        assert agree["nonfinite_mismatch"] == 0
        assert agree["max_abs_diff"] <= 1e-6 * agree["max_abs"], (name, agree)
        got = np.fromfile(out / f"{name}.bin", np.float32).reshape(ref.shape)
        assert np.abs(got - ref).max() <= 1e-6 * np.abs(ref).max(), name
