"""Building the generated Ascend C with fadsl's CPU runtime, running it, comparing.

The project is generated exactly as ``fadsl compile`` writes it, configured with plain
cmake in RUN_MODE=fadsl and built with g++. Builds are cached by what reaches the
compiler (``toolchain.py``: the project's C++ and CMake files, the runtime headers, the
flags, the compiler), so a new shape with the same C++ reuses the build; they live
under $FADSL_CACHE_DIR or ~/.cache/fadsl/sim, each entry checked before use and rebuilt
when damaged (``cache.py``), beside the runtime's prebuilt library (``prebuilt.py``)
and precompiled header (``pch.py``); cmake runs in ``cmake.py``.
Progress goes to the ``fadsl.sim`` logger (``progress.py``). The outputs are compared
with the interpreter on the same inputs (they run the same operations in the same
order, so they agree far more tightly than the tolerance rule). Used by ``fadsl sim``
and ``fd.sim``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fadsl.backends.sim import toolchain
from fadsl.backends.sim.cmake import build_folder as _cmake
from fadsl.backends.sim.progress import (
    PROGRESS_ENV,
    Progress,
    running_text,
    task_count,
    tasks_done,
    wait,
)
from fadsl.errors import ExecutionError
from fadsl.progress import ProgressArg, Reporter, reporter

if TYPE_CHECKING:
    import numpy as np

    from fadsl.driver.binding import Binding
    from fadsl.driver.lower import Lowered


@dataclass(frozen=True)
class SimRun:
    """One run of the generated kernel on the CPU runtime."""

    lowered: Lowered
    outputs: dict[str, np.ndarray]
    build_seconds: float
    """0.0 when the build came from the cache."""
    run_seconds: float


def simulate(
    binding: Binding,
    inputs: dict[str, np.ndarray],
    source: str,
    prove_fit: bool = True,
    timeout: float = 600.0,
    progress: ProgressArg | Reporter = None,
    sanitize: bool = False,
) -> SimRun:
    """Lower ``binding`` (it needs a target), build its project (cached), run it on
    ``inputs``; progress as fadsl/progress.py's ``reporter`` reads ``progress``.
    ``sanitize`` (or ``FADSL_SANITIZE=1`` in the environment) runs it under the
    runtime's sanitizer."""
    from fadsl.driver.lower import lower

    shown = Progress(reporter("sim", progress))
    try:
        chip = binding.target.name if binding.target is not None else "the target"
        shown.note(f"lowering {binding.kernel.name} for {chip}")
        low = lower(binding)
        binary, build_seconds = build(low, source, prove_fit, shown)
        shown.note(shown.running(binding, low.target))
        t0 = time.perf_counter()
        outputs = run_binary(binary, binding, inputs, timeout, shown, sanitize)
        run_seconds = time.perf_counter() - t0
        shown.note(f"ran in {run_seconds:.1f} s")
    finally:
        shown.done()
        drop_temporary_cache()
    return SimRun(low, outputs, build_seconds, run_seconds)


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
    low: Lowered,
    source: str,
    prove_fit: bool = True,
    progress: Progress | None = None,
) -> tuple[str, float]:
    """Path of the built host program (cached) and the seconds building took."""
    from fadsl.backends.ascendc.project import build_project
    from fadsl.backends.sim import cache as sim_cache
    from fadsl.io.outputs import write_files

    name = low.binding.kernel.name
    project = build_project(low, source, os.path.join("generated", name), prove_fit)
    files = toolchain.compiled_files(project.files)
    key = toolchain.build_key(files)
    root = cache_root()
    folder = os.path.join(root, f"{name}-{key[:16]}")
    program = f"build/{name}_main"
    progress = progress if progress is not None else Progress(reporter("sim", False))
    if sim_cache.usable(folder, files, program):
        progress.note(f"using the cached build of {name}")
        return os.path.join(folder, program), 0.0
    progress.note(f"building {name} with the CPU runtime (cmake, g++; cached after)")
    t0 = time.perf_counter()
    tmp = sim_cache.start(root, name)
    try:
        write_files(files, tmp)
        _cmake(tmp, progress, root)
        progress.note(f"built in {time.perf_counter() - t0:.1f} s")
        sim_cache.seal(tmp, files, program)
        sim_cache.install(tmp, folder, files, program)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return os.path.join(folder, program), time.perf_counter() - t0


# ----------------------------------------------------------------------------
# Run and compare
# ----------------------------------------------------------------------------


def run_binary(
    binary: str,
    binding: Binding,
    inputs: dict[str, np.ndarray],
    timeout: float,
    progress: Progress | None = None,
    sanitize: bool = False,
) -> dict[str, np.ndarray]:
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
        shown = progress if progress is not None else Progress()
        _execute(binary, work, timeout, shown, task_count(binding), sanitize)
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
    sanitize: bool = False,
) -> None:
    """Run the host program in ``work``, ticking seconds and finished tasks."""
    from fadsl.backends.sim import sanitize as san

    counter = os.path.join(work, "progress")
    env = dict(os.environ)
    if progress.on:
        env[PROGRESS_ENV] = counter
    if sanitize:
        env[san.ENV] = "1"
    proc = subprocess.Popen(
        [binary, work],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        out, err = wait(
            proc,
            timeout,
            progress,
            lambda s: running_text(s, tasks_done(counter), tasks),
        )
    except subprocess.TimeoutExpired:
        raise ExecutionError(
            f"the CPU-runtime run did not finish in {timeout:.0f} s",
            hint="use a smaller --shape or raise --timeout",
        ) from None
    messages = [ln for ln in err.splitlines() if ln.strip()]
    for line in kernel_printed(out):
        print(line, file=sys.stdout)
    if proc.returncode != 0:
        runtime = [ln for ln in messages if "fadsl-cpu-runtime" in ln] or messages[-5:]
        runtime = _located(binary, runtime)
        raise ExecutionError(*_stopped(runtime, proc.returncode))
    for line in messages:
        print(line, file=sys.stderr)


def kernel_printed(stdout: str) -> list[str]:
    """The lines the kernel printed (AscendC::printf, a failed ascendc_assert), each
    starting with its core as the runtime writes them (``fadsl_rt/debug.h``)."""
    marks = ("[AIV Block ", "[AIC Block ", "[ASSERT] ")
    return [ln for ln in stdout.splitlines() if ln.startswith(marks)]


def _stopped(runtime: list[str], status: int) -> tuple[str, None, str, tuple[str, ...]]:
    """(message, loc, hint, notes) of a run the runtime stopped: its first report, or
    the sanitizer's count and reports when the sanitizer found something."""
    from fadsl.backends.sim import sanitize as san

    reports = [ln for ln in runtime if ln.startswith(san.REPORT)]
    if reports:
        return (
            f"the CPU runtime's sanitizer found {len(reports)} problem(s) in the "
            "generated kernel: " + reports[0],
            None,
            "each report names the generated lines and, in brackets, the DSL lines "
            "they come from; fadsl/runtime/cpu/README.md (Sanitizer) says what each "
            "kind means",
            tuple(reports[1:20]),
        )
    return (
        "the generated kernel stopped in fadsl's CPU runtime: "
        + (runtime[0] if runtime else f"exit {status}"),
        None,
        "the CPU runtime enforces the chip's memory sizes and Ascend C's rules; "
        "the message names the API call and the core",
        tuple(runtime[1:6]),
    )


def _located(binary: str, lines: list[str]) -> list[str]:
    """The runtime's lines with the DSL line after each generated line they name."""
    from fadsl.backends.sim import sanitize as san

    folder = os.path.dirname(os.path.dirname(binary))
    try:
        sources = san.kernel_sources(folder)
    except OSError:
        return lines
    return [san.locate(ln, sources) for ln in lines]


def compare_with_interpreter(
    low: Lowered, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]
) -> dict[str, dict[str, Any]]:
    """Largest |sim - interpreter| per output, with the interpreter's own outputs.

    An output ``atomic_add`` writes is marked ``atomic``: its f32 sums add in the order
    the cores reach GM, the interpreter's in grid order, so it may differ by the
    reordering of f32 additions and then one unit in the last place of its dtype
    (docs/backward.md, "How sim is checked")."""
    import numpy as np

    from fadsl.backends.interp.atomics import atomic_targets
    from fadsl.backends.interp.interpreter import interpret

    from fadsl.passes import strip_debug

    # a --debug build's prints are the kernel's: the comparison does not repeat them
    kernel = strip_debug.run(low.ir, low.binding.target)
    ref = interpret(kernel, low.binding.env(), inputs).outputs
    atomic = atomic_targets(low.ir)
    out = {}
    for name, arr in outputs.items():
        a = arr.astype(np.float64)
        b = ref[name].astype(np.float64)
        both = np.isfinite(a) & np.isfinite(b)
        # only finite pairs are subtracted: -inf - -inf (the LSE of a row that keeps
        # no key) would be NaN with a RuntimeWarning printed mid-report
        diff = float(np.abs(a[both] - b[both]).max()) if both.any() else 0.0
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        mismatch = int((~both & ~same).sum())
        out[name] = {
            "max_abs_diff": diff,
            "nonfinite_mismatch": mismatch,
            "max_abs": float(np.abs(b[np.isfinite(b)]).max()) if both.any() else 0.0,
        }
        if name in atomic:
            out[name]["atomic"] = True
    return out
