"""One CANN op package for several configurations of a kernel (``fadsl compile --configs``).

Each configuration (a dtype, shape symbols fixed at compile time such as ``D``, tile
constants) is compiled as ``fadsl compile`` compiles one (``key<N>/``, a whole project);
``op/`` then holds one operator for all of them, as CANN operators with tiling keys are
laid out (ops-transformer's kernels: one ``extern "C"`` entry that branches on
``TILING_KEY_IS(key)``; the host tiling function picks the key with
``context->SetTilingKey``; asc-devkit impl/basic_api/utils/kernel_utils_macros.h defines
``TILING_KEY_IS(k)`` as ``g_tilingKey == (k)``):

- ``op_kernel/<op>.cpp``: each configuration's kernel code in ``namespace key<N>``, its
  tiling struct header inlined there, and one entry that reads the tiling data once
  (``GET_TILING_DATA``) and runs ``key<N>::Run`` under ``TILING_KEY_IS(N)``;
- ``op_host/<op>.cpp``: each configuration's tiling and shape functions in ``namespace
  key<N>``, an OpDef whose inputs and outputs list every configuration's dtypes, and a
  tiling function that picks the key whose dtype and fixed dims the inputs have;
- ``CMakePresets.json`` as msOpGen writes it (asc-devkit docs/zh/guide/编程指南/高级编程/
  Aclnn算子工程化开发/算子包编译/算子工程编译.md).

The configurations must share the tiling fields (the registered tiling class is one per
operator). An attribute whose default differs between configurations (``scale``, which
defaults to ``D ** -0.5``, in a package of two head dims) is REQUIRED in the shared OpDef:
one default cannot be right for every key, and GE hands the tiling function the default
when the caller leaves the attribute out, so an OPTIONAL one would be wrong silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fadsl.errors import InternalError


@dataclass(frozen=True)
class KeyedProject:
    """One configuration: its tiling key, its text (``dtype=bf16,D=64``), its files."""

    key: int
    text: str
    files: dict[str, bytes]


def multi_package(
    kernel: str, op_file: str, keyed: list[KeyedProject]
) -> dict[str, bytes]:
    """The files of ``op/`` (paths relative to the output folder)."""
    from fadsl.backends.ascendc.render import environment

    first = keyed[0].files
    _same(keyed, f"op/op_host/{op_file}_tiling.h", "tiling fields")
    _same(keyed, "include/fadsl_tile.h", "fadsl_tile.h")
    out = {
        p: b for p, b in first.items() if p.startswith("op/") and "op_kernel/" not in p
    }
    out.pop(f"op/op_host/{op_file}.cpp")
    out["op/op_kernel/CMakeLists.txt"] = first["op/op_kernel/CMakeLists.txt"]
    out["op/op_kernel/fadsl_tile.h"] = first["include/fadsl_tile.h"]
    kernels = [_kernel_part(k, op_file) for k in keyed]
    hosts = [_host_part(k, op_file) for k in keyed]
    host = _text(first[f"op/op_host/{op_file}.cpp"])
    env = environment()
    context = {
        "kernel": kernel,
        "file": op_file,
        "keys": keyed,
        "kernels": kernels,
        "hosts": hosts,
        "entry": _entry_head(_text(first[f"op/op_kernel/{op_file}.cpp"]), op_file),
        "head": host[: host.index("namespace {")],
        "opdef": _opdef(
            host, [_text(k.files[f"op/op_host/{op_file}.cpp"]) for k in keyed]
        ),
        "dtypes": [
            _input_dtype(_text(k.files[f"op/op_host/{op_file}.cpp"])) for k in keyed
        ],
        "unit": _unit(host),
        "first_readme": _text(first["op/README.md"]),
    }
    from fadsl.backends.ascendc.render import format_cxx

    rendered = {
        path.format(file=op_file): env.get_template(t).render(**context)
        for path, t in TEMPLATES.items()
    }
    cxx = format_cxx({p: t for p, t in rendered.items() if p.endswith(".cpp")})
    rendered.update(cxx)
    out.update({p: t.encode() for p, t in rendered.items()})
    return out


TEMPLATES = {
    "op/op_kernel/{file}.cpp": "op_multi/kernel.cpp.j2",
    "op/op_host/{file}.cpp": "op_multi/op_host.cpp.j2",
    "op/CMakePresets.json": "op_multi/CMakePresets.json.j2",
    "op/README.md": "op_multi/README.md.j2",
}


def _text(b: bytes) -> str:
    return b.decode()


def _same(keyed: list[KeyedProject], path: str, what: str) -> None:
    texts = {k.files[path] for k in keyed}
    if len(texts) > 1:
        raise InternalError(  # fixed dims and tile constants are not tiling fields
            f"the configurations do not share their {what} ({path} differs), so one "
            "operator cannot serve them"
        )


def _kernel_part(k: KeyedProject, op_file: str) -> dict[str, str]:
    """Key ``k``'s kernel code: its tiling struct, classes and the body of its entry."""
    src = _text(k.files[f"op/op_kernel/{op_file}.cpp"])
    struct = re.search(r'#include "(\w+_tiling_struct\.h)"\n', src)
    assert struct is not None, "op_kernel includes its tiling struct"
    header = _text(k.files[f"op/op_kernel/{struct.group(1)}"])
    header = re.sub(
        r"^#(?:ifndef|define|endif|include|pragma).*\n", "", header, flags=re.M
    )
    start = src.index('#include "fadsl_tile.h"\n') + len('#include "fadsl_tile.h"\n')
    entry = src.index('extern "C" __global__ __aicore__ void ')
    body = src[src.index("{", entry) + 1 : src.rstrip().rindex("}")]
    body = re.sub(r"\n\s*KERNEL_TASK_TYPE_DEFAULT\([^)]*\);", "", body)
    body = re.sub(r"\n\s*GET_TILING_DATA\((\w+), tiling\);", "", body)
    return {"struct": header.strip(), "classes": src[start:entry].strip(), "body": body}


def _entry_head(src: str, op_file: str) -> dict[str, str]:
    """The entry's parameter list, kernel type and tiling variable (the same for all)."""
    entry = src.index('extern "C" __global__ __aicore__ void ')
    params = src[src.index("(", entry) + 1 : src.index(")", entry)]
    kind = re.search(r"KERNEL_TASK_TYPE_DEFAULT\(([^)]*)\);", src)
    data = re.search(r"GET_TILING_DATA\((\w+), tiling\);", src)
    assert kind is not None and data is not None
    names = [p.split()[-1] for p in params.split(",")]
    return {
        "params": " ".join(params.split()),
        "args": ", ".join(names),
        "kind": kind.group(1),
        "data": data.group(1),
    }


def _host_part(k: KeyedProject, op_file: str) -> str:
    """Key ``k``'s host code: symbols, tiling and inference functions, no OpDef."""
    src = _text(k.files[f"op/op_host/{op_file}.cpp"])
    part = src[src.index("namespace {") : src.index("namespace ops {")]
    for name in ("optiling", "ge"):
        part = part.replace(f"namespace {name} {{\n", "").replace(
            f"}}  // namespace {name}\n", ""
        )
    return part.strip()


def _opdef(host: str, hosts: list[str]) -> str:
    """The first configuration's OpDef, each input and output listing the dtypes of
    every distinct configuration (one column per dtype combination)."""
    block = host[host.index("namespace ops {") :]
    pattern = r'(Input|Output)\("(\w+)"\).*\.DataType\(\{([^}]*)\}\)'
    ios = [(m.group(1), m.group(2)) for m in re.finditer(pattern, block)]
    columns: list[tuple[str, ...]] = []
    for h in hosts:
        row = tuple(_dtype_of(h, kind, name) for kind, name in ios)
        if row not in columns:
            columns.append(row)
    formats = ", ".join(["ge::FORMAT_ND"] * len(columns))
    varying = _varying_defaults(hosts)
    lines = []
    for line in block.splitlines():
        line = _required_if_varying(line, varying)
        hit = re.search(pattern, line)
        if hit is not None:
            i = ios.index((hit.group(1), hit.group(2)))
            listed = ", ".join(c[i] for c in columns)
            line = line.replace(
                f"DataType({{{hit.group(3)}}})", f"DataType({{{listed}}})"
            )
            line = line.replace("Format({ge::FORMAT_ND})", f"Format({{{formats}}})")
        lines.append(line)
    return "\n".join(lines)


_ATTR = r'Attr\("(\w+)"\)\.AttrType\(OPTIONAL\)\.(\w+)\(([^)]*)\)'


def _varying_defaults(hosts: list[str]) -> set[str]:
    """The optional attributes whose default differs between configurations (``scale``
    defaults to ``D ** -0.5``, so a D=64 key and a D=128 key disagree)."""
    seen: dict[str, set[str]] = {}
    for h in hosts:
        for name, _, default in re.findall(_ATTR, h):
            seen.setdefault(name, set()).add(default)
    return {name for name, values in seen.items() if len(values) > 1}


def _required_if_varying(line: str, varying: set[str]) -> str:
    """An attribute with no one default is REQUIRED in the shared OpDef: an OPTIONAL one
    would give every key the first key's default, a wrong value silently."""
    hit = re.search(_ATTR, line)
    if hit is None or hit.group(1) not in varying:
        return line
    name, kind = hit.group(1), hit.group(2)
    return (
        line.replace(hit.group(0), f'Attr("{name}").AttrType(REQUIRED).{kind}()')
        + "  // its default differs between keys: callers pass it"
    )


def _dtype_of(host: str, kind: str, name: str) -> str:
    hit = re.search(rf'{kind}\("{name}"\).*\.DataType\(\{{([^}}]*)\}}\)', host)
    assert hit is not None, (kind, name)
    return hit.group(1)


def _input_dtype(host: str) -> str:
    hit = re.search(r'Input\("\w+"\).*\.DataType\(\{([^}]*)\}\)', host)
    assert hit is not None
    return hit.group(1)


def _unit(host: str) -> str:
    hit = re.search(r'AddConfig\("(\w+)"\)', host)
    assert hit is not None
    return hit.group(1)
