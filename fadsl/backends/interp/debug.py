"""The interpreter's ``debug_print`` and ``device_assert`` (fd.debug_print, fd.device_assert).

The grid runs batched, so one op runs for many tasks at once: each prints one line per
task (and loop iteration) that runs it, labelled with the user's names of the grid and
loop variables. Lines are kept on the machine with the task's grid point and a
sequence number, and ``flush`` prints them in grid order, each task's lines in the
order they ran, whatever the threads' split (``threads.py``).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

from fadsl.backends.interp.frame import Frame
from fadsl.backends.interp.impls import impl
from fadsl.backends.interp.machine import Machine
from fadsl.backends.interp.slots import Handle
from fadsl.backends.interp.storage import Widened
from fadsl.errors import ExecutionError
from fadsl.ir import nodes as ir


@impl(ir.DebugPrint)
def debug_print(op: ir.DebugPrint, fr: Frame) -> None:
    args = [_value(fr, v) for v in op.args]
    scope = [fr.scalar(e, op.loc) for e in op.scope]
    where = f"{os.path.basename(op.loc.file)}:{op.loc.line}"
    for point in _points(fr, args, scope):
        labels = _labels(op.labels, scope, point)
        shown = [
            _shown(_at(a, point, fr.k), n in op.scalars) for n, a in enumerate(args)
        ]
        text = op.fmt.replace("{}", "\x00").split("\x00")
        line = text[0] + "".join(s + t for s, t in zip(shown, text[1:]))
        key = _grid_key(op, scope, point)
        fr.machine.prints.append(
            (key, fr.machine.next_seq(), f"{where} {labels} {line}")
        )


@impl(ir.DeviceAssert)
def device_assert(op: ir.DeviceAssert, fr: Frame) -> None:
    cond = _value(fr, op.cond)
    scope = [fr.scalar(e, op.loc) for e in op.scope]
    for point in _points(fr, [cond], scope):
        if not np.all(_at(cond, point, fr.k)):
            raise ExecutionError(
                f"device_assert failed: {op.msg}",
                op.loc,
                notes=(
                    f"in the task and iteration {_labels(op.labels, scope, point)}",
                ),
                hint="fd.debug_print the values the condition reads to see why",
                code="device_assert_failed",
            )


def flush(machine: Machine) -> None:
    """Print the lines the run's debug_print ops made, in grid order, and forget them."""
    lines = sorted(machine.prints)
    machine.prints.clear()
    for _, _, text in lines:
        print(text, file=sys.stdout)


def _shown(x: np.ndarray, scalar: bool) -> str:
    """A tile as numpy prints it (a 1-D one on one line), a scalar as a number."""
    if scalar:
        value = float(x.reshape(-1)[0])
        return str(int(value)) if value.is_integer() else repr(value)
    width = 10**6 if x.ndim <= 1 else 75
    return np.array2string(x, max_line_width=width)


def _value(fr: Frame, v: ir.Value) -> np.ndarray:
    raw = fr.raw(v)
    if isinstance(raw, Handle):
        raw = fr.read_slot(raw)
    if isinstance(raw, Widened):
        raw = raw.narrow()
    return np.asarray(raw)


def _points(fr: Frame, args: list[np.ndarray], scope: list[Any]) -> Any:
    """Every point of the frame's batch the op runs at."""
    shapes = [a.shape[: fr.k] for a in args]
    shapes += [np.shape(s) for s in scope if isinstance(s, np.ndarray)]
    return np.ndindex(np.broadcast_shapes(*shapes) if shapes else ())


def _at(x: Any, point: tuple[int, ...], k: int) -> Any:
    """``x`` at batch ``point`` (an axis of size 1 is shared by every point)."""
    if not isinstance(x, np.ndarray) or k == 0:
        return x
    return x[tuple(0 if x.shape[a] == 1 else p for a, p in enumerate(point))]


def _labels(names: tuple[str, ...], scope: list[Any], point: tuple[int, ...]) -> str:
    k = len(point)
    values = [int(_at(s, point, k)) for s in scope]
    return "[" + " ".join(f"{n}={v}" for n, v in zip(names, values)) + "]"


def _grid_key(op: Any, scope: list[Any], point: tuple[int, ...]) -> tuple[int, ...]:
    k = len(point)
    return tuple(int(_at(s, point, k)) for s in scope[: op.grid])
