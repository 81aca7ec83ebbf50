"""fadsl_tile.h's ScalarSin / ScalarCos / ScalarTanh / ScalarSigmoid (what a mod's
``fd.sin(h * theta)`` of a per-task scalar lowers to), built with g++ from the
header's own text, against numpy in float64 rounded to f32 (issue 29, item 1)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
from attkit import NEEDS_GXX
from test_mod_scalar_math import HEADER, STUBS, ulps

MAIN = """
}  // namespace fadsl
int main() {
    float x;
    while (std::scanf("%a", &x) == 1) {
        std::printf("%a %a %a %a\\n", fadsl::ScalarSin(x), fadsl::ScalarCos(x),
                    fadsl::ScalarTanh(x), fadsl::ScalarSigmoid(x));
    }
}
"""


def run_header(tmp_path: Path, x: np.ndarray) -> np.ndarray:
    text = HEADER.read_text()
    start = text.index("// Scalar math of mods")
    section = text[
        text.rindex("// ----", 0, start) : text.index("}  // namespace fadsl")
    ]
    src = tmp_path / "trig.cpp"
    src.write_text(STUBS + section + MAIN)
    exe = tmp_path / "trig"
    subprocess.run(["g++", "-O1", "-o", str(exe), str(src)], check=True)
    inp = "\n".join(float(a).hex() for a in x)
    out = subprocess.run([str(exe)], input=inp, capture_output=True, text=True).stdout
    return np.array(
        [[float.fromhex(v) for v in line.split()] for line in out.splitlines()]
    )


@NEEDS_GXX
def test_scalar_trig_is_close_to_float64(tmp_path: Path) -> None:
    """sin / cos: |x| < 1e4, within 2 units in the last place of the f32-rounded
    exact value, or 2^-24 absolute where the value is below 1 in magnitude (near a
    zero the reduction's absolute error dominates); tanh and sigmoid within 3 ulp."""
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.uniform(-4, 4, 4000),
            rng.uniform(-1e4, 1e4, 4000),
            np.exp(rng.uniform(-30, 9, 2000)) * rng.choice([-1, 1], 2000),
            [0.0, -0.0, 1e-40, np.pi, np.pi / 2, 3 * np.pi / 4, 9.5, -20.0, 100.0],
            np.arange(64) * 0.0625,
        ]
    ).astype(np.float32)
    got = run_header(tmp_path, x)
    x64 = x.astype(np.float64)
    sig = np.exp(-np.logaddexp(0.0, -x64))
    wants = [np.sin(x64), np.cos(x64), np.tanh(x64), sig]
    for k, want in enumerate(wants):
        err = ulps(got[:, k], want.astype(np.float32).astype(np.float64))
        ok = err <= (2.0 if k < 2 else 3.0)
        if k < 2:
            ok |= np.abs(got[:, k] - want) <= 2.0**-24
        assert ok.all(), (k, x[~ok][:5], err[~ok][:5])


@NEEDS_GXX
def test_scalar_trig_special_values(tmp_path: Path) -> None:
    """NaN / infinities / |x| > 2^20 give NaN for sin and cos (documented in the
    header); tanh and sigmoid saturate to -1 / 1 and 0 / 1."""
    x = np.array([np.nan, np.inf, -np.inf, 2.0**21, -50.0, 50.0], np.float32)
    got = run_header(tmp_path, x)
    assert np.isnan(got[:4, 0]).all() and np.isnan(got[:4, 1]).all()
    np.testing.assert_array_equal(got[1:3, 2], [1.0, -1.0])
    np.testing.assert_array_equal(got[1:3, 3], [1.0, 0.0])
    np.testing.assert_array_equal(got[4:, 2], [-1.0, 1.0])
    assert got[4, 3] < 1e-21 and got[5, 3] == 1.0
