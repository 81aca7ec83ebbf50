"""Debug builds: fd.debug_print and fd.device_assert on the vector cores.

``fadsl compile/sim --debug`` (``Binding.debug``) keeps the debugging ops that
``passes/strip_debug.py`` otherwise drops; this module lowers them to the two
kernel-side calls asc-devkit documents (docs/zh/api/Utils-API/调测接口/printf.md,
docs/zh/api/SIMD-API/基础API/调试接口/异常检测/ascendc_assert.md):
``AscendC::printf(fmt, args...)`` with the conversions ``%ld`` (int64_t) and ``%f``
(float; half and bfloat16_t are cast to float first), and
``ascendc_assert(expr, fmt, args...)``.

A tile is read element by element by the scalar unit (``LocalTensor::GetValue``)
after ``SetFlag/WaitFlag<HardEvent::V_S>`` (the vector unit may still be writing it).
Each AIV prints only its own rows, so a tile split between the two AIVs prints as two
parts, each headed by the rows it holds: ``rows 8-15 [v v ...]``; a scalar prints as a
number. Every line starts with the user's file and line and the task's grid and loop
variables, as the interpreter prints them (``backends/interp/debug.py``).

Non-goals: printing masks (bit masks in UB) and tiles with no UB home (cube-only
operands), and ``%`` in the text (printf.md documents no ``%%`` escape): E108.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.types import DType, QueueType, TileType
from fadsl.plan.memory.vector_forms import COMPARE

if TYPE_CHECKING:
    from fadsl.backends.ascendc.vector import VectorEmitter

CMP_CXX: dict[type, str] = {
    ir.Lt: "<",
    ir.Le: "<=",
    ir.Gt: ">",
    ir.Ge: ">=",
    ir.Eq: "==",
    ir.Ne: "!=",
}
SYNC = "fadsl::SetWaitFlag<AscendC::HardEvent::V_S>();  // the scalar unit reads UB"


def lower(e: VectorEmitter, op: ir.DebugPrint | ir.DeviceAssert) -> list[Any]:
    """The statements of a kept debugging op on a vector core."""
    if isinstance(op, ir.DebugPrint):
        return debug_print(e, op)
    return device_assert(e, op)


def debug_print(e: VectorEmitter, op: ir.DebugPrint) -> list[Any]:
    _check_text(op.fmt, op.loc)
    text = op.fmt.replace("{}", "\x00").split("\x00")
    head, args = _prefix(e, op)
    out: list[Any] = [SYNC]
    out.append(_printf(head + _c(text[0]), args))
    for n, (v, rest) in enumerate(zip(op.args, text[1:])):
        if n in op.scalars:
            fmt, arg = _scalar(e, v, op)
            out.append(_printf(fmt + _c(rest), [arg]))
        else:
            out += _tile(e, v, op, n)
            out += [_printf(_c(rest), [])] if rest else []
    out.append(_printf("\\n", []))
    return out


def device_assert(e: VectorEmitter, op: ir.DeviceAssert) -> list[Any]:
    _check_text(op.msg, op.loc)
    cmp = e.sides.defs.get(op.cond) if isinstance(op.cond, ir.Value) else None
    if not isinstance(cmp, COMPARE):
        raise _unprintable(
            op,
            "the condition is not a comparison of tiles",
            "fd.device_assert(l > 0, ...)",
        )
    head, args = _prefix(e, op)
    shape = e.shape(op.cond)
    n = e.names.count(shape)
    lhs = _element(e, cmp.lhs, op, shape)
    rhs = _element(e, cmp.rhs, op, shape)
    fmt = "device_assert failed: " + _c(op.msg) + " " + head.split(" ", 1)[1].strip()
    call = f'ascendc_assert({lhs} {CMP_CXX[type(cmp)]} {rhs}, "{fmt}\\n"'
    call += "".join(f", {a}" for a in args) + ");"
    return [SYNC, (f"for (int64_t k = 0; k < {n}; ++k)", (call,))]


def _prefix(e: VectorEmitter, op: Any) -> tuple[str, list[str]]:
    """``fa2.py:30 [b=%ld i=%ld] `` and its arguments: the task and iteration."""
    where = f"{os.path.basename(op.loc.file)}:{op.loc.line}"
    labels = " ".join(f"{_c(n)}=%ld" for n in op.labels)
    args = [f"static_cast<int64_t>({e.names.expr(s)})" for s in op.scope]
    return f"{_c(where)} [{labels}] ", args


def _scalar(e: VectorEmitter, v: ir.Value, op: ir.Op) -> tuple[str, str]:
    """A scalar argument (the frontend's one-element ``full``): its expression."""
    full = e.sides.defs.get(v)
    assert isinstance(full, ir.Full), "debug_print scalars are fd.full tiles"
    if full.value.is_integer:
        return "%ld", f"static_cast<int64_t>({e.names.expr(full.value)})"
    return "%f", e.names.scalar(full.value, DType.F32)


def _tile(e: VectorEmitter, v: ir.Value, op: ir.Op, n: int) -> list[Any]:
    """``rows r0-r1 [x x ...]``: this core's rows of the tile, element by element."""
    t = _tile_type(e, v, op, n)
    shape = e.shape(v)
    row0 = e.names.expr(e.row_shift(v))
    rows = e.names.expr(shape[0])
    conv, cast = ("%ld", "int64_t") if t.dtype is DType.I32 else ("%f", "float")
    get = f"static_cast<{cast}>({e.var(v)}.GetValue(k))"
    return [
        _printf(
            "rows %ld-%ld [",
            [
                f"static_cast<int64_t>({row0})",
                f"static_cast<int64_t>({row0} + {rows} - 1)",
            ],
        ),
        (
            f"for (int64_t k = 0; k < {e.names.count(shape)}; ++k)",
            (_printf(f"%s{conv}", ['k == 0 ? "" : " "', get]),),
        ),
        _printf("]", []),
    ]


def _tile_type(e: VectorEmitter, v: ir.Value, op: ir.Op, n: int) -> TileType:
    t = v.type.tile if isinstance(v.type, QueueType) else v.type
    if not isinstance(t, TileType) or t.dtype is DType.BOOL:
        raise _unprintable(
            op, f"argument {n + 1} is a mask", "print the values it compares"
        )
    name = v.name
    while name in e.vec.views:
        name = e.vec.views[name]
    if e.chunk is not None and e.chunk.is_row(v):
        raise _unprintable(
            op,
            f"argument {n + 1} (%{v.name}) is in a row-chunked loop (its rows come a "
            "chunk at a time)",
            "print it after the loop, or build without row_chunk",
        )
    if name not in e.vec.homes and name not in e.vars:
        raise _unprintable(
            op,
            f"argument {n + 1} (%{v.name}) is only on the cube core (no UB copy)",
            "print a value the vector cores compute, e.g. a dot's result",
        )
    return t


def _element(e: VectorEmitter, x: ir.Operand, op: ir.Op, shape: Any) -> str:
    """Element k of a compared operand (a tile of the mask's shape, or a number)."""
    if isinstance(x, ir.Imm):
        return e.names.scalar(x.expr, DType.F32)
    if e.shape(x) != shape:
        raise _unprintable(
            op, "the comparison broadcasts", "compare tiles of the same shape"
        )
    _tile_type(e, x, op, 0)
    return f"static_cast<float>({e.var(x)}.GetValue(k))"


def _printf(fmt: str, args: list[str]) -> str:
    return f'AscendC::printf("{fmt}"' + "".join(f", {a}" for a in args) + ");"


def _c(text: str) -> str:
    """``text`` inside a C string literal (the newline is printf.md's one escape)."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _check_text(text: str, loc: Any) -> None:
    if "%" in text:
        raise BackendError(
            f"the debug text {text!r} has a `%`, which AscendC::printf would read as a "
            "conversion (printf.md documents no `%%` escape)",
            loc,
            hint="write `percent` or leave the `%` out of the text",
            code="debug_operand_not_printable",
        )


def _unprintable(op: ir.Op, why: str, fix: str) -> BackendError:
    what = "fd.debug_print" if isinstance(op, ir.DebugPrint) else "fd.device_assert"
    return BackendError(
        f"{what} cannot run on the device in a --debug build: {why}",
        op.loc,
        hint=f"{fix}; the interpreter (fadsl run) prints it as written",
        code="debug_operand_not_printable",
    )
