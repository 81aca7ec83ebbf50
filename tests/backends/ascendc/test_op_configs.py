"""``fadsl compile --configs``: fa2 for fp16 + bf16 and D 64 + 128 as one op package
(``backends/ascendc/op_multi.py``). Its kernel entry, compiled once with fadsl's CPU
runtime, runs every tiling key (ICPU_SET_TILING_KEY) and each gives the interpreter's
output for that key's dtype and head dim."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fadsl.runtime

ROOT = Path(__file__).resolve().parents[3]
HARNESS = Path(__file__).resolve().parent / "op_harness"
CONFIGS = ["dtype=fp16,D=64", "dtype=bf16,D=64", "dtype=fp16,D=128", "dtype=bf16,D=128"]
SHAPE = dict(B=1, N=2, Sq=100, Skv=200)
BLOCK_DIM = 2  # tasks: B * N * cdiv(Sq, block_q) = 2 for every block_q >= 100

pytestmark = [pytest.mark.cpu_runtime]

DRIVER = r"""
// The test's launcher: one tiling key of the op package's kernel on fadsl's CPU runtime.
// argv: key blockDim workspaceBytes B N Sq Skv scale dir qBytes kBytes vBytes oBytes
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tikicpulib.h"

extern "C" __global__ __aicore__ void fa2(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR);

int main(int argc, char* argv[])
{
    if (argc != 14) return 2;
    const std::string dir = argv[9];
    const char* names[4] = {"q", "k", "v", "o"};
    uint8_t* t[4];
    for (int i = 0; i < 4; ++i) {
        const size_t bytes = std::strtoull(argv[10 + i], nullptr, 10);
        t[i] = static_cast<uint8_t*>(AscendC::GmAlloc(bytes));
        if (i == 3) break;
        FILE* f = std::fopen((dir + "/" + names[i] + ".bin").c_str(), "rb");
        if (f == nullptr || std::fread(t[i], 1, bytes, f) != bytes) return 2;
        std::fclose(f);
    }
    FADSL_TILING_TYPE td{};
    td.B = std::atoll(argv[4]);
    td.N = std::atoll(argv[5]);
    td.Sq = std::atoll(argv[6]);
    td.Skv = std::atoll(argv[7]);
    td.scale = std::strtof(argv[8], nullptr);
    uint8_t* tiling = static_cast<uint8_t*>(AscendC::GmAlloc(sizeof td));
    std::memcpy(tiling, &td, sizeof td);
    uint8_t* ws = static_cast<uint8_t*>(AscendC::GmAlloc(std::strtoull(argv[3], nullptr, 10)));
    const uint32_t blockDim = static_cast<uint32_t>(std::atoi(argv[2]));
    AscendC::SetKernelMode(KernelMode::MIX_MODE);
    ICPU_SET_TILING_KEY(std::strtoull(argv[1], nullptr, 10));
    ICPU_RUN_KF(fa2, blockDim, t[0], t[1], t[2], t[3], ws, tiling);
    FILE* f = std::fopen((dir + "/o_op.bin").c_str(), "wb");
    const size_t bytes = std::strtoull(argv[13], nullptr, 10);
    if (f == nullptr || std::fwrite(t[3], 1, bytes, f) != bytes) return 2;
    std::fclose(f);
    return 0;
}
"""


HOST = r"""
// The test's host check: the op package's tiling function (FADSL_OP_HOST, against fadsl's
// stand-ins of the CANN host headers) for q, k, v of dtype argv[1] (ge::DataType) and head
// dim argv[2]; prints "status key blockDim" and the output dtype InferDataType gives.
#include <cstdio>
#include <cstdlib>

#include FADSL_OP_HOST

int main(int argc, char* argv[])
{
    if (argc != 3 || ops::Registered().size() != 1) return 2;
    const auto dtype = static_cast<ge::DataType>(std::atoi(argv[1]));
    const int64_t d = std::atoll(argv[2]);
    fe::PlatFormInfos platform;
    platform.aicCores = 24;
    gert::TilingContext tc;
    tc.platform = &platform;
    for (int i = 0; i < 3; ++i) {
        gert::Shape s;
        s.SetDimNum(4);
        const int64_t dims[4] = {1, 2, i == 0 ? 100 : 200, d};
        for (size_t j = 0; j < 4; ++j) s.SetDim(j, dims[j]);
        tc.inputs.emplace_back(s);
        tc.descs.push_back(gert::CompileTimeTensorDesc{});
        tc.descs.back().dtype = dtype;
    }
    tc.attrs.isFloat.push_back(true);
    tc.attrs.floats.push_back(0.125f);
    tc.attrs.ints.push_back(0);
    const auto status = ops::Registered()[0]->aicore_.tiling(&tc);
    gert::InferDataTypeContext dc;
    dc.inputs = {dtype, dtype, dtype};
    ops::Registered()[0]->inferDataType_(&dc);
    std::printf("%d %llu %u %d\n", static_cast<int>(status), static_cast<unsigned long long>(tc.tilingKey),
                tc.blockDim, dc.outputs.empty() ? -1 : static_cast<int>(dc.outputs[0]));
    return 0;
}
"""


def test_the_tiling_function_picks_the_key_of_the_dtype_and_head_dim(
    package: Path, tmp_path: Path
) -> None:
    (tmp_path / "host.cpp").write_text(HOST)
    host = package / "op" / "op_host" / "fa2.cpp"
    cmd = ["g++", "-std=c++17", "-O0", "-Wall", "-Werror", f"-I{HARNESS}"]
    cmd += [f"-I{host.parent}", f'-DFADSL_OP_HOST="{host}"', "host.cpp", "-o", "host"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    fp16, bf16 = 1, 27  # ge::DT_FLOAT16, ge::DT_BF16
    got = {}
    for dt, d in [
        (fp16, 64),
        (bf16, 64),
        (fp16, 128),
        (bf16, 128),
        (fp16, 96),
        (0, 64),
    ]:
        run = subprocess.run(
            [str(tmp_path / "host"), str(dt), str(d)], capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        got[(dt, d)] = [int(x) for x in run.stdout.split()]
    assert [got[k][:2] for k in [(fp16, 64), (bf16, 64), (fp16, 128), (bf16, 128)]] == [
        [0, 1],
        [0, 2],
        [0, 3],
        [0, 4],
    ]
    assert all(got[k][2] == BLOCK_DIM for k in [(fp16, 64), (bf16, 128)])
    assert got[(bf16, 64)][3] == bf16 and got[(fp16, 128)][3] == fp16
    assert got[(fp16, 96)][0] != 0 and got[(0, 64)][0] != 0  # no key for D=96 or fp32


def _fadsl(*args: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fadsl", *args], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("configs") / "fa2"
    _fadsl(
        "compile",
        "examples/fa2.py",
        "--kernel",
        "fa2",
        "--configs",
        ";".join(CONFIGS),
        "-o",
        str(out),
    )
    return out


def test_one_opdef_lists_every_dtype_and_the_entry_dispatches_on_the_key(
    package: Path,
) -> None:
    host = (package / "op" / "op_host" / "fa2.cpp").read_text()
    for io in ("q", "k", "v", "o"):
        block = re.search(rf'(?:Input|Output)\("{io}"\)[^;]*;', host)
        assert block is not None, io
        assert "DataType({ge::DT_FLOAT16, ge::DT_BF16})" in block.group(0), block.group(
            0
        )
        assert "Format({ge::FORMAT_ND, ge::FORMAT_ND})" in block.group(0)
    assert host.count("OP_ADD(Fa2);") == 1
    for key in range(1, 5):
        assert f"context->SetTilingKey({key});" in host
    kernel = (package / "op" / "op_kernel" / "fa2.cpp").read_text()
    assert kernel.count('extern "C" __global__ __aicore__ void fa2(') == 1
    assert [int(k) for k in re.findall(r"TILING_KEY_IS\((\d+)\)", kernel)] == [
        1,
        2,
        3,
        4,
    ]
    presets = json.loads((package / "op" / "CMakePresets.json").read_text())
    cache = presets["configurePresets"][0]["cacheVariables"]
    assert cache["ASCEND_COMPUTE_UNIT"]["value"] == "ascend910b"
    assert {"CMAKE_BUILD_TYPE", "vendor_name", "ENABLE_BINARY_PACKAGE"} <= set(cache)
    for key, text in enumerate(CONFIGS, start=1):  # each key is a whole project
        d = int(text.split("D=")[1])
        assert (
            f"constexpr int64_t D = {d};"
            in (package / f"key{key}" / "fa2_kernel.cpp").read_text()
        )


def _runtime_defines(project: Path) -> list[str]:
    text = (project / "cmake" / "fadsl_cpu.cmake").read_text()
    block = text[text.index("target_compile_definitions") :]
    block = block[block.index("PUBLIC") + len("PUBLIC") : block.index(")")]
    return ["-D" + d for d in block.split()]


@pytest.fixture(scope="module")
def launcher(package: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("launcher")
    op = package / "op"
    tiling_h = op / "op_host" / "fa2_tiling.h"
    tiling = re.search(r"BEGIN_TILING_DATA_DEF\((\w+)\)", tiling_h.read_text())
    assert tiling is not None
    # the flags tests/fuzz/cxxcheck.py type-checks generated kernels with, and -O0
    runtime = ["-std=gnu++17", "-O0", "-pthread", "-Wshadow", "-Werror=shadow"]
    runtime += [f"-I{fadsl.runtime.include_dir()}"]
    runtime += _runtime_defines(package / "key1")
    tiling_flags = [
        "-include",
        str(HARNESS / "kernel_side" / "get_tiling_data.h"),
        f"-I{HARNESS / 'kernel_side'}",
        f'-DFADSL_OP_TILING="{tiling_h}"',
        f"-DFADSL_TILING_TYPE=fadsl_kernel_tiling::{tiling.group(1)}",
    ]
    (work / "driver.cpp").write_text(DRIVER)
    cmds = [
        [
            "g++",
            *runtime,
            *tiling_flags,
            f"-I{op / 'op_kernel'}",
            "-c",
            str(op / "op_kernel" / "fa2.cpp"),
            "-o",
            "kernel.o",
        ],
        ["g++", *runtime, *tiling_flags, "-c", "driver.cpp", "-o", "driver.o"],
        ["g++", "-pthread", "kernel.o", "driver.o", "-o", "launch"],
    ]
    for cmd in cmds:
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr[-3000:]}"
    return work / "launch"


@pytest.mark.parametrize("key", [1, 2, 3, 4])
def test_every_tiling_key_gives_the_interpreters_output(
    package: Path, launcher: Path, tmp_path: Path, key: int
) -> None:
    config = dict(item.split("=") for item in CONFIGS[key - 1].split(","))
    shape = ",".join(f"{k}={v}" for k, v in {**SHAPE, "D": config["D"]}.items())
    run = tmp_path / "run"
    _fadsl(
        "run",
        "examples/fa2.py",
        "--kernel",
        "fa2",
        "--dtype",
        config["dtype"],
        "--shape",
        shape,
        "-o",
        str(run),
    )
    scale = json.loads((run / "meta.json").read_text())["scalars"]["scale"]
    per_core = re.search(
        r"FA2_WORKSPACE_BYTES_PER_CORE = (\d+);",
        (package / f"key{key}" / "fa2_tiling.h").read_text(),
    )
    assert per_core is not None
    sizes = [str((run / f"{n}.bin").stat().st_size) for n in ("q", "k", "v", "o")]
    argv = [str(key), str(BLOCK_DIM), str(BLOCK_DIM * int(per_core.group(1)))]
    argv += (
        [str(SHAPE[s]) for s in ("B", "N", "Sq", "Skv")]
        + [repr(scale), str(run)]
        + sizes
    )
    proc = subprocess.run([str(launcher), *argv], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    dt = np.float16 if config["dtype"] == "fp16" else __import__("ml_dtypes").bfloat16
    want = np.fromfile(run / "o.bin", dtype=dt).astype(np.float32)
    got = np.fromfile(run / "o_op.bin", dtype=dt).astype(np.float32)
    assert np.isfinite(got).all()
    # as test_op_package's run of one configuration's op kernel: within 2e-3
    assert (np.abs(got - want) <= 2e-3).all(), float(np.abs(got - want).max())
    if (
        key == 1
    ):  # a key no configuration has runs no branch: o stays as allocated (NaN)
        argv[0] = "9"
        proc = subprocess.run([str(launcher), *argv], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert np.isnan(
            np.fromfile(run / "o_op.bin", dtype=dt).astype(np.float32)
        ).all()


@pytest.mark.parametrize(
    "configs,says",
    [
        ("dtype", "is not NAME=VALUE"),
        ("dtype=fp16,D=64;dtype", "is not NAME=VALUE"),
        ("dtype=fp16,D=64;dtype=fp16,D=sixty", "D"),
    ],
)
def test_bad_configs_are_refused_naming_the_entry(
    tmp_path: Path, configs: str, says: str
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fadsl", "compile", "examples/fa2.py", "--kernel", "fa2"]
        + ["--configs", configs, "-o", str(tmp_path / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0 and says in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr and not (tmp_path / "out").exists()
