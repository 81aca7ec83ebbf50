"""The one Jinja2 environment, and rendering a kernel's view model into project files.

C++ is formatted with the pinned clang-format (so output is byte-identical on every
machine); the Python scripts are rendered already in black style (a test checks that
black leaves them unchanged), which keeps black out of `fadsl compile`'s start-up.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import lru_cache
from collections.abc import Mapping
from typing import Any

from fadsl.errors import BackendError

CLANG_STYLE = (
    "{BasedOnStyle: Google, IndentWidth: 4, ColumnLimit: 110, AccessModifierOffset: -4, "
    "BreakBeforeBraces: Custom, BraceWrapping: {AfterFunction: true}, "
    "AllowShortFunctionsOnASingleLine: Inline, SortIncludes: false, "
    "DerivePointerAlignment: false, PointerAlignment: Left, "
    "AllowShortIfStatementsOnASingleLine: Never, AllowShortLoopsOnASingleLine: false}"
)

CXX_TEMPLATES = {
    "{kernel}_kernel.cpp": "kernel.cpp.j2",
    "{kernel}_tiling.h": "tiling.h.j2",
    "main.cpp": "main.cpp.j2",
    "data_utils.h": "data_utils.h.j2",
}
OTHER_TEMPLATES = {
    "CMakeLists.txt": "CMakeLists.txt.j2",
    "cmake/npu_lib.cmake": "cmake/npu_lib.cmake.j2",
    "cmake/cpu_lib.cmake": "cmake/cpu_lib.cmake.j2",
    "cmake/fadsl_cpu.cmake": "cmake/fadsl_cpu.cmake.j2",
    "run.sh": "run.sh.j2",
    "scripts/gen_data.py": "scripts/gen_data.py.j2",
    "scripts/verify_result.py": "scripts/verify_result.py.j2",
    "README.md": "README.md.j2",
}


def templates_dir() -> str:
    """codegen_templates/ascendc beside the fadsl folder in a source checkout (the
    checkout's own, even when an editable install of another checkout maps the
    package fadsl.codegen_templates elsewhere), else the package fadsl.codegen_templates
    of the wheel."""
    here = os.path.dirname(os.path.abspath(__file__))
    beside = os.path.normpath(
        os.path.join(here, "..", "..", "..", "codegen_templates", "ascendc")
    )
    if os.path.isdir(beside):
        return beside
    import fadsl.codegen_templates as pkg

    return os.path.join(os.path.dirname(os.path.abspath(pkg.__file__)), "ascendc")


@lru_cache(maxsize=1)
def environment() -> Any:
    """The environment; compiled templates are kept in fadsl's cache (fadsl/io/cache.py),
    so a new process does not compile them again."""
    import jinja2

    from fadsl.backends.ascendc.template_cache import CheckedBytecodeCache
    from fadsl.io.cache import cache_dir

    folder = cache_dir("jinja")
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates_dir()),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        bytecode_cache=CheckedBytecodeCache(folder) if folder else None,
    )


def pyliteral(name: str, value: Any, width: int = 88) -> str:
    """``NAME = value`` as black would format it (double quotes, magic trailing commas)."""
    one = f"{name} = {_lit(value)}"
    if len(one) <= width or not isinstance(value, dict) or not value:
        return one
    items = [f"    {_lit(k)}: {_lit(v)}," for k, v in value.items()]
    return "\n".join([f"{name} = {{"] + items + ["}"])


def _lit(v: Any) -> str:
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_lit(k)}: {_lit(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_lit(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(_lit(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    return repr(v)


def render_all(
    kernel: str, context: dict[str, Any], extra_cxx: Mapping[str, str] | None = None
) -> dict[str, bytes]:
    """Every project file of ``kernel``: path -> bytes; ``extra_cxx`` (path -> text,
    e.g. the op package's C++) is formatted with the project's, in the same run."""
    env = environment()
    env.globals["pyliteral"] = pyliteral
    out: dict[str, bytes] = {}
    cxx: dict[str, str] = {}
    for pattern, template in CXX_TEMPLATES.items():
        cxx[pattern.format(kernel=kernel)] = env.get_template(template).render(
            **context
        )
    cxx.update(extra_cxx or {})
    for path, text in format_cxx(cxx).items():
        out[path] = text.encode()
    for path, template in OTHER_TEMPLATES.items():
        out[path] = env.get_template(template).render(**context).encode()
    return out


def clang_format_binary() -> str:
    found = shutil.which("clang-format")
    if found:
        return found
    try:
        import clang_format

        path = os.path.join(
            os.path.dirname(clang_format.__file__), "data", "bin", "clang-format"
        )
        if os.path.isfile(path):
            return path
    except ImportError:
        pass
    raise BackendError(
        "clang-format is not installed; fadsl formats the C++ it generates with it",
        None,
        hint="pip install clang-format==23.1.5",
    )


def format_cxx(files: dict[str, str]) -> dict[str, str]:
    """Every file formatted by clang-format: from fadsl's cache when the same text was
    formatted before by the same binary and style, the rest by one process."""
    from fadsl.io.cache import cache_dir, key, read, write

    binary = clang_format_binary()
    folder = cache_dir("clang-format")
    identity = binary_identity(binary)
    keys = {
        name: key(identity, CLANG_STYLE, os.path.basename(name), text)
        for name, text in files.items()
    }
    out = {name: read(folder, keys[name]) for name in files}
    todo = {name: text for name, text in files.items() if out[name] is None}
    if todo:
        for name, text in _run_clang_format(binary, todo).items():
            out[name] = text
            write(folder, keys[name], text)
    return {name: text for name, text in out.items() if text is not None}


def binary_identity(binary: str) -> str:
    """Path, size and modification time: a reinstalled formatter gets new entries."""
    st = os.stat(binary)
    return f"{os.path.realpath(binary)}:{st.st_size}:{st.st_mtime_ns}"


def _run_clang_format(binary: str, files: dict[str, str]) -> dict[str, str]:
    """Format every file with one clang-format process (in place, in a scratch folder)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="fadsl-fmt-") as tmp:
        paths = {}
        for i, (name, text) in enumerate(files.items()):
            path = os.path.join(tmp, f"{i}_{os.path.basename(name)}")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            paths[name] = path
        proc = subprocess.run(
            [binary, f"--style={CLANG_STYLE}", "-i", *paths.values()],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise BackendError(f"clang-format failed: {proc.stderr.strip()}")
        out = {}
        for name, path in paths.items():
            with open(path, encoding="utf-8") as f:
                out[name] = f.read()
    return out
