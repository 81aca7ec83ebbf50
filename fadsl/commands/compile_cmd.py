"""``fadsl compile``: prove fit, then write the Ascend C project (default generated/<kernel>/)."""

from __future__ import annotations

import argparse
import os
import stat

from fadsl.commands import common


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
    from fadsl.io.outputs import atomic_dir, check_output_dir, seal
    from fadsl.target import resolve

    target = resolve(args.target, args.target_file)
    src = common.load_source(args.file)
    chosen = (
        [common.select(src, args.kernel)]
        if args.kernel or len(src.names) == 1
        else list(src.defs)
    )
    if args.output:
        check_output_dir(args.output)
    built = [
        _build_one(
            common.bind(kdef, args, need_shape=True),
            target,
            args.file,
            _out_dir(args.output, kdef.name, len(chosen)),
            not args.skip_resource_proof,
        )
        for kdef in chosen
    ]
    if (
        args.output and len(built) > 1
    ):  # one folder holding them all: replace it at once
        with atomic_dir(args.output) as tmp:
            for project, _, out in built:
                sub = os.path.join(tmp, os.path.basename(out))
                _write_files(project.files, sub)
                seal(sub)  # each kernel's folder is an output of its own too
    else:
        for project, _, out in built:
            write_project(project.files, out)
    for project, binding, out in built:
        _report(project, binding, target, out, args.quiet)
    return 0


def _out_dir(output: str | None, name: str, count: int) -> str:
    if output is None:
        return os.path.join("generated", name)
    return output if count == 1 else os.path.join(output, name)


def _build_one(
    binding,
    target,
    source: str,
    out: str,  # type: ignore[no-untyped-def]
    prove_fit: bool,
) -> tuple:
    """(project, binding, out): everything is generated before anything is written."""
    from fadsl.backends.ascendc.project import build_project

    return build_project(binding, target, source, out, prove_fit), binding, out


def _report(project, binding, target, out: str, quiet: bool) -> None:  # type: ignore[no-untyped-def]
    from fadsl.commands.check_cmd import table

    if not quiet:
        print(table(project.report, project.plan, target, binding))
    print(f"wrote {len(project.files)} files to {out}/")


def write_project(files: dict[str, bytes], out: str) -> None:
    """Write every file into a fresh folder beside ``out`` and swap it into place."""
    from fadsl.io.outputs import atomic_dir

    with atomic_dir(out) as tmp:
        _write_files(files, tmp)


def _write_files(files: dict[str, bytes], folder: str) -> None:
    for rel, data in sorted(files.items()):
        path = os.path.join(folder, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        if rel.endswith(".sh"):
            os.chmod(
                path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
            )
