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
from fadsl.backends.ascendc.cube import CubeEmitter
from fadsl.backends.ascendc.names import Names, camel, const_name, ctype
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
from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.expr import Expr, evaluate
from fadsl.ir.types import ScalarType, TensorType
from fadsl.passes.plan_buffers import Lowering

MAX_FLAGS = 16


@dataclass(frozen=True)
class Emitted:
    view: KernelView
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
    """Refuse, before any work, a chip the backend does not lower to."""
    if not target.split or not target.codegen:
        raise BackendError(
            f"code generation for {target.name} is not supported yet: the Ascend C "
            "backend lowers to split (AIC + 2 AIV) chips such as ascend910b1-b4 and A3",
            kernel.loc,
            hint="fadsl check still proves buffer fit for this chip",
        )


def emit(low: Lowering, source: str, env: dict[str, Any]) -> Emitted:
    k = low.kernel
    require_codegen(low.target, k)
    consts = {
        n: v for n, v in k.consts if isinstance(v, int) and not isinstance(v, bool)
    }
    comptime = {s: int(env[s]) for s in sorted(comptime_symbols(low))}
    runtime = tuple(s for s in k.shape_syms if s not in comptime)
    scalars = tuple(p.name for p in k.params if p.kind is ir.ParamKind.SCALAR)
    names = Names(consts, comptime, runtime, scalars, low.rows)
    flags, ws, ws_bytes, ws_offsets = _crossings(low, names)
    cube, vector = _classes(low, names, flags, ws)
    cube, vector = with_gm(cube, low, names, ws), with_gm(vector, low, names, ws)
    view = KernelView(
        kernel=k.name,
        source=source,
        version=__version__,
        kernel_type=low.plan.kernel_type,
        target=low.target.name,
        constants=_constants(k, consts, comptime, low, ws_offsets, ws_bytes),
        flags=tuple(
            Flag(f"FLAG_{const_name(camel(v))}", i, why)
            for i, (v, why) in enumerate(_flag_list(low))
        ),
        tiling_name=_tiling_name(k.name),
        tiling=_tiling_fields(k, runtime),
        params=_gm_params(k, comptime, consts, runtime),
        cube=cube,
        vector=vector,
        workspace_bytes="WORKSPACE_BYTES_PER_CORE",
        block_dim="",
        tasks=names.expr(low.plan.tasks),
    )
    return Emitted(view, comptime, runtime, scalars, ws_bytes)


def host_prefix(kernel: str) -> str:
    """CamelCase kernel name for host-side helpers: document_mask -> DocumentMask."""
    return "".join(p[:1].upper() + p[1:] for p in kernel.split("_") if p)


def _tiling_name(kernel: str) -> str:
    return host_prefix(kernel) + "Tiling"


def _flag_list(low: Lowering) -> list[tuple[str, str]]:
    out = [
        (v.name, f"cube -> vector: %{v.name} is in its workspace")
        for v in low.sides.to_vector
    ]
    out += [
        (v.name, f"vector -> cube: %{v.name} is in its workspace")
        for v in low.sides.to_cube
    ]
    if len(out) > MAX_FLAGS:
        raise BackendError(
            f"{len(out)} cube/vector exchanges exceed the {MAX_FLAGS} "
            "cross-core flags",
            low.kernel.loc,
        )
    return out


def _crossings(
    low: Lowering, names: Names
) -> tuple[dict[str, str], dict[str, str], int, dict[str, int]]:
    flags = {v: f"FLAG_{const_name(camel(v))}" for v, _ in _flag_list(low)}
    ws: dict[str, str] = {}
    offsets: dict[str, int] = {}
    total = 0
    env = {s: v for s, v in names.symbols.items()}
    for w, v in zip(
        low.plan.workspaces, list(low.sides.to_vector) + list(low.sides.to_cube)
    ):
        ws[v.name] = camel(w.name) + "Gm"
        offsets[w.name] = total
        nbytes = _int(w.bytes(), low)
        total += (nbytes + 511) // 512 * 512
    del env
    return flags, ws, total, offsets


def _int(e: Expr, low: Lowering) -> int:
    values = dict(low.env)
    return int(evaluate(sympy.sympify(e), values))


def _classes(low: Lowering, names: Names, flags: dict[str, str], ws: dict[str, str]):  # type: ignore[no-untyped-def]
    grid = low.grid
    for v in grid.vars:
        names.local(v)
    ext = [names.expr(e) for e in grid.extents]
    tasks = " * ".join(f"({e})" for e in ext) if ext else "1"
    decomp = _decompose(grid.vars, ext)
    cube_loop = (
        "for (int64_t task = AscendC::GetBlockIdx(); task < tasks; "
        "task += AscendC::GetBlockNum())"
    )
    vec_loop = (
        "for (int64_t task = AscendC::GetBlockIdx() / AscendC::GetSubBlockNum(); "
        "task < tasks; task += AscendC::GetBlockNum())"
    )
    header: list[Stmt] = [Line(f"const int64_t tasks = {tasks};")]
    cube = CubeEmitter(low, names, flags, ws, header, cube_loop, decomp)
    vec = VectorEmitter(
        low, names, flags, ws, header, vec_loop, _decompose(grid.vars, ext)
    )
    base = "".join(p[:1].upper() + p[1:] for p in low.kernel.name.split("_") if p)
    return cube.core_class(base + "Cube"), vec.core_class(base + "Vector")


def _decompose(vars_: tuple[str, ...], ext: list[str]) -> list[Stmt]:
    out: list[Stmt] = []
    div = "task"
    for v, e in zip(reversed(vars_), reversed(ext)):
        out.append(Line(f"const int64_t {camel(v)} = {div} % ({e});"))
        div = f"{div} / ({e})"
    return list(reversed(out))


def _constants(
    k: ir.Kernel,
    consts: dict[str, int],
    comptime: dict[str, int],
    low: Lowering,
    ws_offsets: dict[str, int],
    ws_bytes: int,
) -> tuple[Constant, ...]:
    out = [
        Constant(const_name(n), "int64_t", str(v), f"tile constant `{n}`")
        for n, v in sorted(consts.items())
    ]
    out += [
        Constant(
            const_name(n),
            "int64_t",
            str(v),
            f"shape symbol `{n}`, fixed at compile time",
        )
        for n, v in comptime.items()
    ]
    if low.rows is not None:
        out.append(
            Constant(
                "ROWS",
                "int64_t",
                (
                    "BLOCK_Q / 2"
                    if str(low.rows) == "block_q"
                    else str(int(evaluate(low.rows, low.env)) // 2)
                ),
                "rows of a Q block each vector core owns",
            )
        )
    for w in low.plan.workspaces:
        out.append(
            Constant(
                f"{const_name(camel(w.name))}_OFFSET",
                "int64_t",
                str(ws_offsets[w.name]),
                f"bytes: {w.role}",
            )
        )
    out.append(
        Constant(
            "WORKSPACE_BYTES_PER_CORE",
            "int64_t",
            str(ws_bytes),
            "GM workspace bytes per AI core",
        )
    )
    return tuple(out)


def _tiling_fields(k: ir.Kernel, runtime: tuple[str, ...]) -> tuple[TilingField, ...]:
    out = [TilingField(s, "int64_t", f"shape symbol `{s}`") for s in runtime]
    for p in k.params:
        if p.kind is ir.ParamKind.SCALAR:
            assert isinstance(p.type, ScalarType)
            out.append(
                TilingField(p.name, ctype(p.type.dtype), f"runtime scalar `{p.name}`")
            )
    if sum(4 if f.ctype == "float" else 8 for f in out) % 8:
        out.append(TilingField("reserved", "float", "padding to a multiple of 8 bytes"))
    return tuple(out)


def _gm_params(
    k: ir.Kernel,
    comptime: dict[str, int],
    consts: dict[str, int],
    runtime: tuple[str, ...],
) -> tuple[GmParam, ...]:
    """Tensor parameters, with element counts as host C++ over tiling fields ``t.X``."""
    from fadsl.ir.expr import isym, to_cxx

    fixed = {isym(n): v for n, v in {**consts, **comptime}.items()}
    host_ceil = host_prefix(k.name) + "CeilDiv"  # tiling.h, host side
    out = []
    for p in k.params:
        if not isinstance(p.type, TensorType):
            continue
        count = sympy.Mul(*p.type.shape).subs(fixed)
        n = to_cxx(count, {s: f"t.{s}" for s in runtime})
        n = n.replace("fadsl::CeilDiv<int64_t>", host_ceil)
        out.append(GmParam(p.name, ctype(p.type.dtype), n, p.kind.value))
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
        members.append(
            Member(
                f"AscendC::GlobalTensor<{ct}> {p.name}Gm;",
                "",
                f"{p.kind.value} `{p.name}` {p.type}",
            )
        )
        init.append(
            Line(
                f"{p.name}Gm.SetGlobalBuffer((__gm__ {ct}*){p.name}, "
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
        name = ws[v.name]
        members.append(
            Member(
                f"AscendC::GlobalTensor<{ct}> {name};", "", f"GM workspace: {w.role}"
            )
        )
        init.append(
            Line(
                f"{name}.SetGlobalBuffer((__gm__ {ct}*)(workspace + group * WORKSPACE_BYTES_PER_CORE"
                f" + {const_name(camel(w.name))}_OFFSET), {names.count(w.shape)});"
            )
        )
    init += [Line(m.init) for m in cls.members if m.init]
    return replace(cls, members=tuple(members), init=tuple(init))
