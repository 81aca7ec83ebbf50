"""``fadsl sim``: build the generated Ascend C with fadsl's CPU runtime, run it, compare.

The project is generated exactly as ``fadsl compile`` writes it, configured with plain
cmake in RUN_MODE=fadsl and built with g++. Builds are cached by the content of every
generated file and runtime header (runtime shapes do not change the binary), under
$FADSL_CACHE_DIR or ~/.cache/fadsl/sim; each entry is checked before use and rebuilt
when damaged (fadsl/commands/sim_cache.py). The outputs are compared with the interpreter
on the same inputs (they run the same operations in the same order, so they agree far
more tightly than the tolerance rule) and with the float64 reference.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

from fadsl.commands import common
from fadsl.commands.sim_progress import (
    PROGRESS_ENV,
    Progress,
    task_count,
    tasks_done,
    wait,
)
from fadsl.errors import BackendError, ExecutionError


def add_arguments(p: argparse.ArgumentParser) -> None:
    from fadsl.commands.sim_progress import SEQ_CAP

    common.add_kernel_args(p, shape=False)
    p.add_argument(
        "--shape",
        help="shape symbols, e.g. B=1,N=8,Sq=2048,Skv=2048,D=128; default: the "
        f"kernel's default shape with Sq and Skv capped at {SEQ_CAP}, a run of "
        "seconds (check and tune use the kernel's full default shape)",
    )
    common.add_target_arg(p)
    common.add_skip_proof_arg(p)
    common.add_run_io_args(p)
    p.add_argument(
        "--no-check",
        action="store_true",
        help="skip the comparisons with the interpreter and the reference",
    )
    p.add_argument(
        "--timeout",
        default="600",
        help="seconds the CPU-runtime run may take, a number above 0 (default 600)",
    )


def main(args: argparse.Namespace) -> int:
    from fadsl.io import runio
    from fadsl.commands.flags import parse_timeout
    from fadsl.io.outputs import atomic_dir, check_output_dir
    from fadsl.target import resolve

    timeout = parse_timeout(args.timeout)
    check_output_dir(args.output)
    target = resolve(args.target, args.target_file)
    binding = _bind(args)
    progress = Progress()
    inputs = (
        runio.read_inputs(args.inputs, binding)
        if args.inputs
        else runio.make_inputs(binding, args.seed)
    )
    for line in runio.nonfinite_report(inputs):
        print(line, file=sys.stderr)
    try:
        binary, build_seconds = build(
            binding, target, args.file, not args.skip_resource_proof, progress
        )
        progress.note(progress.running(binding, target))
        t0 = time.perf_counter()
        outputs = run_binary(binary, binding, inputs, timeout)
        run_seconds = time.perf_counter() - t0
        progress.note(f"ran in {run_seconds:.1f} s; comparing")
    finally:
        progress.done()
        drop_temporary_cache()
    extra: dict[str, Any] = {
        "source": "cpu-runtime",
        "built_with": f"cmake, {_compiler_version()}, RUN_MODE=fadsl",
        "target": target.name,
        "seed": None if args.inputs else args.seed,
        "build_seconds": round(build_seconds, 2),
        "run_seconds": round(run_seconds, 3),
    }
    check = None
    if not args.no_check:
        extra["vs_interpreter"] = compare_with_interpreter(binding, inputs, outputs)
        check = runio.check_outputs(binding, inputs, outputs)
    extra["result"] = "not checked" if check is None else _verdict(check.passed)
    with atomic_dir(args.output) as tmp:
        runio.write_run(tmp, binding, inputs, outputs, check, extra)
    return _report(binding, check, extra, args.output)


def _bind(args: argparse.Namespace) -> Any:
    """The binding; without --shape, sim's small default (sim_progress.default_shape)."""
    from fadsl.commands.sim_progress import default_shape

    chosen = common.select(common.load_source(args.file), args.kernel)
    defaults = getattr(chosen, "default_shape", None)
    if args.shape is None and defaults:
        args.shape = default_shape(defaults)
    return common.bind(chosen, args)


# ----------------------------------------------------------------------------
# Build
# ----------------------------------------------------------------------------


_TEMP_CACHE: list[str] = []
"""The temporary build folder of this process, when the cache cannot be used."""


def cache_root() -> str:
    """The build cache folder; a temporary one (with a note) when it cannot be made
    or written, e.g. $FADSL_CACHE_DIR names a file or the home folder is read-only."""
    root = os.environ.get("FADSL_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "fadsl", "sim"
    )
    try:
        os.makedirs(root, exist_ok=True)
        if not os.access(root, os.W_OK | os.X_OK):
            raise PermissionError(13, "not writable")
        return root
    except OSError as exc:
        if not _TEMP_CACHE:
            _TEMP_CACHE.append(tempfile.mkdtemp(prefix="fadsl-sim-build-"))
            print(
                f"note: cannot use the build cache {root} ({_why(root, exc)}); "
                "building in a temporary folder (set FADSL_CACHE_DIR to a writable "
                "folder to keep builds)",
                file=sys.stderr,
            )
        return _TEMP_CACHE[0]


def _why(root: str, exc: OSError) -> str:
    probe = root
    while probe and not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if probe and not os.path.isdir(probe):
        return f"{probe} is a file"
    return str(exc.strerror or exc).lower()


def drop_temporary_cache() -> None:
    """Remove the temporary build folder that ``cache_root`` fell back to, if any."""
    while _TEMP_CACHE:
        shutil.rmtree(_TEMP_CACHE.pop(), ignore_errors=True)


def build(
    binding: Any,
    target: Any,
    source: str,
    prove_fit: bool = True,
    progress: Progress | None = None,
) -> tuple[str, float]:
    """Path of the built host program (cached) and the seconds building took."""
    from fadsl.backends.ascendc.project import build_project
    from fadsl.commands import sim_cache

    name = binding.kernel.name
    project = build_project(
        binding, target, source, os.path.join("generated", name), prove_fit
    )
    key = _key(project.files)
    root = cache_root()
    folder = os.path.join(root, f"{name}-{key[:16]}")
    program = f"build/{name}_main"
    if sim_cache.usable(folder, project.files, program):
        return os.path.join(folder, program), 0.0
    if progress is not None:
        progress.note(
            f"building {name} with the CPU runtime (cmake, g++; cached after)"
        )
    t0 = time.perf_counter()
    tmp = sim_cache.start(root, name)
    try:
        _write(project.files, tmp)
        _cmake(tmp)
        sim_cache.seal(tmp, project.files, program)
        sim_cache.install(tmp, folder, project.files, program)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return os.path.join(folder, program), time.perf_counter() - t0


def _key(files: dict[str, bytes]) -> str:
    from fadsl.runtime import include_dir

    h = hashlib.sha256(b"sim cache entry, format 2\0")
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + files[rel] + b"\0")
    root = include_dir()
    for dirpath, _, names in sorted(os.walk(root)):
        for n in sorted(names):
            with open(os.path.join(dirpath, n), "rb") as f:
                h.update(n.encode() + f.read())
    h.update(_compiler_version().encode())
    return h.hexdigest()


def _compiler_version() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or ""
    if not cxx:
        raise BackendError(
            "fadsl sim needs a C++17 compiler (g++) and cmake",
            hint="apt-get install g++ cmake",
        )
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True)
    return out.stdout.splitlines()[0] if out.stdout else cxx


def _write(files: dict[str, bytes], folder: str) -> None:
    for rel, data in files.items():
        path = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


def _cmake(folder: str) -> None:
    from fadsl.runtime import include_dir

    if shutil.which("cmake") is None:
        raise BackendError("fadsl sim needs cmake", hint="apt-get install cmake")
    configure = [
        "cmake",
        "-S",
        folder,
        "-B",
        os.path.join(folder, "build"),
        "-DRUN_MODE=fadsl",
        f"-DFADSL_RUNTIME_DIR={include_dir()}",
        "-DCMAKE_BUILD_TYPE=Release",
    ]
    for cmd in (
        configure,
        [
            "cmake",
            "--build",
            os.path.join(folder, "build"),
            "-j",
            str(max(1, os.cpu_count() or 1)),
        ],
    ):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BackendError(
                "building the generated project with the CPU runtime failed "
                "(this is a fadsl bug: generated code must compile)",
                notes=(_tail(proc.stdout + proc.stderr),),
            )


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


# ----------------------------------------------------------------------------
# Run and compare
# ----------------------------------------------------------------------------


def run_binary(
    binary: str,
    binding: Any,
    inputs: dict[str, Any],
    timeout: float,
) -> dict:
    import numpy as np

    from fadsl.ir.nodes import ParamKind
    from fadsl.numerics import np_dtype
    from fadsl.io.runio import param_shape, tensor_params

    work = tempfile.mkdtemp(prefix="fadsl-sim-")
    try:
        os.makedirs(os.path.join(work, "input"))
        os.makedirs(os.path.join(work, "output"))
        for name, arr in inputs.items():
            arr.tofile(os.path.join(work, "input", f"{name}.bin"))
        with open(os.path.join(work, "input", "shape.txt"), "w") as f:
            for k, v in list(binding.shape.items()) + list(binding.scalars.items()):
                f.write(f"{k} {v!r}\n")
        _execute(binary, work, timeout, Progress(), task_count(binding))
        env = binding.env()
        out = {}
        for p in tensor_params(binding.kernel, ParamKind.OUT):
            path = os.path.join(work, "output", f"{p.name}.bin")
            data = np.fromfile(path, dtype=np_dtype(p.type.dtype))  # type: ignore[union-attr]
            out[p.name] = data.reshape(param_shape(p, env))
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _execute(
    binary: str,
    work: str,
    timeout: float,
    progress: Progress,
    tasks: int | None = None,
) -> None:
    """Run the host program in ``work``; on a terminal, tick seconds and finished tasks."""
    counter = os.path.join(work, "progress")
    env = dict(os.environ, **{PROGRESS_ENV: counter}) if progress.on else None
    proc = subprocess.Popen(
        [binary, work],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    err = wait(proc, timeout, progress, lambda: tasks_done(counter), tasks)
    progress.done()
    messages = [ln for ln in err.splitlines() if ln.strip()]
    if proc.returncode != 0:
        runtime = [ln for ln in messages if "fadsl-cpu-runtime" in ln] or messages[-5:]
        raise ExecutionError(
            "the generated kernel stopped in fadsl's CPU runtime: "
            + (runtime[0] if runtime else f"exit {proc.returncode}"),
            notes=tuple(runtime[1:6]),
            hint="the CPU runtime enforces the chip's memory sizes and Ascend C's rules; "
            "the message names the API call and the core",
        )
    for line in messages:
        print(line, file=sys.stderr)


def compare_with_interpreter(
    binding: Any, inputs: dict[str, Any], outputs: dict
) -> dict:
    """Largest |sim - interpreter| per output, with the interpreter's own outputs."""
    import numpy as np

    from fadsl.backends.interp.interpreter import interpret
    from fadsl.passes import run_pipeline

    ref = interpret(run_pipeline(binding.kernel), binding.env(), inputs).outputs
    out = {}
    for name, arr in outputs.items():
        a = arr.astype(np.float64)
        b = ref[name].astype(np.float64)
        both = np.isfinite(a) & np.isfinite(b)
        diff = float(np.abs(a - b)[both].max()) if both.any() else 0.0
        mismatch = int((np.isfinite(a) != np.isfinite(b)).sum())
        out[name] = {
            "max_abs_diff": diff,
            "nonfinite_mismatch": mismatch,
            "max_abs": float(np.abs(b[np.isfinite(b)]).max()) if both.any() else 0.0,
        }
    return out


def _verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def _report(binding: Any, check: Any, extra: dict, folder: str) -> int:
    shape = ",".join(f"{k}={v}" for k, v in binding.shape.items())
    print(f"{binding.kernel.name} [{shape}] on fadsl's CPU runtime -> {folder}")
    build_s = extra["build_seconds"]
    print(
        f"  build {'cached' if build_s == 0 else f'{build_s:.1f} s'}, "
        f"run {extra['run_seconds']:.2f} s"
    )
    for name, d in extra.get("vs_interpreter", {}).items():
        print(
            f"  {name}: max |sim - interpreter| {d['max_abs_diff']:.3e}"
            + (
                f", {d['nonfinite_mismatch']} non-finite mismatches"
                if d["nonfinite_mismatch"]
                else ""
            )
        )
    if check is None:
        print("  not checked against a reference")
        return 0
    from fadsl.commands.run_cmd import print_verdicts

    print_verdicts(check)
    return 0 if check.passed else 1
