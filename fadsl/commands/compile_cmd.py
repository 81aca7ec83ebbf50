"""``fadsl compile``: prove fit, then write the Ascend C project (default generated/<kernel>/).

A compile made before from the same inputs is answered from fadsl's cache
(fadsl/io/compile_cache.py: keyed on the kernel file and everything it used, fadsl's
code and templates, the arguments), without lowering anything again.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from fadsl.commands import common, configs

if TYPE_CHECKING:
    from fadsl.driver.binding import Binding
    from fadsl.io.compile_cache import Recorder, Result


def add_arguments(p: argparse.ArgumentParser) -> None:
    common.add_kernel_args(p)
    common.add_target_arg(p)
    common.add_skip_proof_arg(p)
    common.add_debug_arg(p)
    configs.add_argument(p)
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
    from fadsl.io import compile_cache
    from fadsl.io.outputs import (
        atomic_dir,
        check_output_dir,
        seal,
        write_files,
        write_folder,
    )

    target = common.target_of(args)
    with compile_cache.Recorder() as used:
        src = load_source(args.file)
    chosen = (
        [select(src, args.kernel)]
        if args.kernel or len(src.names) == 1
        else list(src.defs)
    )
    if args.output:
        check_output_dir(args.output)
    if args.configs:
        out, files = configs.compile_configs(args, select(src, args.kernel), target)
        write_folder(files, out)
        print(
            f"wrote {len(files)} files to {out}/ (op/: one operator, a tiling key per configuration)"
        )
        return 0
    key = _cache_key(args, used) if src.ir_kernel is None else None
    entry = compile_cache.load(key) if key else None
    if entry is not None:  # what building wrote, as building wrote it
        sys.stdout.write(entry.stdout)
        sys.stderr.write(entry.stderr)
    else:
        with compile_cache.Echo() as said:
            results = [
                _build_one(
                    common.bind(kdef, args, target=target),
                    args.file,
                    _out_dir(args.output, kdef.name, len(chosen)),
                    not args.skip_resource_proof,
                )
                for kdef in chosen
            ]
        stdout, stderr = ("".join(t.text) for t in (said.stdout, said.stderr))
        entry = compile_cache.Entry(results, stdout, stderr)
        if key:
            compile_cache.store(key, entry)
    built = entry.results
    if (
        args.output and len(built) > 1
    ):  # one folder holding them all: replace it at once
        with atomic_dir(args.output) as tmp:
            for result in built:
                sub = os.path.join(tmp, os.path.basename(result.out))
                write_files(result.files, sub)
                seal(sub)  # each kernel's folder is an output of its own too
    else:
        for result in built:
            write_folder(result.files, result.out)
    for result in built:
        if not args.quiet:
            print(result.table)
        print(f"wrote {len(result.files)} files to {result.out}/")
    return 0


def _cache_key(args: argparse.Namespace, used: Recorder) -> str | None:
    """The compile cache's key of this command (fadsl/io/compile_cache.py), or None
    when caching is off."""
    from fadsl.backends.ascendc.render import (
        binary_identity,
        clang_format_binary,
        templates_dir,
    )
    from fadsl.io import cache, compile_cache

    if cache.cache_dir(compile_cache.PART) is None:
        return None
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    folders = [package]
    templates = os.path.realpath(templates_dir())
    if not templates.startswith(os.path.realpath(package) + os.sep):
        folders.append(templates)
    arguments = {k: v for k, v in vars(args).items() if k != "quiet"}
    arguments["file_content"] = compile_cache.fingerprint(args.file)
    if args.target_file:
        arguments["target_file_content"] = compile_cache.fingerprint(args.target_file)
    tool = binary_identity(clang_format_binary())
    return compile_cache.entry_key(arguments, folders, tool, used.parts(package))


def _out_dir(output: str | None, name: str, count: int) -> str:
    if output is None:
        return os.path.join("generated", name)
    return output if count == 1 else os.path.join(output, name)


def _build_one(binding: Binding, source: str, out: str, prove_fit: bool) -> Result:
    """The project in memory (everything is generated before anything is written),
    and the budget table ``compile`` prints."""
    from fadsl.backends.ascendc.project import build_project
    from fadsl.driver.lower import lower
    from fadsl.io.compile_cache import Result
    from fadsl.plan.resources.resource_text import table

    project = build_project(lower(binding), source, out, prove_fit)
    b = project.lowered.binding
    text = table(
        project.report,
        project.plan,
        project.lowered.target,
        b.kernel.loc.file,
        b.shape,
        b.consts,
    )
    return Result(out, dict(project.files), text)
