"""``fadsl compile --configs``: several configurations of one kernel in one op package.

``--configs "dtype=fp16,D=64;dtype=bf16,D=128"``: entries separated by ``;``, each a
list of ``NAME=VALUE``: ``dtype``, shape symbols the kernel fixes at compile time (the
rest of the shape is the kernel's default), or tile constants (as ``--set``). Entry N
(from 1) is tiling key N; each is compiled as ``fadsl compile`` compiles one, into
``key<N>/``, and ``op/`` is the one operator for all (``backends/ascendc/op_multi.py``).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from fadsl.errors import UsageError


def add_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--configs",
        metavar="LIST",
        help="compile several configurations into one op package with a tiling key "
        'each, e.g. "dtype=fp16,D=64;dtype=bf16,D=128" (dtype, shape symbols, tile '
        "constants); writes key<N>/ per configuration and op/ (default folder "
        "generated/<kernel>_configs/)",
    )


def parse_configs(text: str) -> list[dict[str, str]]:
    """The entries of ``--configs``, each NAME -> VALUE, in key order."""
    out: list[dict[str, str]] = []
    for entry in text.split(";"):
        items: dict[str, str] = {}
        for item in entry.split(","):
            name, eq, value = item.strip().partition("=")
            if not eq or not name or not value:
                raise UsageError(
                    f"--configs: {item.strip()!r} in {entry.strip()!r} is not NAME=VALUE",
                    hint='write entries such as "dtype=fp16,D=64;dtype=bf16,D=128"',
                    code="configs_syntax",
                )
            items[name] = value
        out.append(items)
    return out


def compile_configs(
    args: argparse.Namespace, kdef: Any, target: Any
) -> tuple[str, dict[str, bytes]]:
    """The output folder and every file: ``key<N>/`` projects and ``op/``."""
    from fadsl.backends.ascendc.op_multi import KeyedProject, multi_package
    from fadsl.backends.ascendc.op_package import op_file, op_type
    from fadsl.backends.ascendc.project import build_project
    from fadsl.commands import common
    from fadsl.driver.lower import lower

    out = args.output or os.path.join("generated", f"{kdef.name}_configs")
    keyed = []
    defaults = dict(getattr(kdef, "default_shape", {}) or {})
    for key, entry in enumerate(parse_configs(args.configs), start=1):
        one = argparse.Namespace(**vars(args))
        shape: dict[str, Any] = dict(defaults)
        sets = list(args.sets or [])
        for name, value in entry.items():
            if name == "dtype":
                one.dtype = value
            elif name in defaults:
                shape[name] = value  # checked as --shape checks it
            else:
                sets.append(f"{name}={value}")
        one.sets = sets
        one.shape = ",".join(f"{k}={v}" for k, v in shape.items()) or None
        binding = common.bind(kdef, one, target=target)
        folder = os.path.join(out, f"key{key}")
        project = build_project(
            lower(binding), args.file, folder, not args.skip_resource_proof
        )
        text = ",".join(f"{k}={v}" for k, v in entry.items())
        keyed.append(KeyedProject(key, text, dict(project.files)))
    files = {f"key{k.key}/{p}": b for k in keyed for p, b in k.files.items()}
    files.update(multi_package(kdef.name, op_file(op_type(kdef.name)), keyed))
    return out, files
