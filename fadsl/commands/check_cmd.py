"""``fadsl check``: prove that a kernel's on-chip buffers fit a chip, before any codegen.

Prints, per memory space, the bytes used per core against the capacity; per buffer its
core, memory, shape, dtype, slots, bytes and the user line it comes from; how tasks map
to cores (blockDim); and the footprint formulas (``plan/resources/resource_text.py``). ``--json``
prints the same for tools (``plan/resources/resource_report.py``). Exit 0 when everything fits,
1 with a ResourceError on stderr when it does not.
"""

from __future__ import annotations

import argparse
import json

from fadsl.commands import common, flags
from fadsl.errors import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    common.add_kernel_args(p)
    common.add_target_arg(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--block-dim",
        type=flags.integer,
        metavar="N",
        help="ask for this blockDim instead of min(tasks, physical cores)",
    )


def main(args: argparse.Namespace) -> int:
    from fadsl.driver.lower import lower
    from fadsl.plan.resources.resource_report import report_json
    from fadsl.plan.resources.resource_text import table

    if args.block_dim is not None and args.block_dim < 1:
        raise UsageError(
            f"--block-dim {args.block_dim}: a launch needs at least one block",
            hint="leave it out to use min(tasks, physical cores)",
            code="block_dim_zero",
        )
    target = common.target_of(args)
    low = lower(common.build(args, target=target), block_dim=args.block_dim)
    b = low.binding
    assert low.report is not None
    what = (low.report, low.plan, target, b.kernel.loc.file, b.shape, b.consts)
    if args.json:
        print(json.dumps(report_json(*what), indent=2))
    else:
        print(table(*what))
    low.require_fit()
    return 0
