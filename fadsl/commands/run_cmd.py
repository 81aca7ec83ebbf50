"""``fadsl run``: golden outputs from the numpy interpreter, checked against float64."""

from __future__ import annotations

import argparse
import re
import sys
import time

from fadsl.commands import common


def add_arguments(p: argparse.ArgumentParser) -> None:
    common.add_kernel_args(p)
    common.add_run_io_args(p)
    p.add_argument(
        "--no-check",
        action="store_true",
        help="skip the comparison with the float64 reference",
    )


def main(args: argparse.Namespace) -> int:
    from fadsl.io import runio
    from fadsl.backends.interp.interpreter import interpret
    from fadsl.io.outputs import atomic_dir, check_output_dir

    check_output_dir(args.output)
    binding = common.build(args)
    from fadsl.passes import lint

    for warning in lint.report(binding.kernel):
        print(warning, file=sys.stderr)
    if args.inputs:
        inputs = runio.read_inputs(args.inputs, binding)
    else:
        inputs = runio.make_inputs(binding, args.seed)
    for line in runio.nonfinite_report(inputs):
        print(line, file=sys.stderr)
    kernel = lowered(binding.kernel)
    t0 = time.perf_counter()
    result = interpret(kernel, binding.env(), inputs)
    elapsed = time.perf_counter() - t0
    check = (
        None if args.no_check else runio.check_outputs(binding, inputs, result.outputs)
    )
    extra = {
        "source": "interpreter",
        "seed": None if args.inputs else args.seed,
        "interpreter_seconds": round(elapsed, 3),
        "loop_stats": _stats(result),
    }
    blocks = kv_blocks(binding, inputs, result)
    if blocks is not None:
        extra["kv_blocks"] = {"computed": blocks[0], "total": blocks[1]}
    with atomic_dir(args.output) as tmp:
        runio.write_run(tmp, binding, inputs, result.outputs, check, extra)
    return report(binding, check, args.output, result, blocks, kernel)


def lowered(kernel):  # type: ignore[no-untyped-def]
    """The IR the interpreter runs: the kernel after fadsl's pass pipeline."""
    from fadsl.passes import run_pipeline

    return run_pipeline(kernel)


def _stats(result) -> dict:  # type: ignore[no-untyped-def]
    return {k: list(v) for k, v in getattr(result, "loop_stats", {}).items()}


def kv_blocks(binding, inputs, result) -> tuple[int, int] | None:  # type: ignore[no-untyped-def]
    """(KV blocks computed, Q-block x KV-block pairs) when the kernel counts them
    (fd.attention kernels: causal / window bounds and block masks skip blocks)."""
    count = (
        getattr(binding.kdef, "kv_blocks", None) if binding.kdef is not None else None
    )
    if count is None:
        return None
    return count(
        binding.shape, binding.consts, inputs, getattr(result, "loop_stats", {})
    )


def report(
    binding,
    check,
    folder: str,
    result,  # type: ignore[no-untyped-def]
    blocks: tuple[int, int] | None,
    kernel,  # type: ignore[no-untyped-def]
) -> int:
    shape = ",".join(f"{k}={v}" for k, v in binding.shape.items())
    print(f"{binding.kernel.name} [{shape}] -> {folder}")
    if blocks is not None and blocks[1]:
        done, total = blocks
        print(
            f"  KV blocks: {done} of {total} computed "
            f"({100.0 * (total - done) / total:.1f}% skipped)"
        )
    else:
        for line in loop_lines(kernel, getattr(result, "loop_stats", {})):
            print("  " + line)
    if check is None:
        print("  not checked (no reference, or --no-check)")
        return 0
    print_verdicts(check)
    return 0 if check.passed else 1


def print_verdicts(check) -> None:  # type: ignore[no-untyped-def]
    """One line per output (see numerics.Verdict.line), what the bound is, the result."""
    for v in check.verdicts:
        print("  " + v.line())
    if any(v.same_precision_error is not None for v in check.verdicts):
        print(f"  ({SAME_PRECISION})")
    print("PASS" if check.passed else "FAIL")


SAME_PRECISION = (
    "same-precision error: the max|err| of the reference itself computed in the "
    "kernel's dtype; the rule is in the README"
)


def loop_lines(kernel, stats: dict[str, tuple[int, int]]) -> list[str]:  # type: ignore[no-untyped-def]
    """Loops the user wrote whose bounds skipped iterations (a causal bound), by the
    user's name and line; loops a pass made (the pipeline's prefetches) are left out.
    ``total`` counts each loop's widest trip count in every grid task."""
    from fadsl.ir.nodes import For

    loops: dict[str, For] = {}
    _collect_fors(kernel.body, loops)
    lines = []
    for var, (done, total) in stats.items():
        op = loops.get(var)
        if not total or op is None or op.loc.by is not None:
            continue
        found = re.search(r"\bfor\s+(\w+)\s+in\b", op.loc.source_line())
        name = found.group(1) if found else var
        skipped = total - done
        if skipped:
            lines.append(
                f"loop {name} ({op.loc.short()}): {done} of {total} iterations run, "
                f"{skipped} ({100.0 * skipped / total:.1f}%) skipped by its bounds"
            )
    return lines


def _collect_fors(ops, into: dict) -> None:  # type: ignore[no-untyped-def]
    from fadsl.ir.nodes import For

    for op in ops:
        if isinstance(op, For):
            into.setdefault(op.var, op)
        body = getattr(op, "body", None)
        if body:
            _collect_fors(body, into)
