"""What every command shares: the kernel flags, and binding a kernel from them.

``bind`` turns --set, --dtype and --shape into a call of the driver's ``bind``
(``fadsl/driver/binding.py``); loading kernel files is ``fadsl/driver/source.py``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from fadsl.commands.flags import parse_dtype, parse_sets, parse_shape, shape_names
from fadsl.driver import binding as driver
from fadsl.driver.binding import Binding, Chosen
from fadsl.driver.source import load_source, select

if TYPE_CHECKING:
    from fadsl.ir.nodes import Kernel
    from fadsl.target import Target

# ----------------------------------------------------------------------------
# Arguments
# ----------------------------------------------------------------------------


def add_kernel_args(p: argparse.ArgumentParser, shape: bool = True) -> None:
    p.add_argument(
        "file", help="kernel file: a Python file with @fd.kernel, or textual IR (.fir)"
    )
    p.add_argument("--kernel", help="which kernel of the file (default: the only one)")
    p.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a tile constant or runtime scalar, e.g. block_q=64; repeatable",
    )
    p.add_argument(
        "--dtype", help="element dtype of the kernel's tensors: fp16, bf16 or fp32"
    )
    if shape:
        p.add_argument(
            "--shape", help="shape symbols, e.g. B=1,N=8,Sq=4096,Skv=4096,D=128"
        )


def add_target_arg(
    p: argparse.ArgumentParser, default: str | None = "ascend910b1"
) -> None:
    p.add_argument(
        "--target", default=default, help="chip (SOC_VERSION), e.g. ascend910b1"
    )
    p.add_argument("--target-file", help="a chip description of your own (JSON)")


def add_skip_proof_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--skip-resource-proof",
        action="store_true",
        help="generate even if the buffers do not fit (for testing that the CPU "
        "runtime enforces the chip's memory sizes itself)",
    )


def add_run_io_args(p: argparse.ArgumentParser) -> None:
    """--seed, --inputs and -o of the commands that run a kernel (run, sim)."""
    from fadsl.commands.flags import folder_name, seed_value

    p.add_argument(
        "--seed",
        type=seed_value,
        default=0,
        help="seed of the random inputs, an integer >= 0 (default 0)",
    )
    p.add_argument(
        "--inputs",
        type=folder_name,
        metavar="DIR",
        help="read <param>.bin inputs from DIR",
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="DIR",
        help="folder for <param>.bin files and meta.json",
    )


# ----------------------------------------------------------------------------
# Binding a kernel from the flags
# ----------------------------------------------------------------------------


def target_of(args: argparse.Namespace) -> Target:
    """The chip of --target / --target-file."""
    from fadsl.target import resolve

    return resolve(args.target, args.target_file)


def build(
    args: argparse.Namespace, need_shape: bool = True, target: Target | None = None
) -> Binding:
    """Load ``args.file``, pick the kernel, apply --set/--dtype, bind --shape."""
    chosen = select(load_source(args.file), getattr(args, "kernel", None))
    return bind(chosen, args, need_shape, target)


def bind(
    chosen: Chosen,
    args: argparse.Namespace,
    need_shape: bool = True,
    target: Target | None = None,
) -> Binding:
    """``chosen`` bound to the --set, --dtype and --shape of ``args``."""
    sets = parse_sets(getattr(args, "sets", []) or [])
    dtype = parse_dtype(getattr(args, "dtype", None))
    text = getattr(args, "shape", None)

    def shape(kernel: Kernel, defaults: Mapping[str, int]) -> dict[str, int]:
        if need_shape or text:
            values = parse_shape(text, kernel.shape_syms, dict(defaults))
            check_given = getattr(chosen, "check_given_shape", None)  # MLA: Dv
            if check_given is not None:
                check_given(shape_names(text) if text else set(defaults))
            return values
        return {}

    bound = driver.bind(chosen, shape, sets, dtype, target)
    return replace(bound, debug=bool(getattr(args, "debug", False)))


def add_debug_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--debug",
        action="store_true",
        help="keep fd.debug_print / fd.device_assert in the generated code, as "
        "AscendC::printf / ascendc_assert (off by default: left out)",
    )
