"""The CANN custom-operator package that ``fadsl compile`` writes under ``op/``.

Laid out as CANN's msopgen lays out a custom operator project and as the operators of
ops-transformer are split (``op_host/`` with the OpDef, tiling function and shape
inference; ``op_kernel/`` with the kernel entry that reads its tiling through
``GET_TILING_DATA``), so ``aclnn<Op>`` can be called from C++ or PyTorch. The host
tiling computes exactly what the kernel-launch project's ``main.cpp`` computes
(``tests/backends/ascendc/test_op_package.py`` compiles both and compares).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy

from fadsl.ir import nodes as ir
from fadsl.ir.dims import linear_source
from fadsl.ir.expr import isym
from fadsl.ir.expr_print import to_cxx
from fadsl.ir.types import DType, ScalarType, TensorType

GE_DTYPE = {
    DType.F16: "ge::DT_FLOAT16",
    DType.BF16: "ge::DT_BF16",
    DType.F32: "ge::DT_FLOAT",
    DType.I32: "ge::DT_INT32",
    DType.I8: "ge::DT_INT8",
    DType.U8: "ge::DT_UINT8",
}
SHORT_SOC = (("ascend910b", "ascend910b"), ("ascend910_93", "ascend910_93"))
"""SKU prefix -> the compute-unit name OpDef's AddConfig and the package build take
(the map CANN's op build applies: asc-devkit cmake/asc/fwk_modules/util/opdesc_parser.py)."""
RESERVED = frozenset(
    "and as assert break class continue def del elif else except finally for from "
    "global if import in is lambda not or pass raise return try while with yield "
    "False None True nonlocal arg options bisheng bisheng_path tikcpp_path impl_mode "
    "src op_type code_channel op_info compile_op result isinstance attr shutil os "
    "soc_version soc_short origin_func_name get_code_channel get_kernel_source".split()
)
"""Names the op build's generated Python refuses for an input, output or attribute
(a subset of CONFLICT_KEYWORDS in the same file); fadsl appends ``_`` to such a name."""
GM_ALIGN = 512
"""Bytes each scratch region of the workspace is aligned to."""


@dataclass(frozen=True)
class OpIo:
    """One OpDef input or output: a tensor parameter of the kernel."""

    name: str
    """OpDef (and aclnn) name"""
    arg: str
    """the kernel's C++ parameter name"""
    dtype: str
    dims: tuple[str, ...]
    """each dim as C++ over ``s.<field>`` (the shape symbols)"""


@dataclass(frozen=True)
class OpSym:
    """How the host reads one runtime shape symbol: from an input dim or an attribute."""

    field: str
    key: str
    value: str
    """C++ over ``in[i]`` (input shapes) or ``attrs``"""
    divisor: int
    """the input dim must be a multiple of this (1: any)"""
    dim: str
    """C++ of the input dim it comes from (empty for an attribute)"""


@dataclass(frozen=True)
class OpAttr:
    name: str
    field: str
    kind: str
    """Float or Int (OpDef attribute kind)"""
    ctype: str
    default: str


@dataclass(frozen=True)
class OpScratch:
    arg: str
    offset: str
    """C++ byte offset in the user workspace, over ``s.`` (host) or ``t.`` (kernel)"""


def op_type(kernel: str) -> str:
    """The operator type: the kernel name in CamelCase (document_mask -> DocumentMask)."""
    return "".join(p[:1].upper() + p[1:] for p in kernel.split("_") if p)


def op_file(kind: str) -> str:
    """The file stem and kernel function CANN's op build derives from an operator type."""
    out = ""
    for i, ch in enumerate(kind):
        out += ("_" if ch.isupper() and i else "") + ch.lower()
    return out


def compute_unit(target: str) -> str:
    for prefix, unit in SHORT_SOC:
        if target.startswith(prefix):
            return unit
    return target


def op_context(binding: Any, em: Any, base: dict[str, Any]) -> dict[str, Any]:
    """What the op/ templates see, on top of the kernel project's ``base`` context."""
    k: ir.Kernel = binding.kernel
    fields = {f.key: f.name for f in em.view.tiling if f.key}
    fixed = _fixed(binding, em)
    sym = {s: f"s.{fields[s]}" for s in em.runtime_syms}
    inputs = _io(k, ir.ParamKind.IN, fixed, sym, em)
    outputs = _io(k, ir.ParamKind.OUT, fixed, sym, em)
    attrs = _attrs(k, binding, fields)
    syms = _symbols(k, em, fixed, fields, len(attrs))
    attrs += [
        OpAttr(_opname(s.key), s.field, "Int", "int64_t", "") for s in syms if not s.dim
    ]
    scratch, scratch_bytes = _scratch(k, em, fixed, fields)
    kind = op_type(k.name)
    checks = _checks(k, fixed, sym, syms)
    tasks = base["host_tasks"].replace("t.", "s.")
    tasks = tasks.replace(base["host"] + "CeilDiv", "CeilDiv")
    atomic_bytes = base.get("host_atomic_bytes", "").replace("t.", "s.")
    atomic_bytes = atomic_bytes.replace(base["host"] + "CeilDiv", "CeilDiv")
    text = repr(checks) + tasks + scratch_bytes + atomic_bytes
    entry = ("entry",)
    claim = em.names.m.claim
    return {
        **base,
        "gm_align": GM_ALIGN,
        "fixed_text": ", ".join(f"{n}={v}" for n, v in em.comptime.items())
        or "no fixed dims",
        "sets_text": ", ".join(f"{n}={v}" for n, v in k.consts) or "none",
        "io_dims": {
            _opname(p.name): ", ".join(str(d) for d in p.type.shape)
            for p in k.params
            if isinstance(p.type, TensorType)
        },
        "op": {
            "type": kind,
            "file": op_file(kind),
            "unit": compute_unit(binding_target(base)),
            "inputs": inputs,
            "outputs": outputs,
            "io": inputs + outputs,
            "attrs": attrs,
            "syms": syms,
            "checks": checks,
            "attr_syms": any(not s.dim for s in syms),
            "uses_ceil": "CeilDiv(" in text,
            "scratch": scratch,
            "scratch_bytes": scratch_bytes,
            "host_scratch": scratch_bytes.replace("t.", "s."),
            "tasks": tasks,
            "atomic_bytes": atomic_bytes,
            "tiling_class": em.host + "TilingData",
            "struct_header": f"{k.name}_tiling_struct.h",
            "data": claim("op", "tilingData", "tilingData", entry),
            "user": claim("op", "userWorkspace", "userWorkspace", entry),
            "handover": claim("op", "coreWorkspace", "coreWorkspace", entry),
        },
    }


def binding_target(base: dict[str, Any]) -> str:
    return str(base["soc"])


def _fixed(binding: Any, em: Any) -> dict[sympy.Symbol, int]:
    fixed = {isym(n): v for n, v in em.comptime.items()}
    fixed.update(
        {
            isym(n): v
            for n, v in binding.kernel.consts
            if isinstance(v, int) and not isinstance(v, bool)
        }
    )
    return fixed


def _cxx(e: Any, names: dict[str, str]) -> str:
    text = to_cxx(sympy.sympify(e), names)
    return (
        text.replace("fadsl::CeilDiv<int64_t>", "CeilDiv")
        .replace("fadsl::Min<int64_t>", "std::min<int64_t>")
        .replace("fadsl::Max<int64_t>", "std::max<int64_t>")
    )


def _opname(name: str) -> str:
    return name + "_" if name in RESERVED else name


def _io(
    k: ir.Kernel, kind: ir.ParamKind, fixed: dict, sym: dict[str, str], em: Any
) -> list[OpIo]:
    out = []
    for p in k.params:
        if p.kind is kind and isinstance(p.type, TensorType):
            dims = tuple(_cxx(sympy.sympify(d).subs(fixed), sym) for d in p.type.shape)
            arg = em.names.param(p.name)
            out.append(OpIo(_opname(p.name), arg, GE_DTYPE[p.type.dtype], dims))
    return out


def _attrs(k: ir.Kernel, binding: Any, fields: dict[str, str]) -> list[OpAttr]:
    out = []
    for p in k.params:
        if p.kind is ir.ParamKind.SCALAR:
            assert isinstance(p.type, ScalarType)
            value = binding.scalars[p.name]
            if p.type.dtype is DType.F32:
                text = f"{float(value)!r}f"
                out.append(
                    OpAttr(_opname(p.name), fields[p.name], "Float", "float", text)
                )
            else:
                text = str(int(value))
                out.append(
                    OpAttr(_opname(p.name), fields[p.name], "Int", "int64_t", text)
                )
    return out


def _symbols(
    k: ir.Kernel, em: Any, fixed: dict, fields: dict[str, str], attrs: int
) -> list[OpSym]:
    """Every runtime shape symbol from the first input dim that is ``a * sym + b``;
    one that no input dim gives is an Int attribute of the operator."""
    inputs = [
        p
        for p in k.params
        if p.kind is ir.ParamKind.IN and isinstance(p.type, TensorType)
    ]
    out = []
    extra = attrs
    for s in em.runtime_syms:
        found = _from_input(isym(s), inputs, fixed)
        if found is None:
            value = f"*attrs->GetAttrPointer<int64_t>({extra})"
            out.append(OpSym(fields[s], s, value, 1, ""))
            extra += 1
            continue
        i, j, a, b = found
        dim = f"in[{i}]->GetDim({j})"
        value = dim if b == 0 else f"({dim} - {b})"
        value = value if a == 1 else f"{value} / {a}"
        out.append(OpSym(fields[s], s, value, a, dim if b == 0 else f"({dim} - {b})"))
    return out


def _from_input(
    s: sympy.Symbol, inputs: list, fixed: dict
) -> tuple[int, int, int, int] | None:
    return linear_source(s, [p.type.shape for p in inputs], fixed)


def _checks(
    k: ir.Kernel, fixed: dict, sym: dict[str, str], syms: list[OpSym]
) -> list[tuple[int, int, list[tuple[int, str]]]]:
    """(input, rank, [(dim, C++)]) for every input: each dim it must have, but the
    ones a symbol was read from as they are."""
    read = {s.value for s in syms}
    out = []
    inputs = [
        p
        for p in k.params
        if p.kind is ir.ParamKind.IN and isinstance(p.type, TensorType)
    ]
    for i, p in enumerate(inputs):
        dims = [
            (j, _cxx(sympy.sympify(d).subs(fixed), sym))
            for j, d in enumerate(p.type.shape)
            if f"in[{i}]->GetDim({j})" not in read
        ]
        out.append((i, len(p.type.shape), dims))
    return out


def _scratch(
    k: ir.Kernel, em: Any, fixed: dict, fields: dict[str, str]
) -> tuple[list[OpScratch], str]:
    """The kernel's Scratch tensors as aligned regions at the start of the user workspace
    (the kernel-launch project allocates each on its own); their total bytes."""
    tname = {s: f"t.{fields[s]}" for s in em.runtime_syms}
    out = []
    offset = "0"
    for p in k.params:
        if p.kind is ir.ParamKind.SCRATCH and isinstance(p.type, TensorType):
            count = sympy.Mul(*p.type.shape).subs(fixed)
            size = f"{_cxx(count, tname)} * {p.type.dtype.itemsize}"
            out.append(OpScratch(em.names.param(p.name), offset))
            offset = (
                f"{offset} + AlignGm({size})" if offset != "0" else f"AlignGm({size})"
            )
    return out, offset


OP_CXX = {
    "op_host/{file}.cpp": "op/op_host/op.cpp.j2",
    "op_host/{file}_tiling.h": "op/op_host/tiling.h.j2",
    "op_kernel/{file}.cpp": "op/op_kernel/kernel.cpp.j2",
}
OP_OTHER = {
    "CMakeLists.txt": "op/CMakeLists.txt.j2",
    "op_host/CMakeLists.txt": "op/op_host/CMakeLists.txt.j2",
    "op_kernel/CMakeLists.txt": "op/op_kernel/CMakeLists.txt.j2",
    "build.sh": "op/build.sh.j2",
    "README.md": "op/README.md.j2",
}


def op_sources(
    binding: Any, em: Any, base: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The context of ``op/`` and its C++ files (paths relative to the project),
    rendered but not formatted: the project formats them with its own files, in one
    clang-format run."""
    from fadsl.backends.ascendc.render import environment

    context = op_context(binding, em, base)
    stem = context["op"]["file"]
    env = environment()
    cxx = {
        "op/" + path.format(file=stem): env.get_template(t).render(**context)
        for path, t in OP_CXX.items()
    }
    return context, cxx


def op_other_files(
    binding: Any, context: dict[str, Any], project: dict[str, bytes]
) -> dict[str, bytes]:
    """The rest of ``op/``: build files, README, and the two headers op_kernel/ copies
    from the kernel project (``project``)."""
    from fadsl.backends.ascendc.render import environment

    env = environment()
    out = {
        "op/" + path: env.get_template(t).render(**context).encode()
        for path, t in OP_OTHER.items()
    }
    struct = context["op"]["struct_header"]
    out[f"op/op_kernel/{struct}"] = project[f"{binding.kernel.name}_tiling.h"]
    out["op/op_kernel/fadsl_tile.h"] = project["include/fadsl_tile.h"]
    return out
