"""``fadsl ir``: print a kernel's textual IR, as read or after a pipeline pass."""

from __future__ import annotations

import argparse

from fadsl.commands import common, flags
from fadsl.errors import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    common.add_kernel_args(p, shape=False)
    common.add_target_arg(p)
    p.add_argument(
        "--after",
        metavar="PASS",
        help="print the IR after this pass of the pipeline (default: as read, before "
        "any pass)",
    )


def main(args: argparse.Namespace) -> int:
    from fadsl.ir.text.printer import print_kernel

    _check_pass_name(args.after)
    binding = common.build(args, need_shape=False)
    kernel = binding.kernel
    if args.after is not None:
        from dataclasses import replace

        from fadsl.driver.lower import run_passes

        binding = replace(binding, target=common.target_of(args))
        kernel = run_passes(binding, until=args.after)
    print(print_kernel(kernel), end="")
    return 0


def _check_pass_name(name: str | None) -> None:
    """Fail fast on a misspelt --after, before the kernel is read."""
    if name is None:
        return
    from fadsl.passes import pass_names

    names = pass_names()
    if name in names:
        return
    import difflib

    close = difflib.get_close_matches(name, names, n=1)
    raise UsageError(
        f"--after: there is no pass named {name!r}",
        flags.arg_loc("--after", name, 0, len(name)),
        hint=(f"did you mean {close[0]!r}? " if close else "")
        + "passes, in pipeline order: "
        + ", ".join(names),
    )
