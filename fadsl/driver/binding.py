"""A kernel bound to concrete values: shape symbols, constants, scalars, dtype, target.

``bind`` turns a kernel definition (``@fd.kernel``, ``fd.attention``) or a parsed
textual-IR kernel into a ``Binding``: it applies the constants and the dtype (building
the IR), resolves the shape through the caller's rule (the command line's ``--shape``
or the API's arrays), and fixes every runtime scalar. The checks and their messages
are shared by the CLI and the Python API; ``Spelling`` says how a message names what
the user gave (``--set block_q=64`` or ``consts['block_q']=64``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from fadsl.errors import Loc, UsageError
from fadsl.ir.dtype import DType

if TYPE_CHECKING:
    from fadsl.frontend.kernel import KernelDef
    from fadsl.ir.nodes import Kernel
    from fadsl.target import Target

# The IR (fadsl.ir.nodes, and sympy with it) is imported where a kernel is built or
# read, not here: `fadsl compile` answers from its cache without it (io/compile_cache.py).

Chosen = Union["KernelDef", "Kernel"]
"""What can be bound: a kernel definition, or a kernel read from textual IR."""
Setting = tuple[Any, Union[Loc, None]]
"""A constant's or scalar's value and where the user wrote it (None: nowhere to show)."""
ShapeRule = Callable[["Kernel", Mapping[str, int]], dict[str, int]]
"""(the built kernel, its definition's default shape) -> every shape symbol's value,
in ``kernel.shape_syms`` order, or {} when the caller needs no shape."""

DIGITS_ONLY = "write the number with the digits 0-9 only (no `_`, no other scripts)"
"""The hint for numbers that Python would read but a flag does not."""
F32_MAX = 3.4028234663852886e38


@dataclass(frozen=True)
class Spelling:
    """How messages name what the user gave: command-line flags or API keywords."""

    api: bool = False

    def set(self, name: str, value: Any = None, shown: bool = True) -> str:
        """``--set name=value`` / ``consts['name']=value`` (``shown=False``: no value)."""
        if self.api:
            return f"consts[{name!r}]" + (f"={value!r}" if shown else "")
        return f"--set {name}" + (f"={value}" if shown else "")

    def give(self, name: str) -> str:
        """How to give a value: ``--set name=VALUE`` / ``consts={'name': VALUE}``."""
        return f"consts={{{name!r}: VALUE}}" if self.api else f"--set {name}=VALUE"

    @property
    def dtype(self) -> str:
        return "dtype=" if self.api else "--dtype"


CLI = Spelling()
API = Spelling(api=True)


def size_problem(value: int) -> str | None:
    """Why ``value`` cannot be a shape symbol's size (None: it can). The one rule of
    ``--shape``, ``shape=`` and the dimensions the API reads from arrays."""
    if value <= 0:
        return "sizes must be positive"
    if value >= 2**63:
        return "does not fit in 64 bits"
    return None


def element_dtype(value: object) -> DType | None:
    """``value`` (a DType, or a name such as ``"fp16"``) as a kernel's element dtype:
    fp16, bf16 or fp32; None when it is not one of them."""
    if isinstance(value, str):
        try:
            value = DType.parse(value)
        except ValueError:
            return None
    if isinstance(value, DType) and value.value in ("f16", "bf16", "f32"):
        return value
    return None


@dataclass(frozen=True)
class Binding:
    """A kernel's IR together with the concrete values every symbol takes."""

    kernel: Kernel
    """The IR as built (before any pass), with the chosen constants and dtype."""
    shape: dict[str, int]
    """Shape symbols, in ``kernel.shape_syms`` order ({} when none was needed)."""
    scalars: dict[str, float]
    """Runtime scalars (``fd.Scalar``), given or from their defaults."""
    kdef: KernelDef | None = None
    """The definition it came from (None for a .fir file): reference, seeded inputs."""
    target: Target | None = None
    """The chip to plan and prove for (None: interpret only)."""
    debug: bool = False
    """Compiled builds keep fd.debug_print / fd.device_assert, lowered to Ascend C's
    printf / ascendc_assert (``fadsl compile/sim --debug``); off by default."""

    @property
    def consts(self) -> dict[str, Any]:
        return self.kernel.const_values()

    @property
    def dtype(self) -> DType | None:
        """The element dtype: that of the first input tensor (None without one)."""
        from fadsl.ir.nodes import ParamKind
        from fadsl.ir.types import TensorType

        for p in self.kernel.params:
            if p.kind is ParamKind.IN and isinstance(p.type, TensorType):
                return p.type.dtype
        return None

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
        paged kernel: every sequence as long as its block table allows; packed TND
        sequences: all of one length). A hook's value is a number (every element) or a
        tuple (element by element of a 1-D input, read where the grid's first task
        reads it: the hook makes every task's reads alike). Reads it gives no value
        for (e.g. a block table inside the KV loop) are left out; the model refuses
        a kernel whose loop bounds need them (``perf/kernel.py``)."""
        from fadsl.ir.expr import evaluate
        from fadsl.ir.nodes import Grid, LoadScalar
        from fadsl.ir.visitor import IRVisitor

        out = self.env()
        hint = getattr(self.kdef, "modelled_scalars", None)
        values: dict[str, Any] = hint(self.shape) if hint is not None else {}
        if not values:
            return out
        first: dict[str, int] = {}

        class Reads(IRVisitor):
            def visit_Grid(self, op: Grid) -> None:
                first.update({v: 0 for v in op.vars})
                self.generic_visit(op)

            def visit_LoadScalar(self, op: LoadScalar) -> None:
                value = values.get(op.src)
                if isinstance(value, tuple):
                    try:
                        at = int(evaluate(op.index[0], {**out, **first}))
                    except KeyError:  # read inside a loop
                        at = -1
                    value = value[at] if 0 <= at < len(value) else None
                if value is not None:
                    out[op.name] = value

        Reads().visit_kernel(self.kernel)
        return out

    def model_assumption(self) -> str | None:
        """In words, what ``model_env`` assumes for values read at run time (None:
        nothing), for the output of the commands that model the kernel."""
        say = getattr(self.kdef, "model_assumption", None)
        return say(self.shape) if say is not None and self.shape else None

    def ref_consts(self) -> dict[str, Any]:
        """Constants and scalars, as a reference function receives them."""
        out = dict(self.consts)
        out.update(self.scalars)
        return out


def bind(
    chosen: Chosen,
    shape: ShapeRule,
    sets: Mapping[str, Setting] | None = None,
    dtype: DType | None = None,
    target: Target | None = None,
    spelling: Spelling = CLI,
) -> Binding:
    """Build ``chosen`` with ``sets`` and ``dtype``, resolve its shape, fix scalars."""
    from fadsl.frontend.kernel import KernelDef

    sets = dict(sets or {})
    if isinstance(chosen, KernelDef):
        kernel, scalar_sets = _build_def(chosen, sets, dtype, spelling)
        values = shape(kernel, chosen.default_shape)
    else:
        kernel, scalar_sets = _rebind_ir(chosen, sets, dtype, spelling)
        values = shape(kernel, {})
    check_shape = getattr(chosen, "check_shape", None)  # e.g. N % Nkv for attention
    if check_shape is not None and values:
        check_shape(values)
    scalars = _scalars(kernel, values, scalar_sets, spelling)
    kdef = chosen if isinstance(chosen, KernelDef) else None
    return Binding(kernel, values, scalars, kdef, target)


# ----------------------------------------------------------------------------
# Constants and scalars
# ----------------------------------------------------------------------------


def _split_sets(
    sets: dict[str, Setting],
    consts: dict[str, Any],
    scalars: set[str],
    kernel_name: str,
    say: Spelling,
) -> tuple[dict[str, Any], dict[str, float]]:
    const_sets: dict[str, Any] = {}
    scalar_sets: dict[str, float] = {}
    for name, (value, loc) in sets.items():
        if name in scalars:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise UsageError(
                    f"{say.set(name, shown=False)}: the scalar `{name}` takes a number",
                    loc,
                )
            scalar_sets[name] = _finite_scalar(name, float(value), loc, say)
        elif name in consts:
            const_sets[name] = _check_const(name, value, consts[name], loc, say)
        else:
            known = sorted(set(consts) | scalars)
            raise UsageError(
                f"{say.set(name, shown=False)}: kernel `{kernel_name}` has no constant "
                f"or scalar `{name}`",
                loc,
                hint=f"it has: {', '.join(known) or 'none'}",
                code="set_unknown",
            )
    return const_sets, scalar_sets


def _check_const(
    name: str, value: Any, default: Any, loc: Loc | None, say: Spelling
) -> Any:
    given = say.set(name, value)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise UsageError(f"{given}: expected true or false", loc)
        return value
    if isinstance(default, int):
        return _check_int_const(name, value, default, loc, say)
    if isinstance(default, float) and isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise UsageError(
                f"{given}: `{name}` must be a finite number",
                loc,
                hint=f"the default is {default}",
            )
        return float(value)
    return value


def _check_int_const(
    name: str, value: Any, default: int, loc: Loc | None, say: Spelling
) -> int:
    given = say.set(name, value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(
            f"{given}: expected an integer",
            loc,
            hint=DIGITS_ONLY if any(c.isdigit() for c in str(value)) else None,
        )
    if default > 0 and value <= 0:
        raise UsageError(
            f"{given}: `{name}` must be a positive integer",
            loc,
            hint=f"the default is {default}",
            code="block_size_zero" if value == 0 else "block_size_negative",
        )
    if abs(value) >= 2**63:
        raise UsageError(f"{given}: does not fit in 64 bits", loc)
    return value


def _finite_scalar(name: str, value: float, loc: Loc | None, say: Spelling) -> float:
    """A runtime scalar is a float32 in the kernel: NaN and infinities (or values that
    round to them) would only turn every output into NaN."""
    if math.isfinite(value) and abs(value) <= F32_MAX:
        return value
    what = "is not a number" if math.isnan(value) else "is not finite in float32"
    leave = "leave it out of consts" if say.api else f"leave --set {name} out"
    raise UsageError(
        f"{say.set(name, value)}: the scalar `{name}` {what}",
        loc,
        notes=(
            f"`{name}` is a float32 in the kernel (largest finite value {F32_MAX:.4e}); "
            "a NaN or infinite scalar makes the outputs NaN",
        ),
        hint=f"give a finite number, or {leave} to use its default",
        code="set_scalar_not_finite",
    )


def _build_def(
    kdef: KernelDef, sets: dict[str, Setting], dtype: DType | None, say: Spelling
) -> tuple[Kernel, dict[str, float]]:
    scalars = {s.name for s in kdef.specs if s.kind == "scalar"}
    const_sets, scalar_sets = _split_sets(
        sets, kdef.const_defaults, scalars, kdef.name, say
    )
    return kdef.build(const_sets, dtype), scalar_sets


def _rebind_ir(
    kernel: Kernel, sets: dict[str, Setting], dtype: DType | None, say: Spelling
) -> tuple[Kernel, dict[str, float]]:
    """A parsed .fir kernel: only integer constants (symbolic sizes) can change."""
    if dtype is not None:
        raise UsageError(
            f"{say.dtype} cannot change a textual-IR kernel; its types are fixed",
            None,
            hint="edit the .fir file, or use the .py kernel",
        )
    from fadsl.ir.nodes import ParamKind

    consts = kernel.const_values()
    scalars = {p.name for p in kernel.params if p.kind is ParamKind.SCALAR}
    const_sets, scalar_sets = _split_sets(sets, consts, scalars, kernel.name, say)
    for name in const_sets:
        if not isinstance(consts[name], int) or isinstance(consts[name], bool):
            raise UsageError(
                f"{say.set(name, shown=False)}: in textual IR only integer (size) "
                "constants can change",
                sets[name][1],
            )
    merged = dict(consts)
    merged.update(const_sets)
    return (
        dataclasses.replace(kernel, consts=tuple(sorted(merged.items()))),
        scalar_sets,
    )


def _scalars(
    kernel: Kernel, shape: dict[str, int], given: dict[str, float], say: Spelling
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
                    f"default of scalar `{p.name}` uses {exc.args[0]}, which is not a "
                    "shape symbol",
                    p.loc,
                ) from None
        elif p.default is None:
            raise UsageError(
                f"scalar `{p.name}` has no default; give {say.give(p.name)}", p.loc
            )
    return out
