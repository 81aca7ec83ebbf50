"""``fadsl compile``: prove fit, then write the Ascend C project (default generated/<kernel>/)."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from fadsl.commands import common

if TYPE_CHECKING:
    from fadsl.backends.ascendc.project import Project
    from fadsl.driver.binding import Binding


def add_arguments(p: argparse.ArgumentParser) -> None:
    common.add_kernel_args(p)
    common.add_target_arg(p)
    common.add_skip_proof_arg(p)
    p.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="output folder (default generated/<kernel>/); with several kernels, "
        "one sub-folder per kernel",
    )
    p.add_argument(
        "--quiet", action="store_true", help="do not print the resource budget"
    )


def main(args: argparse.Namespace) -> int:
    from fadsl.driver.source import load_source, select
    from fadsl.io.outputs import (
        atomic_dir,
        check_output_dir,
        seal,
        write_files,
        write_folder,
    )

    target = common.target_of(args)
    src = load_source(args.file)
    chosen = (
        [select(src, args.kernel)]
        if args.kernel or len(src.names) == 1
        else list(src.defs)
    )
    if args.output:
        check_output_dir(args.output)
    built = [
        (
            _build_one(
                common.bind(kdef, args, target=target),
                args.file,
                out,
                not args.skip_resource_proof,
            ),
            out,
        )
        for kdef in chosen
        for out in [_out_dir(args.output, kdef.name, len(chosen))]
    ]
    if (
        args.output and len(built) > 1
    ):  # one folder holding them all: replace it at once
        with atomic_dir(args.output) as tmp:
            for project, out in built:
                sub = os.path.join(tmp, os.path.basename(out))
                write_files(project.files, sub)
                seal(sub)  # each kernel's folder is an output of its own too
    else:
        for project, out in built:
            write_folder(project.files, out)
    for project, out in built:
        _report(project, out, args.quiet)
    return 0


def _out_dir(output: str | None, name: str, count: int) -> str:
    if output is None:
        return os.path.join("generated", name)
    return output if count == 1 else os.path.join(output, name)


def _build_one(binding: Binding, source: str, out: str, prove_fit: bool) -> Project:
    """The project in memory: everything is generated before anything is written."""
    from fadsl.backends.ascendc.project import build_project
    from fadsl.driver.lower import lower

    return build_project(lower(binding), source, out, prove_fit)


def _report(project: Project, out: str, quiet: bool) -> None:
    from fadsl.plan.resource_text import table

    if not quiet:
        b = project.lowered.binding
        print(
            table(
                project.report,
                project.plan,
                project.lowered.target,
                b.kernel.loc.file,
                b.shape,
                b.consts,
            )
        )
    print(f"wrote {len(project.files)} files to {out}/")
