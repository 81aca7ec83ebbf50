"""Gathers by a computed index in mods (issue 29, item 2): the attention-gym mods that
index a captured tensor with something other than ``q_idx`` / ``kv_idx`` themselves.

Relative-position bias ``rel[q_idx - kv_idx + Skv - 1]``, T5 buckets
``bias[h, bucket(q_idx - kv_idx)]`` and document offsets
``offsets[document_id[q_idx]]``, checked against float64 attention written out here
in numpy (not the mods' own eager run), in the interpreter with GQA, causal and tails.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from attkit import NEEDS_GXX, ROOT, assert_passes, bind, run

import fadsl as fd
from fadsl.errors import ExecutionError, KernelSyntaxError
from fadsl.ir import nodes as ir

NB, MAX_DIST = 32, 128  # T5: buckets per head, distance where the log buckets end
rel = fd.tensor(
    "rel", "Sq + Skv - 1", dtype="fp32", init=lambda s, g: g.standard_normal(s)
)
t5 = fd.tensor("t5", "N", NB, dtype="fp32", init=lambda s, g: g.standard_normal(s))
document_id = fd.tensor(
    "document_id", "Sq", dtype="i32", init=lambda s, g: np.arange(s[0]) * 4 // s[0]
)
offsets = fd.tensor("offsets", 5, dtype="i32", init=lambda s, g: np.arange(s[0]) * 50)


def rel_bias(score, b, h, q_idx, kv_idx):
    return score + rel[q_idx - kv_idx + fd.shape.Skv - 1]


def bucket(rel_pos):
    """T5's bidirectional bucket of ``rel_pos`` (attention-gym / mesh-tensorflow)."""
    half, exact = NB // 2, NB // 4
    side = fd.cast(rel_pos > 0, fd.i32) * half
    d = fd.abs(rel_pos)
    big = exact + fd.cast(
        fd.log(fd.cast(fd.maximum(d, 1), fd.f32) / exact)
        / math.log(MAX_DIST / exact)
        * (half - exact),
        fd.i32,
    )
    return side + fd.where(d < exact, d, fd.minimum(big, half - 1))


def t5_bias(score, b, h, q_idx, kv_idx):
    return score + t5[h, bucket(kv_idx - q_idx)]


def doc_offset(score, b, h, q_idx, kv_idx):
    start = offsets[document_id[q_idx]]
    return score - 0.01 * fd.cast(q_idx - start, fd.f32)


def np_bucket(r: np.ndarray) -> np.ndarray:
    half, exact = NB // 2, NB // 4
    side = np.where(r > 0, half, 0)
    d = np.abs(r)
    big = exact + np.trunc(
        np.log(np.maximum(d, 1).astype(np.float32) / exact)
        / math.log(MAX_DIST / exact)
        * (half - exact)
    ).astype(np.int64)
    return side + np.where(d < exact, d, np.minimum(big, half - 1))


def reference(name: str, x: dict[str, np.ndarray], causal: bool) -> np.ndarray:
    q, k, v = (x[n].astype(np.float64) for n in ("q", "k", "v"))
    k, v = (np.repeat(t, q.shape[1] // t.shape[1], axis=1) for t in (k, v))
    s = q @ k.transpose(0, 1, 3, 2) * q.shape[-1] ** -0.5
    _, n, sq, skv = s.shape
    qi, ki = np.arange(sq)[:, None], np.arange(skv)[None, :]
    if name == "rel_bias":
        s = s + x["rel"].astype(np.float64)[qi - ki + skv - 1]
    elif name == "t5_bias":
        s = s + x["t5"].astype(np.float64)[:, np_bucket(ki - qi)]
    elif name == "doc_offset":
        start = x["offsets"][x["document_id"]][:, None]
        s = s - 0.01 * (qi - start)
    if causal:
        s = np.where(ki <= qi + (skv - sq), s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isneginf(m), 0.0, m))
    l = p.sum(axis=-1, keepdims=True)
    return (p @ v) / np.where(l == 0.0, 1.0, l)


KERNELS = {
    "rel_bias": fd.attention(name="rel_bias", score_mod=rel_bias, causal=True),
    "t5_bias": fd.attention(name="t5_bias", score_mod=t5_bias),
    "doc_offset": fd.attention(name="doc_offset", score_mod=doc_offset, causal=True),
}
SHAPE = dict(B=1, N=4, Nkv=2, Sq=200, Skv=300, D=32)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_gathers_match_float64(name: str, dtype: str) -> None:
    shape = dict(SHAPE, Skv=200) if name == "doc_offset" else SHAPE
    r = run(KERNELS[name], shape, dtype, sets=dict(block_q=64, block_kv=64))
    ref = reference(name, r.inputs, causal=KERNELS[name].spec.causal)
    atol = 4e-3 if dtype == "fp16" else 2.5e-2
    np.testing.assert_allclose(r.out["o"].astype(np.float64), ref, rtol=0, atol=atol)


def _gathers(kdef, shape) -> list[ir.Gather]:
    kernel = bind(kdef, shape, sets=dict(block_q=64, block_kv=64)).kernel
    found: list[ir.Gather] = []

    def walk(body) -> None:
        for op in body:
            if isinstance(op, ir.Gather):
                found.append(op)
            walk(getattr(op, "body", ()))

    walk(kernel.body)
    return found


def test_a_relative_position_window_is_block_q_plus_block_kv_minus_one_wide() -> None:
    g, *_ = _gathers(KERNELS["rel_bias"], SHAPE)
    (width,) = g.table.type.shape
    # block_q + block_kv - 1 in whole 32-byte blocks, not the table's Sq + Skv - 1
    assert str(width) == "16*CeilDiv(block_kv + block_q - 1, 16)"


def test_t5_buckets_read_the_whole_row_and_are_proven_in_range() -> None:
    g, *_ = _gathers(KERNELS["t5_bias"], SHAPE)
    assert g.table.type.shape == (NB,) and g.proven


def test_an_index_outside_the_table_stops_the_interpreter() -> None:
    short = fd.tensor("rel", "Skv", dtype="fp32")

    def bad(score, b, h, q_idx, kv_idx):
        return score + short[q_idx - kv_idx + fd.shape.Skv - 1]

    with pytest.raises(ExecutionError) as info:
        run(fd.attention(name="bad_rel", score_mod=bad), SHAPE)
    assert info.value.code == "gather_index_out_of_range"
    assert info.value.loc.line == bad.__code__.co_firstlineno + 1


def test_an_unbounded_index_into_a_symbolic_dimension_is_refused() -> None:
    table = fd.tensor("table", "Skv", dtype="fp32")
    ids = fd.tensor("ids", "Sq", dtype="i32")

    def unbounded(score, b, h, q_idx, kv_idx):
        return score + table[ids[q_idx]]

    with pytest.raises(KernelSyntaxError) as info:
        bind(fd.attention(name="unbounded", score_mod=unbounded), SHAPE)
    assert info.value.code == "gather_index_unbounded"


def test_check_reports_each_gathers_window_and_range_check(tmp_path: Path) -> None:
    src = tmp_path / "kernel.py"
    src.write_text(SIM_SOURCE)
    cmd = [sys.executable, "-m", "fadsl", "check", str(src), "--shape"]
    cmd += ["B=1,N=4,Nkv=2,Sq=200,Skv=300,D=64", "--set", "block_q=64"]
    proc = subprocess.run(
        cmd + ["--set", "block_kv=64"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = {
        ln.split("`")[1]: ln
        for ln in proc.stdout.splitlines()
        if ln.startswith("gather `")
    }
    assert (
        "128 x f32 = 512 B" in lines["rel"] and "checked once per block" in lines["rel"]
    )
    assert "32 x f32 = 128 B" in lines["t5"] and "proven" in lines["t5"]
    assert (
        "16 x f32 = 64 B" in lines["offsets"]
        and "read from a tensor" in lines["offsets"]
        and "Trap()" in lines["offsets"]
    )


SIM_SOURCE = """
import math

import numpy as np

import fadsl as fd

NB, MAX_DIST = 32, 128
rel = fd.tensor("rel", "Sq + Skv - 1", init=lambda s, g: g.standard_normal(s))
t5 = fd.tensor("t5", "N", NB, init=lambda s, g: g.standard_normal(s))
document_id = fd.tensor(
    "document_id", "Sq", dtype="i32", init=lambda s, g: np.arange(s[0]) * 4 // s[0]
)
offsets = fd.tensor("offsets", 5, dtype="i32", init=lambda s, g: np.arange(s[0]) * 50)


def bucket(rel_pos):
    half, exact = NB // 2, NB // 4
    side = fd.cast(rel_pos > 0, fd.i32) * half
    d = fd.abs(rel_pos)
    big = exact + fd.cast(
        fd.log(fd.cast(fd.maximum(d, 1), fd.f32) / exact)
        / math.log(MAX_DIST / exact)
        * (half - exact),
        fd.i32,
    )
    return side + fd.where(d < exact, d, fd.minimum(big, half - 1))


def gathers(score, b, h, q_idx, kv_idx):
    start = offsets[document_id[q_idx]]
    score = score + rel[q_idx - kv_idx + fd.shape.Skv - 1] + t5[h, bucket(kv_idx - q_idx)]
    return score - 0.01 * fd.cast(q_idx - start, fd.f32)


kernel = fd.attention(name="gathers", score_mod=gathers, causal=True)
"""
ULP = {"fp16": 2.0**-10, "bf16": 2.0**-7}


def read_bin(path: Path, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    if dtype == "fp16":
        return np.fromfile(path, np.float16).astype(np.float64).reshape(shape)
    bits = np.fromfile(path, np.uint16).astype(np.uint32) << 16
    return bits.view(np.float32).astype(np.float64).reshape(shape)


def all_three(x: dict[str, np.ndarray]) -> np.ndarray:
    """float64 attention with the three gathers of SIM_SOURCE, causal."""
    q, k, v = x["q"], x["k"], x["v"]
    k, v = (np.repeat(t, q.shape[1] // t.shape[1], axis=1) for t in (k, v))
    s = q @ k.transpose(0, 1, 3, 2) * q.shape[-1] ** -0.5
    _, n, sq, skv = s.shape
    qi, ki = np.arange(sq)[:, None], np.arange(skv)[None, :]
    start = x["offsets"][x["document_id"]][:, None]
    s = s + x["rel"].astype(np.float64)[qi - ki + skv - 1]
    s = s + x["t5"].astype(np.float64)[:, np_bucket(ki - qi)] - 0.01 * (qi - start)
    s = np.where(ki <= qi + (skv - sq), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p @ v) / p.sum(axis=-1, keepdims=True)


@pytest.mark.cpu_runtime
@NEEDS_GXX
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_gathers_in_the_cpu_runtime(dtype: str, tmp_path: Path) -> None:
    """One build per dtype: relative positions, T5 buckets and document offsets in
    one score_mod; GQA, causal, tails in Sq and Skv (blocks of 64)."""
    src = tmp_path / "kernel.py"
    src.write_text(SIM_SOURCE)
    out = tmp_path / "sim"
    shape = "B=1,N=4,Nkv=2,Sq=200,Skv=300,D=64"
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "-o", str(out), "--shape"]
    cmd += [shape, "--dtype", dtype, "--set", "block_q=64", "--set", "block_kv=64"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    assert meta["vs_interpreter"]["o"]["max_abs_diff"] <= 4 * ULP[dtype]
    dims = {"q": (1, 4, 200, 64), "k": (1, 2, 300, 64), "v": (1, 2, 300, 64)}
    data = {n: read_bin(out / f"{n}.bin", dtype, s) for n, s in dims.items()}
    data["rel"] = np.fromfile(out / "rel.bin", np.float32)
    data["t5"] = np.fromfile(out / "t5.bin", np.float32).reshape(4, NB)
    data["document_id"] = np.fromfile(out / "document_id.bin", np.int32)
    data["offsets"] = np.fromfile(out / "offsets.bin", np.int32)
    assert data["rel"].shape == (499,) and data["document_id"].shape == (200,)
    o = read_bin(out / "o.bin", dtype, dims["q"])
    atol = 4e-3 if dtype == "fp16" else 2.5e-2
    np.testing.assert_allclose(o, all_three(data), rtol=0, atol=atol)


BACKWARD = {
    name: fd.attention_backward(name=name + "_bwd", score_mod=mod, causal=causal)
    for name, mod, causal in (
        ("rel_bias", rel_bias, True),
        ("t5_bias", t5_bias, False),
        ("doc_offset", doc_offset, True),
    )
}


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(BACKWARD))
def test_backward_of_gathering_mods_matches_float64(name: str, dtype: str) -> None:
    """dq, dk, dv of fd.attention_backward with each gather, by the tolerance rule
    against attention_grad_ref (the float64 gradients; finite differences below)."""
    shape = dict(SHAPE, Skv=200) if name == "doc_offset" else SHAPE
    r = run(BACKWARD[name], shape, dtype, sets=dict(block_q=64, block_kv=64))
    assert_passes(r)
    assert sorted(v.name for v in r.check.verdicts) == ["dk", "dq", "dv"]


@pytest.mark.parametrize("name", sorted(BACKWARD))
def test_float64_gradients_of_gathering_mods_equal_finite_differences(
    name: str,
) -> None:
    from test_attention_grad_ref import _finite_difference, _inputs

    from fadsl.frontend import attention_grad_ref

    spec = KERNELS[name].spec
    shape = {"B": 1, "N": 2, "Nkv": 1, "Sq": 5, "Skv": 5 if name == "doc_offset" else 4}
    shape["D"] = 3
    data = _inputs(spec, shape)
    with np.errstate(all="ignore"):
        grads = attention_grad_ref.reference(spec, data, shape, {})
    for x, grad in (("q", "dq"), ("k", "dk"), ("v", "dv")):
        fd_grad = _finite_difference(spec, data, shape, x)
        assert np.abs(fd_grad).max() > 1e-3, f"{grad}: the loss does not depend on it"
        np.testing.assert_allclose(grads[grad], fd_grad, rtol=1e-5, atol=1e-7)


@pytest.mark.cpu_runtime
@NEEDS_GXX
def test_backward_of_gathers_in_the_cpu_runtime(tmp_path: Path) -> None:
    """The three gathers of SIM_SOURCE in fd.attention_backward (GQA, causal, tails):
    dq, dk, dv by the tolerance rule and against the interpreter."""
    src = tmp_path / "kernel.py"
    src.write_text(
        SIM_SOURCE.replace(
            'fd.attention(name="gathers"', 'fd.attention_backward(name="gathers_bwd"'
        )
    )
    out = tmp_path / "sim"
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "-o", str(out), "--shape"]
    cmd += ["B=1,N=4,Nkv=2,Sq=200,Skv=300,D=64", "--set", "block_q=64"]
    cmd += ["--set", "block_kv=64"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert sorted(meta["check"]) == ["dk", "dq", "dv"]
    assert all(v["passed"] for v in meta["check"].values()), meta["check"]
    for name in ("dq", "dk", "dv"):
        assert meta["vs_interpreter"][name]["max_abs_diff"] <= 4 * ULP["fp16"]


def truncating(score, b, h, q_idx, kv_idx):
    return score + 0.05 * fd.cast(
        fd.cast(fd.cast(kv_idx - q_idx, fd.f32) * 0.37, fd.i32), fd.f32
    )


def test_a_cast_of_a_float_tile_to_i32_truncates_toward_zero() -> None:
    """lower_vector keeps integer tiles in f32: the cast is where(x >= 0, floor(x),
    -floor(-x)) there (int_casts.py), numpy's truncation for negative values too."""
    shape = dict(B=1, N=2, Sq=70, Skv=90, D=32)
    r = run(fd.attention(name="trunc", score_mod=truncating), shape, "fp16")
    q, k, v = (r.inputs[n].astype(np.float64) for n in ("q", "k", "v"))
    s = q @ k.transpose(0, 1, 3, 2) * 32**-0.5
    ki, qi = np.arange(90)[None, :], np.arange(70)[:, None]
    s = s + 0.05 * np.trunc(((ki - qi).astype(np.float32) * np.float32(0.37)))
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    ref = (p @ v) / p.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(r.out["o"].astype(np.float64), ref, rtol=0, atol=4e-3)


SHORT_TABLE = """
import fadsl as fd

rel = fd.tensor("rel", "Skv")  # one entry short of every q_idx - kv_idx + Skv - 1


def rel_bias(score, b, h, q_idx, kv_idx):
    return score + rel[q_idx - kv_idx + fd.shape.Skv - 1]


kernel = fd.attention(name="short_rel", score_mod=rel_bias, causal=True)
"""


@pytest.mark.cpu_runtime
@NEEDS_GXX
def test_an_unproven_range_outside_the_tensor_traps_in_the_generated_kernel(
    tmp_path: Path,
) -> None:
    src = tmp_path / "kernel.py"
    src.write_text(SHORT_TABLE)
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "-o", str(tmp_path / "o")]
    cmd += ["--shape", "B=1,N=2,Sq=100,Skv=100,D=64", "--set", "block_q=64"]
    cmd += ["--set", "block_kv=64"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "Trap on AIV" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


BAD_DOCUMENT = """
import numpy as np

import fadsl as fd

# ids 0..7 into a table of 5 offsets: rows from Sq * 5 / 8 on read past `offsets`
document_id = fd.tensor(
    "document_id", "Sq", dtype="i32", init=lambda s, g: np.arange(s[0]) * 8 // s[0]
)
offsets = fd.tensor("offsets", 5, dtype="i32", init=lambda s, g: np.arange(s[0]) * 50)


def doc_offset(score, b, h, q_idx, kv_idx):
    start = offsets[document_id[q_idx]]
    return score - 0.01 * fd.cast(q_idx - start, fd.f32)


kernel = fd.attention(name="bad_document", score_mod=doc_offset)
"""


@pytest.mark.cpu_runtime
@NEEDS_GXX
def test_an_index_read_from_a_tensor_outside_it_traps_in_the_generated_kernel(
    tmp_path: Path,
) -> None:
    """Before, the chip clamped such an index into the window (a 16-entry window of a
    5-entry table read its zero padding) and ran on with wrong scores."""
    src = tmp_path / "kernel.py"
    src.write_text(BAD_DOCUMENT)
    cmd = [sys.executable, "-m", "fadsl", "sim", str(src), "-o", str(tmp_path / "o")]
    cmd += ["--shape", "B=1,N=2,Sq=100,Skv=100,D=64", "--set", "block_q=64"]
    cmd += ["--set", "block_kv=64"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "Trap on AIV" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
