"""Scalar math in mods (issue 29, item 1): ALiBi with the slope computed from the head.

FlexAttention users write ``score + 2 ** (-8 * (h + 1) / H) * (kv_idx - q_idx)``. The
slope depends on the head only, so fadsl computes it once per task on the scalar unit
(a ``scalar_def`` hoisted before the KV loop); math on positions stays vector code.
Checked against float64 attention written out here in numpy (not the mods' own eager
run), in the interpreter and, for one variant, through ``fadsl sim``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from attkit import NEEDS_GXX, ROOT, assert_passes, bind, run

import fadsl as fd
from fadsl.errors import KernelSyntaxError
from fadsl.ir import nodes as ir
from fadsl.passes import run_pipeline


def alibi_exp2(score, b, h, q_idx, kv_idx):
    return score + fd.exp2(-8.0 * (h + 1) / fd.shape.N) * (kv_idx - q_idx)


def alibi_pow(score, b, h, q_idx, kv_idx):
    return score + 2 ** (-8.0 * (h + 1) / fd.shape.N) * (kv_idx - q_idx)


def mixed(score, b, h, q_idx, kv_idx):
    a = fd.sqrt(fd.log2(h + 2.0)) * fd.log(fd.exp(h * 0.25) + 1.0)
    c = fd.minimum(fd.abs(h - 1.5), 1.0) + fd.maximum(h // 2, 1) + (h % 2) ** 2
    w = (
        fd.where(h * 2 >= fd.shape.N, a, c)
        + fd.cast(h, fd.f32) / fd.shape.Sq * fd.shape.Skv
    )
    k = fd.cast(w * 3.0, fd.i32)
    rel = kv_idx - q_idx
    return (
        score * (1.0 / (1.0 + a))
        + (w * 3.0 - k) * rel * 0.01
        + fd.log2(kv_idx + 1.0) * 0.1
        + (q_idx - kv_idx) ** 2 * 1e-4
    )


def head_window(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx) < fd.cast(fd.exp2(h + 4.0), fd.i32)


def slope(h: np.ndarray, n: int) -> np.ndarray:
    return 2.0 ** (-8.0 * (h + 1) / n)


def bias_mixed(s, h, qi, ki, n, sq, skv):
    a = np.sqrt(np.log2(h + 2.0)) * np.log(np.exp(h * 0.25) + 1.0)
    c = np.minimum(np.abs(h - 1.5), 1.0) + np.maximum(h // 2, 1) + (h % 2) ** 2
    w = np.where(h * 2 >= n, a, c) + h / sq * skv
    k = np.trunc(w * 3.0)
    rel = ki - qi
    return (
        s / (1.0 + a)
        + (w * 3.0 - k) * rel * 0.01
        + np.log2(ki + 1.0) * 0.1
        + (qi - ki) ** 2.0 * 1e-4
    )


def reference(name: str, x: dict[str, np.ndarray], causal: bool) -> np.ndarray:
    q, k, v = (x[n].astype(np.float64) for n in ("q", "k", "v"))
    k, v = (np.repeat(t, q.shape[1] // t.shape[1], axis=1) for t in (k, v))
    s = q @ k.transpose(0, 1, 3, 2) * q.shape[-1] ** -0.5
    _, n, sq, skv = s.shape
    h = np.arange(n, dtype=np.float64)[None, :, None, None]
    qi, ki = np.arange(sq)[:, None], np.arange(skv)[None, :]
    if name.startswith("alibi"):
        s = s + slope(h, n) * (ki - qi)
    elif name == "mixed":
        s = bias_mixed(s, h, qi, ki, n, sq, skv)
    elif name == "head_window":
        s = np.where((qi - ki) < np.trunc(2.0 ** (h + 4.0)), s, -np.inf)
    if causal:
        s = np.where(ki <= qi + (skv - sq), s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    p = np.exp(s - np.where(np.isneginf(m), 0.0, m))
    l = p.sum(axis=-1, keepdims=True)
    return (p @ v) / np.where(l == 0.0, 1.0, l)


KERNELS = {
    "alibi_exp2": fd.attention(name="alibi_exp2", score_mod=alibi_exp2, causal=True),
    "alibi_pow": fd.attention(name="alibi_pow", score_mod=alibi_pow, causal=True),
    "mixed": fd.attention(name="mixed", score_mod=mixed),
    "head_window": fd.attention(name="head_window", mask_mod=head_window, causal=True),
}
SHAPE = dict(B=1, N=4, Nkv=2, Sq=200, Skv=300, D=32)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_scalar_math_in_mods_matches_float64(name: str, dtype: str) -> None:
    r = run(KERNELS[name], SHAPE, dtype)
    assert_passes(r)
    ref = reference(name, r.inputs, causal=KERNELS[name].spec.causal)
    atol = 4e-3 if dtype == "fp16" else 2.5e-2
    np.testing.assert_allclose(r.out["o"].astype(np.float64), ref, rtol=0, atol=atol)


def test_a_per_head_value_is_computed_once_per_task_before_the_kv_loop() -> None:
    kernel = run_pipeline(bind(KERNELS["alibi_pow"], SHAPE).kernel)
    (grid,) = [op for op in kernel.body if isinstance(op, ir.Grid)]
    defs = [op for op in grid.body if isinstance(op, ir.ScalarDef)]
    assert [d.fn for d in defs] == ["pow"]

    def inside(body: tuple[ir.Op, ...]) -> list[ir.Op]:
        out: list[ir.Op] = []
        for op in body:
            if isinstance(op, ir.For):
                out += [x for x in op.body if isinstance(x, ir.ScalarDef)]
                out += inside(op.body)
        return out

    assert inside(grid.body) == []


def sine_bias(score, b, h, q_idx, kv_idx):
    return score + (-2.0) ** (kv_idx * 0.1)


def test_unsupported_math_is_refused_at_the_mods_line() -> None:
    with pytest.raises(KernelSyntaxError) as info:
        bind(fd.attention(name="sine", score_mod=sine_bias), SHAPE)
    err = info.value
    assert err.loc is not None and err.loc.file == __file__
    assert err.loc.line == sine_bias.__code__.co_firstlineno + 1
    assert "a constant base must be positive" in str(err) and "fd.exp2" in str(err)


ALIBI_SOURCE = """
import fadsl as fd


def alibi(score, b, h, q_idx, kv_idx):
    return score + 2 ** (-8.0 * (h + 1) / fd.shape.N) * (kv_idx - q_idx)


kernel = fd.attention(name="alibi_head", score_mod=alibi, causal=True)
"""
ULP = {"fp16": 2.0**-10, "bf16": 2.0**-7}


def read_bin(path: Path, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    if dtype == "fp16":
        return np.fromfile(path, np.float16).astype(np.float64).reshape(shape)
    bits = np.fromfile(path, np.uint16).astype(np.uint32) << 16
    return bits.view(np.float32).astype(np.float64).reshape(shape)


@pytest.mark.cpu_runtime
@NEEDS_GXX
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_head_computed_alibi_in_the_cpu_runtime(dtype: str, tmp_path: Path) -> None:
    """One build per dtype: GQA, causal, tails in Sq and Skv (blocks of 64)."""
    import json
    import subprocess
    import sys

    src = tmp_path / "kernel.py"
    src.write_text(ALIBI_SOURCE)
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
    o = read_bin(out / "o.bin", dtype, dims["q"])
    ref = reference("alibi_pow", data, causal=True)
    np.testing.assert_allclose(o, ref, rtol=0, atol=4e-3 if dtype == "fp16" else 2.5e-2)


HEADER = Path(fd.__file__).parent / "backends" / "ascendc" / "include" / "fadsl_tile.h"
STUBS = """
#include <cstdint>
#include <cstdio>
#define __aicore__
namespace fadsl {
inline float FloatBits(uint32_t bits) { union { uint32_t u; float f; } v; v.u = bits; return v.f; }
inline float Inf() { return FloatBits(0x7f800000u); }
inline float NegInf() { return FloatBits(0xff800000u); }
"""
MAIN = """
}  // namespace fadsl
int main() {
    float x, y;
    while (std::scanf("%a %a", &x, &y) == 2) {
        std::printf("%a %a %a %a %a %a %a\\n", fadsl::ScalarExp(x), fadsl::ScalarExp2(x),
                    fadsl::ScalarLog(x), fadsl::ScalarLog2(x), fadsl::ScalarSqrt(x),
                    fadsl::ScalarFloor(x), fadsl::ScalarPow(x, y));
    }
}
"""


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in f32 units in the last place (0 where both are the same inf / nan)."""
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    spacing = np.spacing(np.abs(want.astype(np.float32))).astype(np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(same, 0.0, np.abs(got - want) / spacing)


@NEEDS_GXX
def test_scalar_unit_math_is_close_to_float64(tmp_path: Path) -> None:
    """fadsl_tile.h's ScalarExp ... ScalarPow (what a scalar_def lowers to), built
    with g++ from the header's own text, against numpy in float64 rounded to f32:
    within 3 units in the last place (measured: exp, exp2, sqrt 1, log 2, log2 3 on
    40000 random inputs; pow: plus the rounding of y * log2 x)."""
    import subprocess

    text = HEADER.read_text()
    start = text.index("// Scalar math of mods")
    section = text[
        text.rindex("// ----", 0, start) : text.index("}  // namespace fadsl")
    ]
    src = tmp_path / "scalar.cpp"
    src.write_text(STUBS + section + MAIN)
    exe = tmp_path / "scalar"
    subprocess.run(["g++", "-O1", "-o", str(exe), str(src)], check=True)
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.uniform(-100, 100, 3000),
            np.exp(rng.uniform(-80, 80, 3000)),
            [0.0, 1.0, 2.0, 0.5, 1e-40, 3e38, -1.0, np.inf, -np.inf, 88.5, -103.0],
            -8.0 * np.arange(1, 33) / 32,
        ]
    ).astype(np.float32)
    y = rng.uniform(-4, 4, x.size).astype(np.float32)
    y[::3] = np.round(y[::3])
    inp = "\n".join(f"{float(a).hex()} {float(b).hex()}" for a, b in zip(x, y))
    out = subprocess.run([str(exe)], input=inp, capture_output=True, text=True).stdout
    got = np.array(
        [[float.fromhex(v) for v in line.split()] for line in out.splitlines()]
    )
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(all="ignore"):
        wants = [np.exp(x64), np.exp2(x64), np.log(x64), np.log2(x64), np.sqrt(x64)]
        wants += [np.floor(x64), np.power(x64, y64)]
    for k, want in enumerate(wants):
        with np.errstate(over="ignore"):
            want = want.astype(np.float32).astype(np.float64)
        err = ulps(got[:, k], want)
        limit = np.full(x.size, 3.0)
        if k == 6:  # pow: exp2(y * log2(x)) loses |y log2 x| * 2^-24 in the product
            with np.errstate(all="ignore"):
                t = np.abs(y64 * np.log2(np.abs(x64)))
            limit = np.where(np.isfinite(t), 4.0 + 2.5 * t, np.inf)
        bad = np.nan_to_num(err - limit, nan=0.0)
        assert bad.max() <= 0, (k, x[bad.argmax()], y[bad.argmax()], err[bad.argmax()])
