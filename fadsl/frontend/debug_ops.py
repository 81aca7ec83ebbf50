"""``fd.debug_print`` and ``fd.device_assert``: looking inside a kernel while it runs.

``print(acc)`` in a kernel prints the tracer once, while the kernel is read; these
ops run with the kernel instead, once per task and loop iteration, in the
interpreter (``fadsl run``, ``fd.interpret``). Compiled builds leave them out
(``passes/strip_debug.py``) unless built with ``--debug``.
"""

from __future__ import annotations

from typing import Any

from fadsl.errors import KernelSyntaxError
from fadsl.frontend.ops import Tile, current, is_scalar
from fadsl.ir import nodes as ir
from fadsl.ir.types import DType


def debug_print(fmt: str, *args: Any) -> None:
    """Print ``fmt`` with each ``{}`` replaced by the next argument, once for every
    task and loop iteration that runs it, after the task's grid and loop variables.

    Args:
        fmt: the text; one ``{}`` per argument.
        args: tiles, or scalars (loop variables, shape symbols, ``fd.load_scalar``
            values), printed as numpy prints them.

    The interpreter (``fadsl run``, ``fd.interpret``) prints the lines on stdout in
    grid order, a task's lines in the order they ran. Compiled code (``fadsl
    compile``, ``fadsl sim``) leaves them out unless built with ``--debug``
    (``fd.sim(..., debug=True)``), which lowers them to ``AscendC::printf``.

    Example: ``fd.debug_print("m = {}", m)`` prints ``attn.py:30 [b=0 h=1 i=0 j=2]
    m = [0.53 0.81 ...]``.
    """
    t = current()
    if not isinstance(fmt, str):
        raise KernelSyntaxError(
            "fd.debug_print: the first argument is the text, e.g. "
            'fd.debug_print("m = {}", m)',
            t.here(),
            code="debug_print_args",
        )
    holes = fmt.count("{}")
    if holes != len(args):
        raise KernelSyntaxError(
            f"fd.debug_print: the text has {holes} `{{}}` for {len(args)} argument(s)",
            t.here(),
            hint="write one {} where each argument goes (no format specs: {} only)",
            code="debug_print_holes",
        )
    values = tuple(_as_tile(x, t) for x in args)
    scalars = tuple(n for n, x in enumerate(args) if not isinstance(x, Tile))
    labels, scope = _scope(t)
    t.builder.emit(
        ir.DebugPrint,
        t.here(),
        fmt=fmt,
        labels=labels,
        scope=scope,
        grid=t.grid_vars,
        scalars=scalars,
        args=values,
    )


def device_assert(cond: Any, msg: str) -> None:
    """Stop the run when an element of the mask ``cond`` is false, with ``msg``, the
    user's line, the task and the loop iteration.

    Args:
        cond: a mask tile (a comparison: ``l > 0``).
        msg: what went wrong, for the message.

    Checked by the interpreter (``fadsl run``, ``fd.interpret``: an execution
    error); compiled code leaves it out unless built with ``--debug``, which lowers
    it to ``ascendc_assert``.

    Example: ``fd.device_assert(l > 0, "every row saw a key")``
    """
    t = current()
    if not isinstance(cond, Tile):
        raise KernelSyntaxError(
            "fd.device_assert takes a mask tile, e.g. fd.device_assert(l > 0, '...')",
            t.here(),
            hint="a condition on loop variables or constants is known before the "
            "kernel runs: use a Python assert outside the kernel",
            code="device_assert_not_a_mask",
        )
    labels, scope = _scope(t)
    t.builder.emit(
        ir.DeviceAssert,
        t.here(),
        msg=str(msg),
        labels=labels,
        scope=scope,
        grid=t.grid_vars,
        cond=cond.value,
    )


def _as_tile(x: Any, t: Any) -> ir.Value:
    if isinstance(x, Tile):
        return x.value
    if is_scalar(x):
        from fadsl.frontend.tile_ops import full

        return full((1,), x, DType.F32).value
    raise KernelSyntaxError(
        f"fd.debug_print prints tiles and scalars, got {type(x).__name__}",
        t.here(),
        code="debug_print_args",
    )


def _scope(t: Any) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    return tuple(n for n, _ in t.scope), tuple(s for _, s in t.scope)
