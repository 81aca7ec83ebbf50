"""``fadsl tune`` at a shape no device can hold fails fast (issue 28).

`fadsl tune fa2.py --shape B=1,N=4096,Sq=1000000000,Skv=1000000000,D=128` printed
nothing and had not returned after 300 s: the cost model evaluates every task of the
grid (3.2e10 here) at every configuration. Tensors that exceed the chip's device memory
(``Target.hbm_bytes``) are now refused before anything is planned.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from fadsl import target as targets
from fadsl.driver.source import load_source, select
from fadsl.errors import ResourceError, UsageError
from fadsl.plan.resources.device_memory import check_device_memory, tensor_sizes

ROOT = Path(__file__).resolve().parents[2]
FA2 = str(ROOT / "examples" / "fa2.py")
ABSURD = "B=1,N=4096,Sq=1000000000,Skv=1000000000,D=128"


def test_tune_of_an_absurd_shape_fails_fast_with_the_sizes() -> None:
    """The issue's command: an error naming the tensors' size and the device's, at
    the --shape argument, within a minute even on a loaded machine (it hung)."""
    start = time.monotonic()
    cmd = [sys.executable, "-m", "fadsl", "tune", FA2, "--shape", ABSURD]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "resource error[E99]" in done.stderr
    assert "3,814.7 TiB, more than the 64.0 GiB of device memory" in done.stderr
    assert "`q` alone is 953.7 TiB" in done.stderr
    assert "--shape B=1,N=4096" in done.stderr
    assert time.monotonic() - start < 120


def test_a_shape_that_fits_passes_and_sizes_count_every_gm_tensor() -> None:
    kernel = select(load_source(FA2), None).build({}, None)
    env = {"B": 1, "N": 8, "Sq": 4096, "Skv": 4096, "D": 128}
    sizes = tensor_sizes(kernel, env)
    assert sizes == {n: 8 * 4096 * 128 * 2 for n in ("q", "k", "v", "o")}
    b4 = targets.get("ascend910b4")
    check_device_memory(kernel, env, b4, None)
    big = {**env, "B": 1024}  # 4 tensors of 8 GiB: exactly the 910B4's 32 GiB
    check_device_memory(kernel, big, b4, None)
    with pytest.raises(ResourceError, match="device memory of ascend910b4"):
        check_device_memory(kernel, {**big, "B": 1025}, b4, None)


def test_hbm_bytes_is_optional_and_checked_in_a_target_file(tmp_path: Path) -> None:
    import json

    data = json.loads((ROOT / "fadsl" / "targets" / "ascend910b2.json").read_text())
    del data["hbm_bytes"]
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert targets.load_file(str(path)).hbm_bytes == 0  # unknown: not checked
    data["hbm_bytes"] = -1
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(UsageError, match="hbm_bytes must be a positive integer"):
        targets.load_file(str(path))
