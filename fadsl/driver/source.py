"""Kernel files: a Python file with module-level kernels, or one textual-IR kernel.

A ``.py`` file is imported (so its top-level code runs, without writing bytecode
beside it: ``user_import.py``) and every ``@fd.kernel`` / ``fd.attention(...)`` at
module level is found; a ``.fir`` file is parsed and never executed.
"""

from __future__ import annotations

import os
import re
import traceback
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from fadsl.driver.user_import import exec_user_module
from fadsl.errors import FadslError, KernelSyntaxError, Loc, UsageError

if TYPE_CHECKING:
    from fadsl.ir.nodes import Kernel
    from fadsl.driver.binding import Chosen
    from fadsl.frontend.kernel import KernelDef


@dataclass
class KernelSource:
    """A loaded kernel file: Python kernel definitions or one parsed IR kernel."""

    path: str
    defs: list[KernelDef] = field(default_factory=list)
    ir_kernel: Kernel | None = None

    @property
    def names(self) -> list[str]:
        if self.ir_kernel is not None:
            return [self.ir_kernel.name]
        return [d.name for d in self.defs]


def load_source(path: str) -> KernelSource:
    """Import or parse ``path``; a clear error for anything but a kernel file."""
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
            code="no_kernel",
        )
    return KernelSource(path, defs=defs)


def _import_user_file(path: str) -> ModuleType:
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
            code="python_syntax_error",
        ) from None
    except Exception as exc:
        raise KernelSyntaxError(
            f"importing the kernel file raised {type(exc).__name__}: {exc}",
            _user_frame(exc, abspath),
            hint="loading a kernel file runs its top-level Python code",
            code="import_fails",
        ) from None
    return module


def _user_frame(exc: BaseException, path: str) -> Loc | None:
    found = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if os.path.abspath(frame.f_code.co_filename) == path:
            found = Loc(path, lineno)
    return found


def select(src: KernelSource, name: str | None) -> Chosen:
    """The chosen kernel definition (or IR kernel)."""
    if name is not None and name not in src.names:
        raise UsageError(
            f"{src.path} has no kernel named {name!r}",
            None,
            hint=f"kernels in this file: {', '.join(src.names)}",
            code="kernel_not_found",
        )
    if src.ir_kernel is not None:
        return src.ir_kernel
    if name is None:
        return _default(src)
    return next(d for d in src.defs if d.name == name)


BACKWARD_SUFFIXES = ("_bwd", "_backward", "_grad")
"""A kernel named ``<forward>_bwd`` (or these) beside ``<forward>`` is its backward."""


def _is_backward(d: KernelDef, names: list[str]) -> bool:
    if d.is_backward:
        return True
    return any(
        d.name.endswith(s) and d.name[: -len(s)] in names for s in BACKWARD_SUFFIXES
    )


def _default(src: KernelSource) -> KernelDef:
    """The only kernel, or the only forward of a file holding it and its backward
    kernels (``fd.attention_backward``, or named ``<forward>_bwd``)."""
    if len(src.defs) == 1:
        return src.defs[0]
    names = src.names
    forwards = [d for d in src.defs if not _is_backward(d, names)]
    if len(forwards) == 1:
        return forwards[0]
    roles = [
        f"--kernel {d.name}" + (" (a backward)" if _is_backward(d, names) else "")
        for d in src.defs
    ]
    raise UsageError(
        f"{src.path} defines several kernels: {', '.join(names)}",
        None,
        hint=f"choose one: {', '.join(roles)}; without --kernel, a file holding one "
        "forward kernel and its backward runs the forward",
        code="several_kernels",
    )
