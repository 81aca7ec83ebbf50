"""``fadsl sim``: build the generated Ascend C with fadsl's CPU runtime, run it, compare.

The project is generated exactly as ``fadsl compile`` writes it, configured with plain
cmake in RUN_MODE=fadsl and built with g++. Builds are cached by what reaches the
compiler (the project's C++ and CMake files, the runtime headers, the flags, the
compiler: a new shape with the same C++ reuses the build), under $FADSL_CACHE_DIR or
~/.cache/fadsl/sim; each entry is checked before use and rebuilt when damaged. The outputs are compared with the interpreter on the same inputs (they
run the same operations in the same order, so they agree far more tightly than the
tolerance rule) and with the float64 reference. The work is ``fadsl/backends/sim/run.py``;
this module reads the flags and prints.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fadsl.commands import common
from fadsl.progress import reporter

if TYPE_CHECKING:
    from fadsl.driver.binding import Binding
    from fadsl.io.runio import CheckResult


def add_arguments(p: argparse.ArgumentParser) -> None:
    from fadsl.backends.sim.progress import SEQ_CAP

    common.add_kernel_args(p, shape=False)
    p.add_argument(
        "--shape",
        help="shape symbols, e.g. B=1,N=8,Sq=2048,Skv=2048,D=128; default: the "
        f"kernel's default shape with Sq and Skv capped at {SEQ_CAP}, a run of "
        "seconds (check and tune use the kernel's full default shape)",
    )
    common.add_target_arg(p)
    common.add_skip_proof_arg(p)
    common.add_debug_arg(p)
    common.add_run_io_args(p)
    p.add_argument(
        "--no-check",
        action="store_true",
        help="skip the comparisons with the interpreter and the reference",
    )
    p.add_argument(
        "--sanitize",
        action="store_true",
        help="run under the CPU runtime's sanitizer: cross-pipe races (read/write "
        "after read/write), reads of never-written UB/L1/L0 bytes, unpaired flags, GM "
        "accesses outside a tensor; each report names the generated and the DSL line",
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="record every Ascend C call the kernel executes and time it pipe by pipe "
        "with the cost table: writes trace.json (Perfetto / chrome://tracing), "
        "profile.txt, profile.json, profile.svg and the record itself (record.tsv) "
        "into the -o folder (MODELLED)",
    )
    p.add_argument(
        "--timeout",
        default="600",
        help="seconds the CPU-runtime run may take, a number above 0 (default 600)",
    )


def main(args: argparse.Namespace) -> int:
    from fadsl.io import runio
    from fadsl.commands.flags import parse_timeout
    from fadsl.backends.sim import run as sim_run
    from fadsl.backends.sim.toolchain import compiler_version
    from fadsl.io.outputs import atomic_dir, check_output_dir

    timeout = parse_timeout(args.timeout)
    check_output_dir(args.output)
    target = common.target_of(args)
    binding = _bind(args, target)
    inputs = (
        runio.read_inputs(args.inputs, binding)
        if args.inputs
        else runio.make_inputs(binding, args.seed)
    )
    for line in runio.nonfinite_report(inputs):
        print(line, file=sys.stderr)
    rows: list[Any] | None = None
    raw = b""
    with _recording(args.profile) as path:
        run = sim_run.simulate(
            binding,
            inputs,
            args.file,
            not args.skip_resource_proof,
            timeout,
            sys.stderr,
            sanitize=args.sanitize,
        )
        if path is not None:
            from fadsl.backends.sim.recording import record_rows

            rows = record_rows(path)
            with open(path, "rb") as f:
                raw = f.read()
    extra: dict[str, Any] = {
        "source": "cpu-runtime",
        "built_with": f"cmake, {compiler_version()}, RUN_MODE=fadsl",
        "target": target.name,
        "seed": None if args.inputs else args.seed,
        "build_seconds": round(run.build_seconds, 2),
        "run_seconds": round(run.run_seconds, 3),
        "sanitized": sanitized(args.sanitize),
    }
    check = None
    if not args.no_check:
        reporter("sim", sys.stderr).phase(
            "comparing with the interpreter and the float64 reference"
        )
        extra["vs_interpreter"] = sim_run.compare_with_interpreter(
            run.lowered, inputs, run.outputs
        )
        check = runio.check_outputs(binding, inputs, run.outputs)
    extra["result"] = "not checked" if check is None else _verdict(check.passed)
    profile: list[str] = []
    with atomic_dir(args.output) as tmp:
        if rows is not None:
            profile = _profile(tmp, rows, binding, target, args.output)
            with open(os.path.join(tmp, "record.tsv"), "wb") as f:
                f.write(raw)
            extra["profile"] = (
                "trace.json, profile.txt, profile.json, profile.svg, record.tsv"
            )
        runio.write_run(tmp, binding, inputs, run.outputs, check, extra)
    code = _report(binding, check, extra, args.output)
    for line in profile:
        print(line)
    return code


@contextlib.contextmanager
def _recording(on: bool) -> Iterator[str | None]:
    """The record's path while the kernel runs (FADSL_RECORD), or None when off."""
    if not on:
        yield None
        return
    from fadsl.backends.sim.recording import recording

    with recording() as path:
        yield path


def _profile(
    folder: str, rows: list[Any], binding: Binding, target: Any, shown: str
) -> list[str]:
    """Time the record and write the profile files; the lines to print."""
    from fadsl.perf.costs import cost_table
    from fadsl.perf.timer.profile import write_profile
    from fadsl.perf.timer.summary import text

    shape = ",".join(f"{k}={v}" for k, v in binding.shape.items())
    title = f"{binding.kernel.name} [{shape}] on {target.name}"
    tm = write_profile(folder, rows, cost_table(target), title)
    return [f"  profile ({len(rows)} executed calls) -> {shown}/trace.json"] + [
        "  " + line for line in text(tm)
    ]


def _bind(args: argparse.Namespace, target: Any) -> Binding:
    """The binding; without --shape, sim's small default (progress.default_shape)."""
    from fadsl.backends.sim.progress import default_shape
    from fadsl.driver.source import load_source, select

    chosen = select(load_source(args.file), args.kernel)
    defaults = getattr(chosen, "default_shape", None)
    if args.shape is None and defaults:
        args.shape = default_shape(defaults)
    return common.bind(chosen, args, target=target)


def sanitized(flag: bool) -> bool:
    from fadsl.backends.sim.sanitize import requested

    return requested(flag)


def _verdict(passed: bool) -> str:
    return "PASS" if passed else "FAIL"


def _report(
    binding: Binding, check: CheckResult | None, extra: dict[str, Any], folder: str
) -> int:
    shape = ",".join(f"{k}={v}" for k, v in binding.shape.items())
    print(f"{binding.kernel.name} [{shape}] on fadsl's CPU runtime -> {folder}")
    build_s = extra["build_seconds"]
    print(
        f"  build {'cached' if build_s == 0 else f'{build_s:.1f} s'}, "
        f"run {extra['run_seconds']:.2f} s"
        + (", sanitizer: clean" if extra.get("sanitized") else "")
    )
    for name, d in extra.get("vs_interpreter", {}).items():
        print(
            f"  {name}: max |sim - interpreter| {d['max_abs_diff']:.3e}"
            + (
                f", {d['nonfinite_mismatch']} non-finite mismatches"
                if d["nonfinite_mismatch"]
                else ""
            )
            + (
                " (atomic sums: f32 additions in another order)"
                if "atomic" in d
                else ""
            )
        )
    if check is None:
        print("  not checked against a reference")
        return 0
    print("\n".join(check.lines()))
    return 0 if check.passed else 1
