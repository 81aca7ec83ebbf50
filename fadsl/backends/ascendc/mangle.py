"""Every C++ identifier of a generated project, chosen in one place.

User names (values, loop variables, parameters, shape symbols, constants) become C++
identifiers by a readable rule (``kv_idx`` -> ``kvIdx``, ``block_q`` -> ``BLOCK_Q``,
``q`` -> ``q`` and ``qGm``). The rule alone can clash: with another user name
(``%s_1`` and ``%s1`` both read ``s1``), with a C++ keyword (``this``), with an
identifier the generated code writes itself (``t``, ``workspace``, ``mask``) or with
one its headers declare (``AscendC``, ``GM_ADDR``, ``linux``, ``half``). The Mangler
hands out each identifier once per scope and, on a clash, appends ``_`` (then ``_2``,
``_3``, ...): deterministic, and a name without a clash is left as it reads.

Scopes (an identifier must be free in every scope it lives in, and in "global"):

- ``kernel``: the kernel file's anonymous namespace, core classes and their methods
  (constants, flags, members, Init parameters, locals);
- ``entry``: the ``extern "C"`` kernel function (parameters, ``t``, ``op``);
- ``host``: ``main`` of main.cpp (parameters and their ``Bytes``/``Host``/``Device``);
- ``tiling``: the members of the tiling struct.

The kernel name is the one identifier that cannot change (it is the launch symbol and
the file stem): ``check_kernel_symbol`` refuses one that clashes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from functools import lru_cache

from fadsl.errors import Loc, UsageError
from fadsl.ir.kernel_name import CXX_KEYWORDS

HERE = os.path.dirname(os.path.abspath(__file__))
SCOPES = ("kernel", "entry", "host", "tiling")

FIXED: dict[str, frozenset[str]] = {
    # kernel.cpp.j2 and the emitters (emit.py, cube.py, vector*.py, gm.py)
    "kernel": frozenset(
        "Init Process pipe_ tiling_ tiling workspace tasks task taskSlot coreCount taskRound taskPos taskGroup taskInGroup groupSize groupPoints group row0 ROWS "
        "WORKSPACE_BYTES_PER_CORE validRows rowValue r aL0Tile bL0Tile cL0Tile".split()
    ),
    # the entry's parameters and locals, plus the names CANN's ascendc_library stub gives its
    # wrapper around the entry (asc-devkit cmake/asc/legacy_modules/util/extract_host_stub.py)
    "entry": frozenset(
        "workspace tiling t op ffts_addr overflow_status workspace_param workspace_usr".split()
    ),
    # main.cpp.j2: the locals of main()
    "host": frozenset(
        "argc argv dir t tasks blockDim workspaceBytes workspace tiling stream "
        "deviceId cubeCores workspaceDevice tilingDevice".split()
    ),
    "tiling": frozenset(),
}
TEMPS = re.compile(r"^(mask|dup|work|bcast|tmp)\d*$")
"""Temporaries of vector rules (vector_temps.py ``_TEMP_NAMES``), numbered when repeated."""

GLOBAL = frozenset(
    # functions and macros of main.cpp.j2 and data_utils.h.j2; ACL of the NPU host path
    "main ReadShape ReadFile WriteFile CHECK_ACL ACLRT_LAUNCH_KERNEL std "
    # Ascend C names the generated code relies on that the CPU runtime may not declare
    "AscendC GM_ADDR half bfloat16_t pipe_t event_t QuantMode_t g_coreType "
    "block_idx block_num".split()
)
FAMILIES = re.compile(
    r"^(ASCEND_|ACL_|ACLRT_|FADSL_|KERNEL_|ICPU_|EVENT_ID|PIPE_|acl(rt)?[A-Z_])"
)
"""Families of header names (macros, the ACL API) beyond those declared here: a stem of
one gets ``_``, a kernel name of one is refused."""


@lru_cache(maxsize=1)
def _system() -> tuple[frozenset[str], frozenset[str]]:
    """(macros and types, functions) of the system headers: cxx_globals.txt."""
    everywhere: set[str] = set()
    functions: set[str] = set()
    with open(os.path.join(HERE, "cxx_globals.txt"), encoding="utf-8") as f:
        for line in f:
            kind, _, name = line.strip().partition(" ")
            if kind in ("macro", "type"):
                everywhere.add(name)
            elif kind == "func":
                functions.add(name)
    return frozenset(everywhere), frozenset(functions)


@lru_cache(maxsize=1)
def header_names() -> frozenset[str]:
    """Names declared in the CPU runtime's headers and fadsl_tile.h: macros,
    namespaces, types, enumerators, functions and variables (at any depth).

    Scanning them takes about 40 ms, so the result is kept in fadsl's checked cache
    under the headers' content (a changed header is a new entry)."""
    import fadsl.io.cache as cache
    from fadsl.runtime import include_dir

    paths = [os.path.join(HERE, "include", "fadsl_tile.h")]
    for folder, _, files in os.walk(include_dir()):
        paths += [os.path.join(folder, n) for n in sorted(files) if n.endswith(".h")]
    texts = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            texts.append(f.read())
    folder, name = cache.cache_dir("names"), cache.key("header-names", *texts)
    kept = cache.read(folder, name)
    if kept is not None:
        return frozenset(kept.split())
    out: set[str] = set()
    for text in texts:
        out |= _declared(text)
    cache.write(folder, name, " ".join(sorted(out)))
    return frozenset(out)


_DECLS = (
    r"#\s*define\s+(\w+)",
    r"\b(?:struct|class|union|enum(?:\s+class)?|namespace)\s+(\w+)",
    r"\busing\s+(\w+)\s*=",
    r"\btypedef\b[^;]*?\b(\w+)\s*;",
    # at column 0: namespace-scope functions and variables (bodies are indented)
    r"^(?:(?:__aicore__|inline|static|constexpr|extern|thread_local|const)\s+)*"
    r"[A-Za-z_][\w:<>,*&]*(?:\s+[\w:<>,*&]+)*?\s*\b(\w+)\s*[(=;{\[]",
)


def _declared(text: str) -> set[str]:
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    text = _drop_template_heads(text)
    out = set()
    for pattern in _DECLS:
        out |= {m.group(1) for m in re.finditer(pattern, text, flags=re.M)}
    for body in re.findall(r"\benum\b[^{;]*\{([^}]*)\}", text):
        out |= {e.split("=")[0].strip() for e in body.split(",") if e.strip()}
    return {n for n in out if re.match(r"^[A-Za-z_]\w*$", n)}


def _drop_template_heads(text: str) -> str:
    """Remove ``template <...>`` heads: their parameter names are not declarations."""
    out, i = [], 0
    for m in re.finditer(r"\btemplate\s*<", text):
        if m.start() < i:
            continue
        out.append(text[i : m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"<": 1, ">": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def reserved(name: str) -> bool:
    """Whether no generated identifier may be ``name`` in any scope."""
    return (
        name in CXX_KEYWORDS
        or name in GLOBAL
        or name in _system()[0]
        or name in header_names()
        or "__" in name
        or name.startswith("_")
    )


def kernel_symbol_problem(name: str) -> str | None:
    """Why ``name`` cannot be the kernel's C symbol in its generated project, or None."""
    if name in CXX_KEYWORDS:
        return "is a C++ keyword"
    if name in GLOBAL or name in header_names():
        return "is declared by the generated code or the Ascend C headers it includes"
    if name in _system()[0] or name in _system()[1]:
        return "is declared by the C/C++ library headers the generated code includes"
    if any(name in FIXED[s] for s in ("entry", "host")) or FAMILIES.match(name):
        return "is a name the generated host program or kernel function uses"
    return None


def check_kernel_symbol(name: str, loc: Loc | None) -> None:
    """Refuse a kernel name the generated project cannot declare as its entry point."""
    problem = kernel_symbol_problem(name)
    if problem is not None:
        raise UsageError(
            f"kernel name {name!r} cannot be the symbol of the generated kernel: it "
            f"{problem}",
            loc,
            hint="rename the kernel (fd.kernel(name=...), fd.attention(name=...) or "
            "the `kernel` line of a .fir file), e.g. with a prefix: 'my_" + name + "'",
            code="kernel_name_taken",
        )


def sanitize(stem: str) -> str:
    """An identifier from ``stem``: ASCII word characters, no leading ``_``, no ``__``."""
    text = re.sub(r"[^A-Za-z0-9_]", "_", stem)
    text = re.sub(r"_{2,}", "_", text).lstrip("_")
    if not text or text[0].isdigit():
        text = "v" + text
    return text


class Mangler:
    """One C++ identifier per (kind, key), unique in every scope it lives in."""

    def __init__(self, kernel: str) -> None:
        self.kernel = kernel
        self.taken: dict[str, set[str]] = {s: set(FIXED[s]) for s in SCOPES}
        self.globals: set[str] = {kernel}
        self.ids: dict[tuple[str, str], str] = {}

    def claim(
        self,
        kind: str,
        key: str,
        stem: str,
        scopes: tuple[str, ...],
        forms: tuple[str, ...] = ("{}",),
    ) -> str:
        """The identifier of ``(kind, key)``: ``stem`` if its ``forms`` are all free in
        ``scopes`` (all scopes for "global"), else ``stem_``, ``stem_2``, ..."""
        if (kind, key) in self.ids:
            return self.ids[(kind, key)]
        where = SCOPES if scopes == ("global",) else scopes
        base = sanitize(stem)
        for cand in self._candidates(base):
            names = [f.format(cand) for f in forms]
            if all(self._free(n, where) for n in names):
                if scopes == ("global",):
                    self.globals.update(names)
                for s in where:
                    self.taken[s].update(names)
                self.ids[(kind, key)] = cand
                return cand
        raise AssertionError("unreachable: candidates never run out")

    def _candidates(self, base: str) -> Iterator[str]:
        """``base``, ``base_``, ``base_2``, ... (``x_``, ``x_2``, ... when ``base`` ends in
        ``_``: never a ``__``)."""
        if not FAMILIES.match(base):
            yield base
        sep = "" if base.endswith("_") else "_"
        if sep:
            yield base + sep
        n = 2
        while True:
            yield f"{base}{sep}{n}"
            n += 1

    def _free(self, name: str, scopes: tuple[str, ...]) -> bool:
        if name in self.globals or reserved(name):
            return False
        if "kernel" in scopes and TEMPS.match(name):
            return False
        return all(name not in self.taken[s] for s in scopes)
