"""The CANN custom-operator package (op/): its host tiling function computes what main.cpp
of the kernel-launch project computes, for several shapes.

Both are compiled with g++ into one harness (tests/backends/ascendc/op_harness/): main.cpp
against a stand-in of the CPU-debug launch API that records the launch instead of running
the kernel, op_host/<op>.cpp against fadsl's own stand-ins of the CANN host headers. The
harness prints the tiling bytes, blockDim and workspace each side computed, the operator's
inputs, outputs and attributes, and the output shapes and dtypes InferShape and
InferDataType give; this test compares them.
"""

from __future__ import annotations

import ast
import math
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HARNESS = Path(__file__).resolve().parent / "op_harness"
SYS_WORKSPACE = 16 * 1024 * 1024
CORES = 24
GE_DTYPE = {"float16": 1, "float32": 0, "int32": 3, "bfloat16": 27, "uint8": 4}
ITEMSIZE = {"float16": 2, "float32": 4, "int32": 4, "bfloat16": 2, "uint8": 1}
GM_ALIGN = 512

CASES = {
    # kernel: runtime shapes (several task counts, below and above the 24 cores, tails)
    "fa2": [
        "B=1,N=2,Sq=300,Skv=256",
        "B=2,N=3,Sq=1,Skv=1000",
        "B=4,N=8,Sq=4096,Skv=128",
    ],
    "fa1": ["B=1,N=2,Sq=300,Skv=256", "B=3,N=5,Sq=77,Skv=1"],
    "gqa": ["B=1,N=8,Nkv=2,Sq=200,Skv=300", "B=2,N=4,Nkv=1,Sq=1024,Skv=64"],
    "softcap": ["B=2,N=4,Nkv=2,Sq=129,Skv=257", "B=1,N=16,Nkv=16,Sq=4000,Skv=8"],
    "alibi": ["B=1,N=3,Nkv=3,Sq=64,Skv=640"],
    "varlen": ["B=3,N=2,Nkv=1,Sq=500,Skv=700"],
    "decode_paged": [
        "B=2,Sq=1,N=8,Pages=10,Nkv=2,MaxPages=4",
        "B=30,Sq=1,N=4,Pages=64,Nkv=4,MaxPages=16",
    ],
    # atomic_add: the workspace also holds the f32 sums (<Kernel>AtomicBytes)
    "splitk": ["M=100,K=200", "M=1000,K=64", "M=7,K=3000"],
    "fa2_bwd": ["B=1,N=2,Sq=300,Skv=200", "B=2,N=8,Sq=1024,Skv=4096"],
}
ATOMIC_SOURCE = Path(__file__).resolve().parent / "test_atomic_add_sim.py"
COMPILED = {"splitk": "D=64"}
"""Kernels of ATOMIC_SOURCE, compiled for this module (not in generated/), with their
compile-time dims."""
BUILT: dict[str, Path] = {}


def _project(kernel: str) -> Path:
    return BUILT.get(kernel, ROOT / "generated" / kernel)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The COMPILED kernels' projects in a temporary folder."""
    import sys

    for kernel, fixed in COMPILED.items():
        out = tmp_path_factory.mktemp("compiled") / kernel
        cmd = [sys.executable, "-m", "fadsl", "compile", str(ATOMIC_SOURCE)]
        cmd += ["--kernel", kernel, "--shape", f"{CASES[kernel][0]},{fixed}"]
        proc = subprocess.run(
            cmd + ["--quiet", "-o", str(out)], cwd=ROOT, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        BUILT[kernel] = out


pytestmark = [
    pytest.mark.cpu_runtime,
    pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++"),
]


def _constants(kernel: str) -> dict:
    """SHAPE, FIXED, SCALARS, INPUTS, INPUT_DIMS, SETS of the project's gen_data.py."""
    tree = ast.parse((_project(kernel) / "scripts" / "gen_data.py").read_text())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return out


def _dims(dims: list[str], env: dict) -> list[int]:
    scope = {"__builtins__": {}, "CeilDiv": lambda a, b: -(-a // b)}
    return [
        int(eval(d, scope, env)) for d in dims
    ]  # noqa: S307 (our own generated text)


GXX = ["g++", "-std=c++17", "-O0", "-Wall", "-Werror"]


def _op_host(kernel: str) -> Path:
    """generated/<kernel>/op/op_host/<op>.cpp."""
    (tiling,) = (_project(kernel) / "op" / "op_host").glob("*_tiling.h")
    return tiling.with_name(tiling.name[: -len("_tiling.h")] + ".cpp")


def _host_tu(host_cpp: Path, obj: Path) -> list[str]:
    """The command compiling op_host_tu.cpp around the generated op_host/<op>.cpp."""
    return [*GXX, f"-I{HARNESS}", f"-I{host_cpp.parent}"] + [
        f'-DFADSL_OP_HOST="{host_cpp}"',
        "-c",
        str(HARNESS / "op_host_tu.cpp"),
        "-o",
        str(obj),
    ]


def _build(cmds: list[list[str]], work: Path) -> None:
    for cmd in cmds:
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
        assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"


@pytest.fixture(scope="module")
def harnesses(
    tmp_path_factory: pytest.TempPathFactory, compiled: None
) -> dict[str, Path]:
    """One harness binary per kernel, built from the checked-in generated/<kernel>/
    (or the COMPILED project)."""
    built = {}
    for kernel in CASES:
        src = _project(kernel)
        work = tmp_path_factory.mktemp(kernel)
        for name in ("main.cpp", "data_utils.h", f"{kernel}_tiling.h"):
            shutil.copy(src / name, work / name)
        host_cpp = _op_host(kernel)
        objects = [work / "main.o", work / "op_host.o", work / "harness.o"]
        cmds = [
            [*GXX, "-DASCENDC_CPU_DEBUG", "-Dmain=HostMain", f"-I{HARNESS / 'launch'}"]
            + ["-c", "main.cpp", "-o", str(objects[0])],
            _host_tu(host_cpp, objects[1]),
            [*GXX, f"-I{HARNESS}", "-c", str(HARNESS / "harness.cpp")]
            + ["-o", str(objects[2])],
            ["g++", *map(str, objects), "-o", str(work / "harness")],
        ]
        _build(cmds, work)
        built[kernel] = work
    return built


def _run(work: Path, kernel: str, shape: str, scale: float, override: dict) -> dict:
    """Writes the run folder and the spec, runs the harness, parses what it printed."""
    c = _constants(kernel)
    sym = dict(c["SHAPE"])
    sym.update({k: int(v) for k, v in (t.split("=") for t in shape.split(","))})
    env = {**sym, **c["FIXED"], **c["SETS"]}
    run = Path(tempfile.mkdtemp(dir=work))
    (run / "input").mkdir()
    (run / "output").mkdir()
    scalars = {name: scale for name in c["SCALARS"]}
    lines = [f"{k} {v}" for k, v in sym.items()]
    lines += [f"{k} {v!r}" for k, v in scalars.items()]
    (run / "input" / "shape.txt").write_text("\n".join(lines) + "\n")
    spec = [f"dir {run}", f"cores {CORES}", f"sysws {SYS_WORKSPACE}"]
    for name, dims in c["INPUT_DIMS"].items():
        values = _dims(dims, env)
        nbytes = math.prod(values) * ITEMSIZE[c["INPUTS"][name][1]]
        with open(run / "input" / f"{name}.bin", "wb") as f:
            f.truncate(nbytes)
        values = override.get(name, values)
        spec.append(f"input {len(values)} " + " ".join(map(str, values)))
    spec += [f"attr f {v!r}" for v in scalars.values()]
    (run / "spec.txt").write_text("\n".join(spec) + "\n")
    proc = subprocess.run(
        [str(work / "harness"), str(run / "spec.txt")], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return _parse(proc.stdout)


def _parse(text: str) -> dict:
    out: dict = {"args": [], "inputs": [], "outputs": [], "attrs": []}
    out["shapes"], out["dtypes"] = [], []
    for line in text.splitlines():
        w = line.split()
        if w[:2] == ["main", "rc"]:
            out["rc"], out["launched"], out["main_block"] = int(w[2]), w[4], int(w[6])
        elif w[:2] == ["main", "arg"]:
            out["args"].append(int(w[2]))
        elif w[:2] == ["main", "tiling"]:
            out["main_tiling"] = w[2:]
        elif w[:2] == ["op", "type"]:
            out["type"], out["configs"] = w[2], w[5:]
        elif w[:2] in (["op", "input"], ["op", "output"]):
            out[w[1] + "s"].append((w[2], int(w[3]), int(w[4]), int(w[5])))
        elif w[:2] == ["op", "attr"]:
            out["attrs"].append((w[2], w[3]))
        elif w[:3] == ["op", "tiling", "status"]:
            out["status"], out["op_block"], out["workspace"] = (
                int(w[3]),
                int(w[5]),
                int(w[7]),
            )
            out["schedmode"] = int(w[9])
        elif w[:2] == ["op", "tiling"]:
            out["op_tiling"] = w[2:]
        elif w[:2] == ["op", "infershape"]:
            out["infershape"] = int(w[2])
        elif w[:2] == ["op", "shape"]:
            out["shapes"].append([int(x) for x in w[2:]])
        elif w[:2] == ["op", "dtype"]:
            out["dtypes"].append(int(w[2]))
    return out


def _kinds(kernel: str) -> tuple[list[str], list[str], list[str]]:
    """Inputs, outputs and all launch arguments of main.cpp, by C++ name (which is
    the file name unless it is a C++ keyword: `do` is `do_`, _files)."""
    main = (_project(kernel) / "main.cpp").read_text()
    launch = main[main.index("ICPU_RUN_KF(") :]
    args = [a.strip() for a in launch[: launch.index(")")].split(",")[2:]]
    files = _files(kernel)
    reads = [a for a in args if f'"/input/{files.get(a, a)}.bin"' in main]
    writes = [a for a in args if f'"/output/{files.get(a, a)}.bin"' in main]
    return reads, writes, args


def _files(kernel: str) -> dict[str, str]:
    """C++ argument name -> file stem of every input and output main.cpp reads or
    writes (`ReadFile(dir + "/input/do.bin", do_Bytes, ...)`)."""
    import re

    main = (_project(kernel) / "main.cpp").read_text()
    pairs = re.findall(r'"/(?:input|output)/(\w+)\.bin", (\w+)Bytes', main)
    pairs += re.findall(r'"/output/(\w+)\.bin", (\w+), ', main)
    return {arg: stem for stem, arg in pairs}


@pytest.mark.parametrize(
    "kernel,shape", [(k, s) for k, shapes in CASES.items() for s in shapes]
)
def test_op_host_tiling_equals_main_cpp(
    harnesses: dict[str, Path], kernel: str, shape: str
) -> None:
    got = _run(harnesses[kernel], kernel, shape, 0.125, {})
    assert got["rc"] == 0 and got["launched"] == "1", got
    assert got["status"] == 0, "the op's tiling function refused the shape"
    assert got["op_tiling"] == got["main_tiling"]
    assert got["op_block"] == got["main_block"] > 0
    reads, writes, args = _kinds(kernel)
    size = dict(zip(args, got["args"]))
    scratch = [a for a in args[:-2] if a not in reads and a not in writes]
    aligned = sum(-(-size[a] // GM_ALIGN) * GM_ALIGN for a in scratch)
    assert got["workspace"] == SYS_WORKSPACE + aligned + size["workspace"]
    # SyncAll waits for every core of the launch: batch mode (issue 28), and only then
    syncs = (
        "AscendC::SyncAll<" in (_project(kernel) / f"{kernel}_kernel.cpp").read_text()
    )
    assert got["schedmode"] == (1 if syncs else 0)


@pytest.mark.parametrize("kernel", list(CASES))
def test_op_definition_and_shape_inference_match_the_kernel(
    harnesses: dict[str, Path], kernel: str
) -> None:
    c = _constants(kernel)
    got = _run(harnesses[kernel], kernel, CASES[kernel][0], 0.5, {})
    assert got["type"] == "".join(p.capitalize() for p in kernel.split("_"))
    assert got["configs"] == ["ascend910b"]
    assert [i[0] for i in got["inputs"]] == list(c["INPUT_DIMS"])
    assert [i[3] for i in got["inputs"]] == [
        GE_DTYPE[c["INPUTS"][n][1]] for n in c["INPUT_DIMS"]
    ]
    assert all(i[1] == 2 and i[2] == 1 for i in got["inputs"] + got["outputs"])
    assert got["attrs"] == [(n, "Float") for n in c["SCALARS"]]
    reads, writes, args = _kinds(kernel)
    size = dict(zip(args, got["args"]))
    assert got["infershape"] == 0 and [o[0] for o in got["outputs"]] == writes
    itemsize = {v: k for k, v in GE_DTYPE.items()}
    for name, dims, dtype in zip(writes, got["shapes"], got["dtypes"]):
        assert math.prod(dims) * ITEMSIZE[itemsize[dtype]] == size[name], name


def test_op_refuses_a_head_dim_it_was_not_compiled_for(
    harnesses: dict[str, Path],
) -> None:
    got = _run(
        harnesses["fa2"], "fa2", "B=1,N=2,Sq=64,Skv=64", 0.125, {"q": [1, 2, 64, 64]}
    )
    assert got["status"] != 0 and got["infershape"] != 0


RUNS = {
    "fa2": (ROOT / "examples" / "fa2.py", "B=1,N=2,Sq=200,Skv=300"),
    "fa1": (ROOT / "examples" / "fa1.py", "B=1,N=3,Sq=130,Skv=70"),
    "splitk": (ATOMIC_SOURCE, "M=100,K=200"),
    "fa2_bwd": (ROOT / "examples" / "fa2_bwd.py", "B=1,N=2,Sq=150,Skv=200"),
}


def _runtime_defines(kernel: str) -> list[str]:
    """The compile definitions the project's cmake/fadsl_cpu.cmake gives the kernel."""
    text = (_project(kernel) / "cmake" / "fadsl_cpu.cmake").read_text()
    block = text[text.index("target_compile_definitions") :]
    block = block[block.index("PUBLIC") + len("PUBLIC") : block.index(")")]
    return ["-D" + d for d in block.split()]


@pytest.mark.slow
@pytest.mark.parametrize("kernel", list(RUNS))
def test_op_kernel_runs_with_the_op_tiling_on_the_cpu_runtime(
    tmp_path: Path, kernel: str, compiled: None
) -> None:
    """op_kernel/<op>.cpp (GET_TILING_DATA entry, hand-over and scratch buffers carved from
    the workspace) run on fadsl's CPU runtime with what op_host/<op>.cpp computed gives the
    interpreter's outputs."""
    np = pytest.importorskip("numpy")
    import sys

    example, shape = RUNS[kernel]
    c = _constants(kernel)
    full = shape + "," + ",".join(f"{k}={v}" for k, v in c["FIXED"].items())
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "fadsl", "run", str(example)]
    cmd += ["--kernel", kernel, "--shape", full, "-o", str(run)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    files = _files(kernel)
    reads, writes = ([files.get(a, a) for a in x] for x in _kinds(kernel)[:2])
    sym = {**c["SHAPE"], **dict(t.split("=") for t in shape.split(","))}
    spec = [f"dir {tmp_path}", f"cores {CORES}", "sysws 4096"]
    env = {**{k: int(v) for k, v in sym.items()}, **c["FIXED"], **c["SETS"]}
    for name, dims in c["INPUT_DIMS"].items():
        values = _dims(dims, env)
        spec.append(f"input {len(values)} " + " ".join(map(str, values)))
    scalars = __import__("json").loads((run / "meta.json").read_text())["scalars"]
    spec += [f"attr f {scalars[n]!r}" for n in c["SCALARS"]]
    for name in reads:
        spec.append(
            f"tensor in {run / (name + '.bin')} {(run / (name + '.bin')).stat().st_size}"
        )
    for name in writes:
        spec.append(
            f"tensor out {tmp_path / (name + '.bin')} {(run / (name + '.bin')).stat().st_size}"
        )
    (tmp_path / "spec.txt").write_text("\n".join(spec) + "\n")

    host_cpp = _op_host(kernel)
    stem = host_cpp.stem
    op_dir = host_cpp.parent.parent
    tiling_h = host_cpp.with_name(f"{stem}_tiling.h")
    import fadsl.runtime

    runtime = [
        "-pthread",
        f"-I{fadsl.runtime.include_dir()}",
        *_runtime_defines(kernel),
    ]
    tensors = len(reads) + len(writes)
    decl = (
        f'extern "C" __global__ __aicore__ void {stem}('
        + ", ".join(["GM_ADDR"] * (tensors + 2))
        + ");"
    )
    launch = (
        f"ICPU_RUN_KF({stem}, t.blockDim, "
        + "".join(f"a[{i}], " for i in range(tensors))
        + "workspace, tiling)"
    )
    objects = [tmp_path / n for n in ("op_host.o", "kernel.o", "op_run.o")]
    cmds = [
        _host_tu(host_cpp, objects[0]),
        ["g++", "-std=c++17", "-O1", *runtime, f"-I{op_dir / 'op_kernel'}"]
        + ["-include", str(HARNESS / "kernel_side" / "get_tiling_data.h")]
        + [f"-I{HARNESS / 'kernel_side'}", f'-DFADSL_OP_TILING="{tiling_h}"']
        + [f"-DFADSL_TILING_TYPE=fadsl_kernel_tiling::{_tiling_class(tiling_h)}"]
        + ["-c", str(op_dir / "op_kernel" / f"{stem}.cpp"), "-o", str(objects[1])],
        [
            "g++",
            "-std=c++17",
            "-O0",
            *runtime,
            f"-I{HARNESS}",
            f"-DFADSL_OP_DECL={decl}",
        ]
        + [f"-DFADSL_OP_LAUNCH={launch}", "-DFADSL_KERNEL_MODE=MIX_MODE"]
        + ["-c", str(HARNESS / "op_run.cpp"), "-o", str(objects[2])],
        ["g++", "-pthread", *map(str, objects), "-o", str(tmp_path / "op_run")],
    ]
    _build(cmds, tmp_path)
    proc = subprocess.run(
        [str(tmp_path / "op_run"), str(tmp_path / "spec.txt")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in writes:  # the kernels write fp16 outputs
        assert (tmp_path / f"{name}.bin").stat().st_size == (
            run / f"{name}.bin"
        ).stat().st_size
        want = np.fromfile(run / f"{name}.bin", dtype=np.float16).astype(np.float32)
        got = np.fromfile(tmp_path / f"{name}.bin", dtype=np.float16).astype(np.float32)
        assert np.isfinite(got).all(), name
        # atomic sums add in another order than the interpreter's: one f16 ulp more
        ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float32)
        atomic = "AtomicBytes" in (_project(kernel) / "main.cpp").read_text()
        slack = ulp if atomic else 0.0
        assert (np.abs(got - want) <= 2e-3 + slack).all(), name


def _tiling_class(tiling_h: Path) -> str:
    text = tiling_h.read_text()
    start = text.index("BEGIN_TILING_DATA_DEF(") + len("BEGIN_TILING_DATA_DEF(")
    return text[start : text.index(")", start)]
