"""IR + lowering plan -> the kernel's view model (no Jinja here).

Compile-time constants: tile constants and the shape symbols that size buffers (the
head dim); they become ``constexpr``. Runtime values (other shape symbols, float
scalars) travel in a plain tiling struct the host fills and the kernel copies from GM.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy

from fadsl.version import __version__
from fadsl.backends.ascendc import atomic_io
from fadsl.backends.ascendc.cube import CubeEmitter
from fadsl.backends.ascendc.flag_ids import flag_ids, flag_list
from fadsl.backends.ascendc.mangle import Mangler
from fadsl.backends.ascendc.names import Names, ctype
from fadsl.backends.ascendc.phases import drained_sync_all, post_class, with_phases
from fadsl.backends.ascendc.task_loop import task_loop
from fadsl.backends.ascendc.vector import VectorEmitter
from fadsl.backends.ascendc.view import (
    Constant,
    Flag,
    GmParam,
    KernelView,
    Line,
    Stmt,
    TilingField,
)
from fadsl.errors import BackendError, FadslError, InternalError, Loc
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, evaluate
from fadsl.ir.types import ScalarType, TensorType
from fadsl.plan.memory.plan_buffers import Lowering
from fadsl.user_site import user_site


@dataclass(frozen=True)
class Emitted:
    view: KernelView
    names: Names
    host: str
    """stem of the kernel's global C++ names: <host>Tiling, <host>Cube, <host>Tasks"""
    prefix: str
    """stem of its global constants: <prefix>_AIC_CORES, <prefix>_TILING_H"""
    comptime: dict[str, int]
    runtime_syms: tuple[str, ...]
    scalars: tuple[str, ...]
    workspace_per_group: int


def comptime_symbols(low: Lowering) -> set[str]:
    names: set[str] = set()
    for b in low.plan.buffers:
        for d in b.shape:
            names |= {s.name for s in sympy.sympify(d).free_symbols}
    for w in low.plan.workspaces:
        for d in w.shape:
            names |= {s.name for s in sympy.sympify(d).free_symbols}
    return names & set(low.kernel.shape_syms)


def require_codegen(target: Any, kernel: ir.Kernel) -> None:
    """Refuse, before any work, a chip the backend does not lower to or a kernel name
    its project cannot declare."""
    from fadsl.backends.ascendc.mangle import check_kernel_symbol

    check_kernel_symbol(kernel.name, kernel.loc)
    if not target.split or not target.codegen:
        raise BackendError(
            f"code generation for {target.name} is not supported yet: the Ascend C "
            "backend lowers to split (AIC + 2 AIV) chips such as ascend910b1-b4 and A3",
            kernel.loc,
            hint="fadsl check still proves buffer fit for this chip",
        )


def emit(low: Lowering, source: str, env: dict[str, Any]) -> Emitted:
    """The kernel's Ascend C. A refusal raised at a line of fadsl's own library program
    (``fd.attention``'s) points at the kernel's declaration, the user's call, and names
    the library line in a note (as the API-field proof does)."""
    try:
        return _emit(low, source, env)
    except FadslError as err:
        raise _at_declaration(err, low.kernel.loc)


def _at_declaration(err: FadslError, kernel_loc: Loc | None) -> FadslError:
    if isinstance(err, InternalError):
        return err
    loc, notes = user_site(err.loc, kernel_loc, "raised at")
    err.loc, err.notes = loc, err.notes + notes
    return err


def _emit(low: Lowering, source: str, env: dict[str, Any]) -> Emitted:
    k = low.kernel
    require_codegen(low.target, k)
    consts = {
        n: v for n, v in k.consts if isinstance(v, int) and not isinstance(v, bool)
    }
    comptime = {s: int(env[s]) for s in sorted(comptime_symbols(low))}
    runtime = tuple(s for s in k.shape_syms if s not in comptime)
    scalars = tuple(p.name for p in k.params if p.kind is ir.ParamKind.SCALAR)
    names = Names(Mangler(k.name), consts, comptime, runtime, scalars, low.split.blocks)
    host = names.m.claim("host", "", host_prefix(k.name), ("global",), HOST_FORMS)
    prefix = names.m.claim("prefix", "", k.name.upper(), ("global",), PREFIX_FORMS)
    flags, ws, ws_bytes, ws_offsets = _crossings(low, names)
    _claim_members(low, names)
    first = low.first_phase()
    cube, vector = _classes(first, names, flags, ws, host)
    vector = with_gm(vector, first, names, ws)
    cube = None if cube is None else with_gm(cube, first, names, ws)
    post = None if low.post is None else post_class(low.post, names, host)
    view = KernelView(
        kernel=k.name,
        source=source,
        version=__version__,
        kernel_type=low.plan.kernel_type,
        target=low.target.name,
        constants=_constants(k, consts, comptime, low, ws_offsets, ws_bytes, names),
        flags=tuple(Flag(flags[v], i, why) for v, i, why in flag_ids(low)),
        tiling_name=host + "Tiling",
        tiling=_tiling_fields(k, runtime, names),
        params=_gm_params(k, comptime, consts, runtime, names, host),
        cube=cube,
        vector=vector,
        workspace_bytes="WORKSPACE_BYTES_PER_CORE",
        block_dim="",
        tasks=names.expr(low.plan.tasks),
        post=post,
        post_sync=drained_sync_all(low.plan.kernel_type) if post else (),
        sync_all=bool(low.plan.atomics) or post is not None,
    )
    return Emitted(view, names, host, prefix, comptime, runtime, scalars, ws_bytes)


def host_prefix(kernel: str) -> str:
    """CamelCase kernel name for host-side helpers: document_mask -> DocumentMask."""
    return "".join(p[:1].upper() + p[1:] for p in kernel.split("_") if p)


HOST_FORMS = (
    "{}Tiling",
    "{}Cube",
    "{}Vector",
    "{}CeilDiv",
    "{}Tasks",
    "{}AtomicBytes",
    "{}Post",
)
PREFIX_FORMS = ("{}_TILING_H", "{}_WORKSPACE_BYTES_PER_CORE", "{}_AIC_CORES")
"""Global identifiers made from the kernel name (kernel.cpp and tiling.h)."""


def _claim_members(low: Lowering, names: Names) -> None:
    """Name members and parameters before locals, in plan order, then every IR name in
    program order: which of two clashing names keeps its spelling is fixed."""
    for p in low.kernel.params:
        if isinstance(p.type, TensorType):
            names.param(p.name)
    for b in low.plan.buffers:
        names.buf(b.name)
    for v in low.grid.vars:
        names.local(v)
    for name in _ir_names(low.kernel.body):
        names.local(name)
    if low.post is not None:
        for name in _ir_names(low.post.kernel.body):
            names.local(name)


def _ir_names(body: tuple[ir.Op, ...]) -> list[str]:
    out: list[str] = []
    for op in body:
        if isinstance(op, ir.Grid):
            out += list(op.vars)
        if isinstance(op, ir.For):
            out += [op.var] + [v.name for v in op.iter_args]
        if isinstance(op, (ir.LoadScalar, ir.ScalarDef)):
            out.append(op.name)
        out += [r.name for r in op.results()]
        if isinstance(op, (ir.Grid, ir.For)):
            out += _ir_names(op.body)
    return out


def _crossings(
    low: Lowering, names: Names
) -> tuple[dict[str, str], dict[str, str], int, list[Constant]]:
    """Cross-core flags and GM workspaces (per exchanged value) and their offsets."""
    flags = {v: names.flag(v) for v, _ in flag_list(low)}
    ws: dict[str, str] = {}
    offsets: list[Constant] = []
    total = 0
    for w, v in zip(
        low.plan.workspaces, list(low.sides.to_vector) + list(low.sides.to_cube)
    ):
        ws[v.name], off = names.workspace(v.name, w.name)
        offsets.append(Constant(off, "int64_t", str(total), f"bytes: {w.role}"))
        nbytes = _int(w.bytes(), low)
        total += (nbytes + 511) // 512 * 512
    return flags, ws, total, offsets


def _int(e: Expr, low: Lowering) -> int:
    values = dict(low.env)
    return int(evaluate(sympy.sympify(e), values))


def _classes(low: Lowering, names: Names, flags: dict[str, str], ws: dict[str, str], host: str):  # type: ignore[no-untyped-def]
    loop = task_loop(low.grid, names, int(low.target.rate("l2_bytes")))
    header = loop.header
    cube = CubeEmitter(low, names, flags, ws, header, loop.cube, loop.cube_prologue)
    vec = VectorEmitter(
        low, names, flags, ws, header, loop.vector, loop.vector_prologue
    )
    aiv_only = low.plan.kernel_type == "AIV_ONLY"  # no dot: no AIC class, AIV_MODE
    return _phased(low, None if aiv_only else cube.core_class(host + "Cube"), vec, host)


def _phased(low: Lowering, cube: Any, vec: VectorEmitter, host: str):  # type: ignore[no-untyped-def]
    """The classes with the zero and cast phases of ``atomic_add`` outputs around the
    grid (``atomic_io``, ``phases``): every core takes part in both SyncAlls."""
    vector = vec.core_class(host + "Vector")
    sums = low.plan.atomics
    if not sums:
        return cube, vector
    kt = low.plan.kernel_type
    cast = any(not a.direct for a in sums)
    after = atomic_io.cast_phase(vec) if cast else None
    vector = with_phases(vector, kt, atomic_io.zero_phase(vec), after)
    if cube is not None:
        cube = with_phases(cube, kt, (), () if cast else None)
    return cube, vector


def _constants(
    k: ir.Kernel,
    consts: dict[str, int],
    comptime: dict[str, int],
    low: Lowering,
    ws_offsets: list[Constant],
    ws_bytes: int,
    names: Names,
) -> tuple[Constant, ...]:
    out = [
        Constant(names.const(n), "int64_t", str(v), f"tile constant `{n}`")
        for n, v in sorted(consts.items())
    ]
    out += [
        Constant(
            names.const(n),
            "int64_t",
            str(v),
            f"shape symbol `{n}`, fixed at compile time",
        )
        for n, v in comptime.items()
    ]
    out += [_rows_constant(low, b, consts, names) for b in low.split.blocks]
    out += ws_offsets
    out.append(
        Constant(
            "WORKSPACE_BYTES_PER_CORE",
            "int64_t",
            str(ws_bytes),
            "GM workspace bytes per AI core",
        )
    )
    return tuple(out)


def _rows_constant(
    low: Lowering, block: Expr, consts: dict[str, int], names: Names
) -> Constant:
    """ROWS (or ROWS_<BLOCK>): the rows of a tile of row block ``block`` one AIV owns."""
    half = (
        f"{names.const(str(block))} / 2"
        if str(block) in consts
        else str(int(evaluate(block, low.env)) // 2)
    )
    what = (
        "rows of a Q block each vector core owns"
        if block == low.split.primary
        else f"rows of a `{block}` row block each vector core owns"
    )
    return Constant(names.rows_const(block), "int64_t", half, what)


def _tiling_fields(
    k: ir.Kernel, runtime: tuple[str, ...], names: Names
) -> tuple[TilingField, ...]:
    """Members of the tiling struct; ``key`` is the name shape.txt gives them by."""
    out = [
        TilingField(names.field(s), "int64_t", f"shape symbol `{s}`", s)
        for s in runtime
    ]
    for p in k.params:
        if p.kind is ir.ParamKind.SCALAR:
            assert isinstance(p.type, ScalarType)
            field = names.field(p.name)
            what = f"runtime scalar `{p.name}`"
            out.append(TilingField(field, ctype(p.type.dtype), what, p.name))
    if sum(4 if f.ctype == "float" else 8 for f in out) % 8:
        pad = names.m.claim("padding", "", "reserved", ("tiling",))
        out.append(TilingField(pad, "float", "padding to a multiple of 8 bytes", ""))
    return tuple(out)


def _gm_params(
    k: ir.Kernel,
    comptime: dict[str, int],
    consts: dict[str, int],
    runtime: tuple[str, ...],
    names: Names,
    host: str,
) -> tuple[GmParam, ...]:
    """Tensor parameters, with element counts as host C++ over tiling fields ``t.X``."""
    from fadsl.ir.expr import isym
    from fadsl.ir.expr_print import to_cxx

    fixed = {isym(n): v for n, v in {**consts, **comptime}.items()}
    host_ceil = host + "CeilDiv"  # tiling.h, host side
    fields = {s: f"t.{names.field(s)}" for s in runtime}
    out = []
    for p in k.params:
        if not isinstance(p.type, TensorType):
            continue
        count = sympy.Mul(*p.type.shape).subs(fixed)
        n = to_cxx(count, fields).replace("fadsl::CeilDiv<int64_t>", host_ceil)
        ct = ctype(p.type.dtype)
        start = p.alias or ""  # an in-place output starts as its input
        out.append(GmParam(names.param(p.name), ct, n, p.kind.value, p.name, start))
    return tuple(out)


def with_gm(cls: Any, low: Lowering, names: Names, ws: dict[str, str]) -> Any:
    """Add GlobalTensor members for every tensor parameter and workspace, and Init code."""
    from dataclasses import replace

    from fadsl.backends.ascendc.view import Member

    members = list(cls.members)
    init: list[Stmt] = [Line("tiling_ = tiling;")]
    for p in low.kernel.params:
        if not isinstance(p.type, TensorType):
            continue
        ct = ctype(p.type.dtype)
        gm, arg = names.gm(p.name), names.param(p.name)
        what = f"{p.kind.value} `{p.name}` {p.type}"
        members.append(Member(f"AscendC::GlobalTensor<{ct}> {gm};", "", what))
        init.append(
            Line(
                f"{gm}.SetGlobalBuffer((__gm__ {ct}*){arg}, "
                f"{names.count(p.type.shape)});"
            )
        )
    group = (
        "AscendC::GetBlockIdx()"
        if cls.role == "cube"
        else "AscendC::GetBlockIdx() / AscendC::GetSubBlockNum()"
    )
    if low.plan.workspaces:
        init.append(Line(f"const int64_t group = {group};"))
    vals = list(low.sides.to_vector) + list(low.sides.to_cube)
    for w, v in zip(low.plan.workspaces, vals):
        ct = ctype(w.dtype)
        name, offset = names.workspace(v.name, w.name)
        members.append(
            Member(
                f"AscendC::GlobalTensor<{ct}> {name};", "", f"GM workspace: {w.role}"
            )
        )
        count = names.count(w.shape)
        if w.slots > 1:
            count = f"{w.slots} * {count}"
        init.append(
            Line(
                f"{name}.SetGlobalBuffer((__gm__ {ct}*)(workspace + group * WORKSPACE_BYTES_PER_CORE"
                f" + {offset}), {count});"
            )
        )
    if cls.role == "vector":
        sums, sum_init = atomic_io.members(low, names)
        members += sums
        init += sum_init
    init += [Line(m.init) for m in cls.members if m.init]
    return replace(cls, members=tuple(members), init=tuple(init))
