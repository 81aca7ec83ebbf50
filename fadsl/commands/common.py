"""What every command shares: loading kernel files, the kernel flags, bindings.

A kernel file is either a Python file with module-level kernels (``@fd.kernel`` or
``fd.attention(...)``), which is imported and therefore runs, or a textual-IR file
(``.fir``), which is parsed and never executed.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import traceback
from dataclasses import dataclass, field
from typing import Any

from fadsl.commands.flags import DIGITS_ONLY, parse_dtype, parse_sets, parse_shape
from fadsl.commands.user_import import exec_user_module
from fadsl.errors import FadslError, KernelSyntaxError, Loc, UsageError

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
# Loading kernels
# ----------------------------------------------------------------------------


@dataclass
class KernelSource:
    """A loaded kernel file: Python kernel definitions or one parsed IR kernel."""

    path: str
    defs: list[Any] = field(default_factory=list)
    ir_kernel: Any = None

    @property
    def names(self) -> list[str]:
        if self.ir_kernel is not None:
            return [self.ir_kernel.name]
        return [d.name for d in self.defs]


def load_source(path: str) -> KernelSource:
    if not os.path.isfile(path):
        raise UsageError(
            (
                f"{path} is not a regular file (a folder, a pipe or a device?)"
                if os.path.exists(path)
                else f"no such file: {path}"
            ),
            None,
            hint="give the path of a kernel .py file or a textual-IR .fir file",
        )
    if path.endswith(".fir"):
        from fadsl.io.files import IR_LIMIT, read_text
        from fadsl.ir.text.parser import parse_kernel

        text = read_text(path, "textual IR", IR_LIMIT)
        return KernelSource(path, ir_kernel=parse_kernel(text, path))
    if not path.endswith(".py"):
        raise UsageError(f"{path}: expected a .py kernel file or a .fir IR file", None)
    from fadsl.io.files import PY_LIMIT, check_size

    check_size(path, "kernel file", PY_LIMIT)
    module = _import_user_file(path)
    from fadsl.frontend.kernel import KernelDef

    defs = [v for v in vars(module).values() if isinstance(v, KernelDef)]
    if not defs:
        raise KernelSyntaxError(
            f"{path} defines no kernel",
            Loc(os.path.abspath(path), 1),
            hint="decorate a function with @fd.kernel, or assign "
            "kernel = fd.attention(...) at module level",
        )
    return KernelSource(path, defs=defs)


def _import_user_file(path: str) -> Any:
    abspath = os.path.abspath(path)
    stem = re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    name = f"fadsl_user_{stem}"
    try:
        module = exec_user_module(name, abspath)
    except FadslError:
        raise
    except SyntaxError as exc:
        raise KernelSyntaxError(
            f"Python syntax error: {exc.msg}",
            Loc(
                exc.filename or abspath, exc.lineno or 1, max(0, (exc.offset or 1) - 1)
            ),
        ) from None
    except Exception as exc:
        raise KernelSyntaxError(
            f"importing the kernel file raised {type(exc).__name__}: {exc}",
            _user_frame(exc, abspath),
            hint="loading a kernel file runs its top-level Python code",
        ) from None
    return module


def _user_frame(exc: BaseException, path: str) -> Loc | None:
    found = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if os.path.abspath(frame.f_code.co_filename) == path:
            found = Loc(path, lineno)
    return found


def select(src: KernelSource, name: str | None) -> Any:
    """The chosen kernel definition (or IR kernel)."""
    if name is not None and name not in src.names:
        raise UsageError(
            f"{src.path} has no kernel named {name!r}",
            None,
            hint=f"kernels in this file: {', '.join(src.names)}",
        )
    if src.ir_kernel is not None:
        return src.ir_kernel
    if name is None:
        if len(src.defs) > 1:
            raise UsageError(
                f"{src.path} defines several kernels: {', '.join(src.names)}",
                None,
                hint="choose one with --kernel NAME",
            )
        return src.defs[0]
    return next(d for d in src.defs if d.name == name)


# ----------------------------------------------------------------------------
# Binding a kernel to a shape, constants and scalars
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Binding:
    """A kernel's IR together with the concrete values every symbol takes."""

    kernel: Any
    """ir.Kernel"""
    shape: dict[str, int]
    scalars: dict[str, float]
    kdef: Any = None
    """The KernelDef it came from (None for a .fir file)."""

    @property
    def consts(self) -> dict[str, Any]:
        return self.kernel.const_values()

    def env(self) -> dict[str, Any]:
        """Values of shape symbols, integer constants and float scalars."""
        out: dict[str, Any] = dict(self.shape)
        out.update(
            {
                k: v
                for k, v in self.consts.items()
                if isinstance(v, int) and not isinstance(v, bool)
            }
        )
        out.update(self.scalars)
        return out

    def model_env(self) -> dict[str, Any]:
        """``env`` plus the values the performance model assumes for scalars the kernel
        reads from its inputs, from the kernel definition's ``modelled_scalars`` (a
        paged kernel: every sequence as long as its block table allows)."""
        from fadsl.ir.nodes import LoadScalar
        from fadsl.ir.visitor import IRVisitor

        out = self.env()
        hint = getattr(self.kdef, "modelled_scalars", None)
        values: dict[str, int] = hint(self.shape) if hint is not None else {}
        if not values:
            return out

        class Reads(IRVisitor):
            def visit_LoadScalar(self, op: LoadScalar) -> None:
                if op.src in values:
                    out[op.name] = values[op.src]

        Reads().visit_kernel(self.kernel)
        return out

    def ref_consts(self) -> dict[str, Any]:
        """Constants and scalars, as a reference function receives them."""
        out = dict(self.consts)
        out.update(self.scalars)
        return out


def build(args: argparse.Namespace, need_shape: bool = True) -> Binding:
    """Load ``args.file``, pick the kernel, apply --set/--dtype, bind --shape."""
    src = load_source(args.file)
    chosen = select(src, getattr(args, "kernel", None))
    return bind(chosen, args, need_shape)


def bind(chosen: Any, args: argparse.Namespace, need_shape: bool = True) -> Binding:
    from fadsl.frontend.kernel import KernelDef

    sets = parse_sets(getattr(args, "sets", []) or [])
    dtype = parse_dtype(getattr(args, "dtype", None))
    if isinstance(chosen, KernelDef):
        kernel, scalar_sets = _build_def(chosen, sets, dtype)
        defaults = chosen.default_shape
    else:
        kernel, scalar_sets = _rebind_ir(chosen, sets, dtype)
        defaults = None
    shape_text = getattr(args, "shape", None)
    if need_shape or shape_text:
        shape = parse_shape(shape_text, kernel.shape_syms, defaults)
    else:
        shape = {}
    check_shape = getattr(chosen, "check_shape", None)  # e.g. N % Nkv for attention
    if check_shape is not None and shape:
        check_shape(shape)
    scalars = _scalars(kernel, shape, scalar_sets)
    return Binding(
        kernel, shape, scalars, chosen if isinstance(chosen, KernelDef) else None
    )


def _split_sets(
    sets: dict[str, Any], consts: dict[str, Any], scalars: set[str], kernel_name: str
) -> tuple[dict[str, Any], dict[str, float]]:
    const_sets: dict[str, Any] = {}
    scalar_sets: dict[str, float] = {}
    for name, (value, loc) in sets.items():
        if name in scalars:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UsageError(
                    f"--set {name}: the scalar `{name}` takes a number", loc
                )
            scalar_sets[name] = _finite_scalar(name, float(value), loc)
        elif name in consts:
            const_sets[name] = _check_const(name, value, consts[name], loc)
        else:
            known = sorted(set(consts) | scalars)
            raise UsageError(
                f"--set {name}: kernel `{kernel_name}` has no constant or scalar `{name}`",
                loc,
                hint=f"it has: {', '.join(known) or 'none'}",
            )
    return const_sets, scalar_sets


def _check_const(name: str, value: Any, default: Any, loc: Loc) -> Any:
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise UsageError(f"--set {name}={value}: expected true or false", loc)
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise UsageError(
                f"--set {name}={value}: expected an integer",
                loc,
                hint=DIGITS_ONLY if any(c.isdigit() for c in str(value)) else None,
            )
        if default > 0 and value <= 0:
            raise UsageError(
                f"--set {name}={value}: `{name}` must be a positive integer",
                loc,
                hint=f"the default is {default}",
            )
        if abs(value) >= 2**63:
            raise UsageError(f"--set {name}={value}: does not fit in 64 bits", loc)
        return value
    if isinstance(default, float) and isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise UsageError(
                f"--set {name}={value}: `{name}` must be a finite number",
                loc,
                hint=f"the default is {default}",
            )
        return float(value)
    return value


F32_MAX = 3.4028234663852886e38


def _finite_scalar(name: str, value: float, loc: Loc) -> float:
    """A runtime scalar is a float32 in the kernel: NaN and infinities (or values that
    round to them) would only turn every output into NaN."""
    if math.isfinite(value) and abs(value) <= F32_MAX:
        return value
    what = "is not a number" if math.isnan(value) else "is not finite in float32"
    raise UsageError(
        f"--set {name}={value}: the scalar `{name}` {what}",
        loc,
        notes=(
            f"`{name}` is a float32 in the kernel (largest finite value {F32_MAX:.4e}); "
            "a NaN or infinite scalar makes the outputs NaN",
        ),
        hint=f"give a finite number, or leave --set {name} out to use its default",
    )


def _build_def(
    kdef: Any, sets: dict[str, Any], dtype: Any
) -> tuple[Any, dict[str, float]]:
    scalars = {s.name for s in kdef.specs if s.kind == "scalar"}
    const_sets, scalar_sets = _split_sets(sets, kdef.const_defaults, scalars, kdef.name)
    return kdef.build(const_sets, dtype), scalar_sets


def _rebind_ir(
    kernel: Any, sets: dict[str, Any], dtype: Any
) -> tuple[Any, dict[str, float]]:
    """A parsed .fir kernel: only integer constants (symbolic sizes) can change."""
    import dataclasses

    from fadsl.ir.nodes import ParamKind

    if dtype is not None:
        raise UsageError(
            "--dtype cannot change a textual-IR kernel; its types are fixed",
            None,
            hint="edit the .fir file, or use the .py kernel",
        )
    consts = kernel.const_values()
    scalars = {p.name for p in kernel.params if p.kind is ParamKind.SCALAR}
    const_sets, scalar_sets = _split_sets(sets, consts, scalars, kernel.name)
    for name, value in const_sets.items():
        if not isinstance(consts[name], int) or isinstance(consts[name], bool):
            raise UsageError(
                f"--set {name}: in textual IR only integer (size) constants can change",
                sets[name][1],
            )
    merged = dict(consts)
    merged.update(const_sets)
    return (
        dataclasses.replace(kernel, consts=tuple(sorted(merged.items()))),
        scalar_sets,
    )


def _scalars(
    kernel: Any, shape: dict[str, int], given: dict[str, float]
) -> dict[str, float]:
    from fadsl.ir.expr import evaluate
    from fadsl.ir.nodes import ParamKind

    out: dict[str, float] = {}
    for p in kernel.params:
        if p.kind is not ParamKind.SCALAR:
            continue
        if p.name in given:
            out[p.name] = given[p.name]
        elif p.default is not None and shape:
            try:
                out[p.name] = float(evaluate(p.default, shape))
            except KeyError as exc:
                raise UsageError(
                    f"default of scalar `{p.name}` uses {exc.args[0]}, which is not a shape "
                    "symbol",
                    p.loc,
                ) from None
        elif p.default is None:
            raise UsageError(
                f"scalar `{p.name}` has no default; give --set {p.name}=VALUE", p.loc
            )
    return out
