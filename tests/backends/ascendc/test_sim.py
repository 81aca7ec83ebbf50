"""fadsl sim: the generated Ascend C, built against the CPU runtime, against the interpreter.

Each configuration passes the tolerance rule against float64 and agrees with the
interpreter to within a few units in the last place of the output dtype (they execute
the same operations in the same order; sums inside a repeat and the cube's accumulation
order differ). The largest difference seen is printed (run with -s).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FA2 = ROOT / "examples" / "fa2.py"
ULP = {"fp16": 2.0**-10, "bf16": 2.0**-7}

pytestmark = [
    pytest.mark.cpu_runtime,
    pytest.mark.skipif(
        shutil.which("g++") is None or shutil.which("cmake") is None,
        reason="needs g++ and cmake",
    ),
]

CONFIGS = [
    # dtype, causal, D, B, N, Sq, Skv
    ("fp16", False, 128, 1, 2, 256, 256),
    # the README's main job (its first build is the smoke set's sim)
    pytest.param("fp16", True, 128, 1, 2, 300, 256, marks=pytest.mark.smoke),
    ("fp16", False, 64, 2, 1, 200, 333),
    ("fp16", True, 64, 1, 1, 77, 130),
    # causal's longest-first snake (plan/schedule/task_order.py): 30 tasks on 24 cores, so the
    # odd last round skips slots; the diagonal guard (plan/schedule/diag_guard.py) with tails
    ("fp16", True, 64, 1, 5, 700, 900),
    ("bf16", False, 128, 1, 1, 130, 200),
    ("bf16", True, 128, 1, 2, 333, 129),
    ("bf16", False, 64, 1, 1, 1, 1),
    ("bf16", True, 64, 2, 1, 64, 300),
]


@pytest.mark.parametrize("dtype,causal,D,B,N,Sq,Skv", CONFIGS)
def test_sim_agrees_with_interpreter_and_reference(
    tmp_path: Path, dtype: str, causal: bool, D: int, B: int, N: int, Sq: int, Skv: int
) -> None:
    out = tmp_path / "sim"
    cmd = [
        sys.executable,
        "-m",
        "fadsl",
        "sim",
        str(FA2),
        "--dtype",
        dtype,
        "--set",
        f"causal={causal}",
        "--shape",
        f"B={B},N={N},Sq={Sq},Skv={Skv},D={D}",
        "-o",
        str(out),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["check"]["o"]["passed"]
    agree = meta["vs_interpreter"]["o"]
    assert agree["nonfinite_mismatch"] == 0
    bound = 4 * ULP[dtype] * max(agree["max_abs"], 1.0)
    print(
        f"{dtype} causal={causal} D={D} [{B},{N},{Sq},{Skv}]: "
        f"max|sim - interp| = {agree['max_abs_diff']:.3e} (bound {bound:.3e})"
    )
    assert agree["max_abs_diff"] <= bound


def test_runtime_stops_a_ub_overflow_the_checker_would_refuse(tmp_path: Path) -> None:
    # A chip of our own with a 64 KiB UB: the checker refuses FA2's defaults there; with the
    # proof skipped, the CPU runtime must stop the kernel at InitBuffer by itself.
    chip = json.loads((ROOT / "fadsl" / "targets" / "ascend910b1.json").read_text())
    chip.update(name="small_ub_chip", ub_bytes=64 * 1024)
    target = tmp_path / "small_ub_chip.json"
    target.write_text(json.dumps(chip))
    shape = "B=1,N=1,Sq=128,Skv=128,D=128"
    base = [str(FA2), "--shape", shape, "--target-file", str(target)]
    check = subprocess.run(
        [sys.executable, "-m", "fadsl", "check", *base],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 1 and "UB overflow" in check.stderr
    cmd = [
        sys.executable,
        "-m",
        "fadsl",
        "sim",
        *base,
        "--skip-resource-proof",
        "-o",
        str(tmp_path / "x"),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1
    assert "InitBuffer on AIV" in proc.stderr and "UB overflow" in proc.stderr
    assert "capacity 65536 B on small_ub_chip" in proc.stderr
    assert not (tmp_path / "x").exists()


def test_checked_in_project_builds_with_plain_cmake(tmp_path: Path) -> None:
    from fadsl.runtime import include_dir

    project = tmp_path / "fa2"
    shutil.copytree(ROOT / "generated" / "fa2", project)
    build = project / "build"
    for cmd in (
        [
            "cmake",
            "-S",
            str(project),
            "-B",
            str(build),
            "-DRUN_MODE=fadsl",
            f"-DFADSL_RUNTIME_DIR={include_dir()}",
        ],
        ["cmake", "--build", str(build), "-j", "2"],
    ):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (build / "fa2_main").is_file()


def test_row_stride_over_uint16_stops_sim_without_the_proof(tmp_path: Path) -> None:
    """Issue 12 defect 5: with the proof skipped, gqa BSND at N=520, D=128 passes a row
    stride of 66,560 to a uint16_t field; the run must stop, not give wrong numbers."""
    cmd = [
        sys.executable,
        "-m",
        "fadsl",
        "sim",
        str(ROOT / "examples" / "gqa.py"),
        "--shape",
        "B=1,N=520,Nkv=8,Sq=32,Skv=32,D=128",
        "--skip-resource-proof",
        "-o",
        str(tmp_path / "x"),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "Nd2NzParams.srcDValue = 66560 does not fit its uint16_t field" in proc.stderr
    )
    assert not (tmp_path / "x").exists()
