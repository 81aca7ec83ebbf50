"""Every integer the generated kernel passes to an Ascend C parameter struct or call.

Input: a ``plan_buffers.Lowering`` (the lowered IR, which unit runs each op, the vector
instruction forms and per-core shapes). Output: ``FieldUse``s, each one value the
Ascend C backend (``backends/ascendc/cube.py``, ``vector_io.py``, ``vector_rules.py``,
``include/fadsl_tile.h``) writes into one field, as a sympy expression over the shape
symbols and block sizes (an upper bound where the C++ computes a valid length at run
time), next to the field's C type and documented range (``FIELDS``). The resource check
evaluates them at the bound shape (``field_check``): a value out of range would be
truncated by the ``static_cast`` or misread by the hardware, so it is refused like a
buffer that does not fit.

Fields the backend always sets to a constant, or that the helpers keep in range by
splitting (repeat counts of at most 248 rows, LoadData of at most 255 fractals, masks of
at most one repeat), are listed in ``FIELDS`` with ``constant`` set and have no uses.

Non-goals: evaluating or explaining (field_check), C++ text (backends).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import sympy

from fadsl.errors import Loc
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, as_expr
from fadsl.ir.expr_print import to_text
from fadsl.ir.types import DType, QueueType, TensorType, TileType
from fadsl.plan.memory.gm_geometry import Geometry, geometry
from fadsl.plan.schedule.sides import CUBE, walk

if TYPE_CHECKING:
    from fadsl.plan.memory.plan_buffers import Lowering

U8, U16, U32, I32 = 2**8 - 1, 2**16 - 1, 2**32 - 1, 2**31 - 1
_DOCS = "asc-devkit docs/zh/api/SIMD-API/基础API/"
_ND2NZ = (
    _DOCS + "矩阵计算（ISASI）/矩阵计算的搬入/DataCopy（GMToL1随路转换-ND2NZ搬运）.md"
)
_PAD = (
    _DOCS
    + "Memory矢量计算/数据搬运/DataCopyPad（GMToUB非对齐数据搬运）.md, （UBToGM…）.md"
)
_HIGH = _DOCS + "Memory矢量计算/数据搬运/DataCopy（GM与UB高维切分数据搬运）.md"
_LOAD2D = _DOCS + "矩阵计算（ISASI）/矩阵计算的搬入/LoadData_2D.md"
_FILL = _DOCS + "矩阵计算（ISASI）/矩阵搬入辅助配置接口/Fill.md"
_MMAD = _DOCS + "矩阵计算（ISASI）/Mmad计算/Mmad.md"
_FIX = _DOCS + "矩阵计算（ISASI）/矩阵计算的搬出/Fixpipe（L0C到GM数据搬运）.md (NZ2ND)"
_BIN = "asc-devkit include/basic_api/kernel_struct_binary.h"
_RED = (
    "asc-devkit docs/api/context/WholeReduceMax.md (srcRepStride: data blocks between "
    "repeats, an int32_t argument with no stated range: fadsl keeps it in uint8_t)"
)
_BRCB = _DOCS + "Memory矢量计算/数据填充/Brcb.md"
_REP = (
    "asc-devkit impl/basic_api/utils/kernel_utils_constants.h (MAX_REPEAT_TIMES = 255)"
)
_L2 = "asc-devkit include/basic_api/kernel_operator_vec_binary_intf.h (level-2 count: int32_t), kernel_operator_vec_vconv_intf.h (Cast: uint32_t)"


@dataclass(frozen=True)
class Field:
    """One field of an Ascend C parameter struct or call, with its documented range."""

    call: str
    name: str
    ctype: str
    lo: int
    hi: int
    doc: str
    unit: str = "elements"
    constant: str = ""
    """What the backend always passes, when it is not a computed value."""

    @property
    def title(self) -> str:
        return f"{self.call}.{self.name}"


_F = [
    Field("Nd2NzParams", "ndNum", "uint16_t", 0, 4095, _ND2NZ, "matrices", "1"),
    Field("Nd2NzParams", "nValue", "uint16_t", 0, 16384, _ND2NZ, "rows"),
    Field("Nd2NzParams", "dValue", "uint16_t", 0, U16, _ND2NZ),
    Field("Nd2NzParams", "srcNdMatrixStride", "uint16_t", 0, U16, _ND2NZ, "", "0"),
    Field("Nd2NzParams", "srcDValue", "uint16_t", 1, U16, _ND2NZ),
    Field("Nd2NzParams", "dstNzC0Stride", "uint16_t", 1, 16384, _ND2NZ, "32 B"),
    Field("Nd2NzParams", "dstNzNStride", "uint16_t", 1, 16384, _ND2NZ, "32 B", "1"),
    Field("Nd2NzParams", "dstNzMatrixStride", "uint16_t", 0, 16384, _ND2NZ, "", "0"),
    Field("InitConstValueParams", "repeatTimes", "uint16_t", 0, 32767, _FILL, ""),
    Field("InitConstValueParams", "blockNum", "uint16_t", 0, 32767, _FILL, "32 B"),
    Field("InitConstValueParams", "dstGap", "uint16_t", 0, 32767, _FILL, "32 B"),
    Field("LoadData2DParams", "startIndex", "uint16_t", 0, U16, _LOAD2D, "", "0"),
    Field("LoadData2DParams", "repeatTimes", "uint8_t", 0, 255, _LOAD2D, "fractals"),
    Field("LoadData2DParams", "srcStride", "uint16_t", 0, U16, _LOAD2D, "512 B"),
    Field("LoadData2DParams", "dstGap", "uint16_t", 0, U16, _LOAD2D, "512 B", "0"),
    Field("MmadParams", "m", "uint16_t", 0, 4095, _MMAD),
    Field("MmadParams", "n", "uint16_t", 0, 4095, _MMAD),
    Field("MmadParams", "k", "uint16_t", 0, 4095, _MMAD),
    Field("FixpipeParamsV220", "nSize", "uint16_t", 0, 4095, _FIX),
    Field("FixpipeParamsV220", "mSize", "uint16_t", 0, 8192, _FIX),
    Field("FixpipeParamsV220", "srcStride", "uint16_t", 0, U16, _FIX, "C0 rows"),
    Field("FixpipeParamsV220", "dstStride", "uint32_t", 1, U32, _FIX),
    Field("DataCopyExtParams", "blockCount", "uint16_t", 0, 4095, _PAD, "rows"),
    Field("DataCopyExtParams", "blockLen", "uint32_t", 0, 2097151, _PAD, "B"),
    Field(
        "DataCopyExtParams", "srcStride/dstStride (GM)", "uint32_t", 0, U32, _PAD, "B"
    ),
    Field(
        "DataCopyExtParams",
        "srcStride/dstStride (UB)",
        "uint32_t",
        0,
        U32,
        _PAD,
        "32 B",
    ),
    Field(
        "DataCopy(count)", "DataCopyParams.blockLen", "uint16_t", 0, U16, _HIGH, "32 B"
    ),
    Field("BinaryRepeatParams", "*RepStride", "uint8_t", 0, 255, _BIN, "32 B"),
    Field("WholeReduceMax/Sum", "srcRepStride", "uint8_t", 0, 255, _RED, "32 B"),
    Field("Brcb", "repeatTime", "uint8_t", 0, 255, _BRCB, "8 rows"),
    Field("level-0 vector ops", "repeatTime", "uint8_t", 0, 255, _REP, "", "<= 248"),
    Field("level-2 vector ops", "count", "int32_t", 0, I32, _L2),
]
FIELDS: dict[str, Field] = {f.title: f for f in _F}


@dataclass(frozen=True)
class FieldUse:
    """One value the kernel writes into ``field``."""

    field: Field
    value: Expr
    what: str
    """What the value is, e.g. "the GM row stride of `q`"."""
    loc: Loc
    layout: str | None = None
    """The tensor whose memory layout sets the value (a row stride), if any."""


def field_uses(low: Lowering) -> tuple[FieldUse, ...]:
    """Every computed field value of the kernel ``low`` lowers, first use of each."""
    out: list[FieldUse] = []
    params = {p.name: p for p in low.kernel.params}
    for op in walk(low.grid.body):
        if isinstance(op, ir.Load) and op.src in params:
            if low.sides.op_side.get(id(op)) == CUBE:
                out += _cube_load(low, op, ir.viewed(params[op.src], op.view))
            else:
                src = ir.viewed(params[op.src], op.view)
                out += _pad_copy(low, op.result, src, op.index, op.loc)
                if isinstance(op, ir.LoadPages):  # a page's contiguous rows: one burst
                    out += _page_burst(low, op.result, src, op.index, op.loc)
        elif isinstance(op, ir.Store) and op.dst in params:
            dst = ir.viewed(params[op.dst], op.view)
            out += _pad_copy(low, op.value, dst, op.index, op.loc)
        elif isinstance(op, ir.Dot):
            out += _dot(low, op)
    for v in low.sides.to_cube:
        rows, cols = _tile(v).shape
        out += _nd2nz(
            rows,
            cols,
            f"the operand `%{v.name}` made by the vector cores",
            _loc(low, v),
        )
    for v in list(low.sides.to_cube) + list(low.sides.to_vector):
        out += _exchange(low, v)
    for pos, form in low.vec.forms.items():
        out += _vector(low, low.vec.points[pos], form.name)
    return _first(out)


def _first(uses: list[FieldUse]) -> tuple[FieldUse, ...]:
    seen: set[tuple[str, Expr]] = set()
    out = []
    for u in uses:
        key = (u.field.title, sympy.sympify(u.value))
        if key not in seen:
            seen.add(key)
            out.append(u)
    return tuple(out)


def _use(
    title: str, value: Expr | int, what: str, loc: Loc, layout: str | None = None
) -> FieldUse:
    return FieldUse(FIELDS[title], as_expr(value), what, loc, layout)


def _tile(v: ir.Operand) -> TileType:
    t = v.type  # type: ignore[union-attr]
    if isinstance(t, QueueType):
        t = t.tile
    assert isinstance(t, TileType)
    return t


def _nd2nz(rows: Expr, cols: Expr, what: str, loc: Loc) -> list[FieldUse]:
    """CopyNdToNz of a dense rows x cols tile from a GM workspace into L1."""
    return [
        _use("Nd2NzParams.nValue", rows, f"the rows of {what}", loc),
        _use("Nd2NzParams.dValue", cols, f"the columns of {what}", loc),
        _use("Nd2NzParams.srcDValue", cols, f"the GM row stride of {what}", loc),
        _use("Nd2NzParams.dstNzC0Stride", rows, f"the padded rows of {what}", loc),
    ]


def _cube_load(low: Lowering, op: ir.Load, param: ir.Param) -> list[FieldUse]:
    g = geometry(param, op.index)
    what = f"a block of `{param.name}`"
    uses = [
        _use("Nd2NzParams.nValue", g.rows, f"the rows of {what}", op.loc),
        _use("Nd2NzParams.dValue", g.cols, f"the columns of {what}", op.loc),
        _use(
            "Nd2NzParams.srcDValue",
            g.stride,
            f"the GM row stride of `{param.name}` {_shape_text(param)}",
            op.loc,
            param.name if g.stride != g.cols else None,
        ),
        _use("Nd2NzParams.dstNzC0Stride", g.rows, f"the padded rows of {what}", op.loc),
    ]
    c0 = 32 // _tile(op.result).dtype.itemsize
    if g.col_tail:  # ZeroTailCols: at most all column blocks of the padded rows
        uses.append(
            _use(
                "InitConstValueParams.blockNum",
                g.cols / c0 * g.rows,
                f"padding columns of {what}",
                op.loc,
            )
        )
    if _contracts_rows(low, op) or (op.pad is not None and op.pad == 0):
        uses += [  # ZeroTailRows (backends/ascendc/cube.py)
            _use("InitConstValueParams.repeatTimes", g.cols / c0, f"{what}", op.loc),
            _use(
                "InitConstValueParams.blockNum", g.rows, f"tail rows of {what}", op.loc
            ),
            _use(
                "InitConstValueParams.dstGap", g.rows, f"valid rows of {what}", op.loc
            ),
        ]
    return uses


def _contracts_rows(low: Lowering, op: ir.Load) -> bool:
    """A B operand whose rows are a dot's contraction (its tail rows are zeroed)."""
    vals = {op.result} | ({op.into} if op.into is not None else set())
    dots = low.sides.dots
    if any(d.b in vals and not d.transpose_b for d in dots):
        return True
    for q in low.vec.points.values():
        if isinstance(q, ir.Dequeue) and op.into is not None:
            src = low.sides.defs.get(op.into)
            if getattr(src, "queue", None) == q.queue:
                return any(d.b == q.result and not d.transpose_b for d in dots)
    return False


def _dot(low: Lowering, op: ir.Dot) -> list[FieldUse]:
    ta, tb = _tile(op.a), _tile(op.b)
    m, k = ta.shape
    n = tb.shape[0] if op.transpose_b else tb.shape[1]
    k0 = 32 // ta.dtype.itemsize
    loc = op.loc
    uses = [
        _use("MmadParams.m", m, "the rows of the dot (m)", loc),
        _use("MmadParams.n", n, "the columns of the dot (n)", loc),
        _use("MmadParams.k", k, "the contraction of the dot (k)", loc),
        _use(
            "LoadData2DParams.repeatTimes", k / k0, "A fractals per 16-row strip", loc
        ),
        _use("LoadData2DParams.srcStride", m / 16, "16-row strips of A", loc),
    ]
    if not op.transpose_b:
        uses += [
            _use("LoadData2DParams.repeatTimes", n / 16, "B fractals per strip", loc),
            _use("LoadData2DParams.srcStride", k / 16, "16-row strips of B", loc),
        ]
    if op.result in low.sides.to_vector:
        uses += [
            _use("FixpipeParamsV220.nSize", n, "the columns of the dot result", loc),
            _use("FixpipeParamsV220.mSize", m, "the rows of the dot result", loc),
            _use("FixpipeParamsV220.srcStride", m, "the rows of the dot result", loc),
            _use("FixpipeParamsV220.dstStride", n, "the GM row of the dot result", loc),
        ]
    return uses


def _exchange(low: Lowering, v: ir.Value) -> list[FieldUse]:
    """DataCopy(count) of this core's rows between UB and a GM workspace."""
    t = _tile(v)
    shape = low.core_shape(v)
    blocks = sympy.Mul(*shape) * t.dtype.itemsize / 32
    title = "DataCopy(count).DataCopyParams.blockLen"
    return [
        _use(title, blocks, f"the 32 B blocks of `%{v.name}` per core", _loc(low, v))
    ]


def _shape_text(param: ir.Param) -> str:
    t = param.type
    assert isinstance(t, TensorType)
    return "[" + ", ".join(to_text(as_expr(d)) for d in t.shape) + "]"


def _loc(low: Lowering, v: ir.Value) -> Loc:
    op = low.sides.defs.get(v)
    return op.loc if op is not None else low.kernel.loc


def _pad_copy(
    low: Lowering,
    v: ir.Value,
    param: ir.Param,
    index: tuple[ir.Index, ...],
    loc: Loc,
) -> list[FieldUse]:
    """DataCopyPad between GM and UB (vector loads and stores)."""
    t = _tile(v)
    shape = low.core_shape(v)
    size = shape[0] if len(shape) == 2 and shape != t.shape else None
    g: Geometry = geometry(param, index, None, size)
    item = t.dtype.itemsize
    # with a column tail the gap is stride - valid columns, and at least one is valid
    gap = g.stride - (1 if g.col_tail else g.cols)
    layout = param.name if g.stride != g.cols else None
    blocks = sympy.ceiling(g.cols * item / 32)
    return [
        _use("DataCopyExtParams.blockCount", g.rows, f"rows of `{param.name}`", loc),
        _use(
            "DataCopyExtParams.blockLen", g.cols * item, f"a row of `{param.name}`", loc
        ),
        _use(
            "DataCopyExtParams.srcStride/dstStride (GM)",
            gap * item,
            f"the GM gap between rows of `{param.name}` {_shape_text(param)}",
            loc,
            layout,
        ),
        _use("DataCopyExtParams.srcStride/dstStride (UB)", blocks, "UB row gap", loc),
    ]


def _page_burst(
    low: Lowering,
    v: ir.Value,
    param: ir.Param,
    index: tuple[ir.Index, ...],
    loc: Loc,
) -> list[FieldUse]:
    """A vector core's paged load whose rows are contiguous in GM copies each page's
    rows (at most the core's rows) as one block (``ascendc/vector_pages.py``)."""
    g: Geometry = geometry(param, index, None, low.core_shape(v)[0])
    if g.stride != g.cols:
        return []
    size = g.rows * g.cols * _tile(v).dtype.itemsize
    what = f"a page's rows of `{param.name}` in one burst"
    return [_use("DataCopyExtParams.blockLen", size, what, loc)]


def _vector(low: Lowering, op: ir.Op, form: str) -> list[FieldUse]:
    """Counts of level-2 instructions; strides and repeats of the fadsl_tile.h helpers."""
    results = [r for r in op.results() if isinstance(r.type, (TileType, QueueType))]
    if not results:
        return []
    v = results[0]
    t = _tile(v)
    shape = low.core_shape(v)
    uses = [
        _use("level-2 vector ops.count", sympy.Mul(*shape), "tile elements", op.loc)
    ]
    dt = _source_dtype(op, t.dtype) if form == "row_reduce" else t.dtype
    src = _source_shape(low, op, shape) if form == "row_reduce" else shape
    if form in ("row_bcast", "col_bcast", "outer", "row_reduce") and len(src) == 2:
        row_blocks = src[1] * dt.itemsize / 32
        title = (
            "WholeReduceMax/Sum.srcRepStride"
            if form == "row_reduce"
            else "BinaryRepeatParams.*RepStride"
        )
        uses.append(_use(title, row_blocks, "32 B blocks of a tile row", op.loc))
        if form in ("row_bcast", "outer"):
            brcb = sympy.ceiling(src[0] / 8)
            uses.append(_use("Brcb.repeatTime", brcb, "rows / 8 (Brcb)", op.loc))
    return uses


def _source_dtype(op: ir.Op, default: DType) -> DType:
    x = getattr(op, "x", None)
    return _tile(x).dtype if isinstance(x, ir.Value) else default


def _source_shape(low: Lowering, op: ir.Op, shape: tuple[Expr, ...]) -> tuple:
    x = getattr(op, "x", None)
    if isinstance(x, ir.Value):
        return low.core_shape(x)
    return shape
