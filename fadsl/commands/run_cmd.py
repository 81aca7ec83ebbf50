"""``fadsl run``: golden outputs from the numpy interpreter, checked against float64."""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fadsl.commands import common

if TYPE_CHECKING:
    from fadsl.backends.interp.interpreter import InterpResult
    from fadsl.driver.binding import Binding
    from fadsl.ir.nodes import For, Kernel, Op
    from fadsl.io.runio import CheckResult


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
    from fadsl.driver.lower import lower
    from fadsl.io.outputs import atomic_dir, check_output_dir

    check_output_dir(args.output)
    low = lower(common.build(args))
    binding = low.binding
    for warning in low.lint_text():
        print(warning, file=sys.stderr)
    if _sets_a_constant(args, binding):
        _warn_if_compile_refuses(binding)
    if args.inputs:
        inputs = runio.read_inputs(args.inputs, binding)
    else:
        inputs = runio.make_inputs(binding, args.seed)
    for line in runio.nonfinite_report(inputs):
        print(line, file=sys.stderr)
    t0 = time.perf_counter()
    result = interpret(low.ir, binding.env(), inputs)
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
    return report(binding, check, args.output, result, blocks, low.ir)


def _sets_a_constant(args: argparse.Namespace, binding: Binding) -> bool:
    """Whether --set gives a tile constant (not only runtime scalars): those are
    checked as compile checks them, which plans the kernel (about 0.5 s)."""
    from fadsl.commands.flags import parse_sets

    return any(name in binding.consts for name in parse_sets(args.sets or []))


def _warn_if_compile_refuses(binding: Binding) -> None:
    """The interpreter runs tile constants the cube cannot take: say so, with the
    error (and its fix) that ``fadsl compile`` would give."""
    from fadsl.driver.lower import compile_refusal

    why = compile_refusal(binding)
    if why is None:
        return
    print(
        "fadsl: warning: the interpreter runs these tile constants, but `fadsl "
        "compile` refuses them on every target, with:",
        file=sys.stderr,
    )
    print(why.render(), file=sys.stderr)


def _stats(result: InterpResult) -> dict[str, list[int]]:
    return {k: list(v) for k, v in result.loop_stats.items()}


def kv_blocks(
    binding: Binding, inputs: dict[str, Any], result: InterpResult
) -> tuple[int, int] | None:
    """(KV blocks computed, Q-block x KV-block pairs) when the kernel counts them
    (fd.attention kernels: causal / window bounds and block masks skip blocks)."""
    count = (
        getattr(binding.kdef, "kv_blocks", None) if binding.kdef is not None else None
    )
    if count is None:
        return None
    return count(binding.shape, binding.consts, inputs, result.loop_stats)


def report(
    binding: Binding,
    check: CheckResult | None,
    folder: str,
    result: InterpResult,
    blocks: tuple[int, int] | None,
    kernel: Kernel,
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
        for line in loop_lines(kernel, result.loop_stats):
            print("  " + line)
    if check is None:
        print("  not checked (no reference, or --no-check)")
        return 0
    print("\n".join(check.lines()))
    return 0 if check.passed else 1


def loop_lines(kernel: Kernel, stats: dict[str, tuple[int, int]]) -> list[str]:
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


def _collect_fors(ops: Sequence[Op], into: dict[str, For]) -> None:
    from fadsl.ir.nodes import For

    for op in ops:
        if isinstance(op, For):
            into.setdefault(op.var, op)
        body = getattr(op, "body", None)
        if body:
            _collect_fors(body, into)
