"""Chunked prefill on a paged cache through ``fadsl sim``: the generated Ascend C with
fadsl's CPU runtime, on given inputs (``--inputs``), against the float64 reference of
``test_paged_prefill.py`` (written there, gathering pages with numpy) and the
interpreter.

Two builds (fp16 causal with LSE; bf16 with sliding window 256 and softcap 50).
GQA (N=8, Nkv=2), pages of 16 in a block table drawn with repeats, ``block_q=64`` and
``block_kv=128`` (8 pages a KV block), so chunks of 1, 37 and 130 rows leave Q tails and
sequences of 200, 37 and 600 keys KV tails; one chunk is its whole sequence, one is a
decode step (1 row) after 199 cached keys, one 130 rows after 470 cached keys.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from test_paged_prefill import make_case, reference

ROOT = Path(__file__).resolve().parents[2]
KERNEL = """import fadsl as fd

kernel = fd.attention(name="prefill_sim", paged_kv=True, page_size=16, layout="TND",
                      causal=True, {variant})
"""
VARIANTS = {  # fp16 with LSE; bf16 with vLLM's sliding window 256 and softcap 50
    "fp16": ("return_lse=True", np.float16, {}),
    "bf16": (
        'dtype="bf16", window=(255, 0), softcap=50.0',
        ml_dtypes.bfloat16,
        dict(window=256, softcap=50.0),
    ),
}
SEQS = [(1, 200), (37, 37), (130, 600)]

pytestmark = [
    pytest.mark.cpu_runtime,
    pytest.mark.skipif(
        shutil.which("g++") is None or shutil.which("cmake") is None,
        reason="needs g++ and cmake",
    ),
]


@pytest.mark.parametrize("variant", VARIANTS)
def test_chunks_with_tails_and_gqa_in_the_cpu_runtime(
    variant: str, tmp_path: Path
) -> None:
    keywords, dtype, masks = VARIANTS[variant]
    data = make_case(SEQS, (8, 2), 128, seed=5, pages=128)  # a smaller cache
    for name in ("q", "k_cache", "v_cache"):  # the kernel's dtype (bf16 -> fp16 exact)
        data[name] = data[name].astype(dtype)
    folder = tmp_path / "inputs"
    folder.mkdir()
    for name, value in data.items():
        value.tofile(folder / f"{name}.bin")
    src = tmp_path / "prefill_sim.py"
    src.write_text(KERNEL.format(variant=keywords))
    out = tmp_path / "sim"
    shape = f"B=3,N=8,Nkv=2,Sq={sum(s[0] for s in SEQS)},D=128,Pages=128,MaxPages=38"
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "--shape", shape]
    cmd += ["--set", "block_q=64", "--set", "block_kv=128", "--inputs", str(folder)]
    proc = subprocess.run(
        cmd + ["-o", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    for name, agree in meta["vs_interpreter"].items():
        assert agree["nonfinite_mismatch"] == 0, name
        assert agree["max_abs_diff"] <= (4 * 2.0**-10 if name == "o" else 1e-5), agree
    o = np.fromfile(out / "o.bin", dtype).reshape(data["q"].shape)
    np.testing.assert_allclose(
        o.astype(np.float64), reference(data, **masks), atol=1.5e-2, rtol=1e-2
    )
