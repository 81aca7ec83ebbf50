"""Whole ``fadsl compile`` results, kept between runs: the files and the printed
budget of a compile made before from the same inputs, written again without building,
planning, proving or generating anything (and without importing sympy).

A compile is a function of its inputs, and the key is the SHA-256 of all of them:

- the command's arguments, the working folder, the ``FADSL_*`` environment variables
  (but the cache's own) and Python's version;
- fadsl itself: the content of every file of the package (code, kernel library,
  runtime headers, chip tables) and of the templates (``package_digest``);
- clang-format's identity (path, size, modification time), as the formatting cache
  keys it (fadsl/backends/ascendc/render.py);
- what the kernel file's own top-level code used, recorded while fadsl loads it
  (``Recorder``): the content of the kernel file, of every module it imported and of
  every file it opened (an audit hook on ``open``); for files of the Python
  installation (the standard library, installed packages) and bytecode files, their
  path, size and modification time, as Python's own bytecode cache checks them.

What no key can see: a kernel file whose top-level code reads the environment (other
than ``FADSL_*``), the clock or the network to decide what kernel to define. Such a
file gets the result of the first compile; ``FADSL_NO_CACHE=1`` turns every cache
off. Only successful compiles are stored. Entries go through fadsl/io/cache.py, so a
damaged entry is noticed and the compile is done again; an entry is compressed
(about 40 KB for examples/fa2.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from fadsl.io import cache

PART = "compile"
"""The cache folder (under fadsl's cache) of whole compile results."""

FORMAT = "2"

_SKIP_DIRS = {"__pycache__"}
_PREFIXES = tuple(
    sorted(
        {os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix) if p},
        key=len,
        reverse=True,
    )
)
_RECORDING: list[set[str]] = []
"""The open ``Recorder``s' sets of opened paths (the audit hook adds to them)."""
_HOOKED = False


@dataclass(frozen=True)
class Result:
    """One kernel's compile: its output folder, files and printed budget table."""

    out: str
    files: dict[str, bytes]
    table: str


@dataclass(frozen=True)
class Entry:
    """A stored compile: its kernels' results, and what building them wrote to
    stdout and stderr (a ``print`` in a kernel body, a note), replayed on a hit."""

    results: list[Result]
    stdout: str = ""
    stderr: str = ""


class Echo:
    """Copies what is written to sys.stdout and sys.stderr while it is open (the
    writes still go through)."""

    def __init__(self) -> None:
        self.stdout = _Tee(sys.stdout)
        self.stderr = _Tee(sys.stderr)

    def __enter__(self) -> Echo:
        self._saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = self.stdout, self.stderr  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        sys.stdout, sys.stderr = self._saved


class _Tee:
    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.text: list[str] = []

    def write(self, text: str) -> int:
        self.text.append(text)
        return self.stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class Recorder:
    """Records what loading a kernel file used: modules it imported, files it opened."""

    def __init__(self) -> None:
        self.opened: set[str] = set()
        self.modules: dict[str, str] = {}
        self._before: set[str] = set()

    def __enter__(self) -> Recorder:
        global _HOOKED
        if not _HOOKED:
            sys.addaudithook(_audit)
            _HOOKED = True
        self._before = set(sys.modules)
        _RECORDING.append(self.opened)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _RECORDING.remove(self.opened)
        for name in sorted(set(sys.modules) - self._before):
            path = getattr(sys.modules.get(name), "__file__", None)
            self.modules[name] = path if isinstance(path, str) else ""

    def parts(self, fadsl_dir: str) -> list[str]:
        """One line per module and file, with its fingerprint (fadsl's own left out:
        ``package_digest`` covers them)."""
        inside = os.path.realpath(fadsl_dir) + os.sep
        out = []
        for name, path in sorted(self.modules.items()):
            if not path or not os.path.realpath(path).startswith(inside):
                out.append(f"module {name} {path} {fingerprint(path)}")
        for path in sorted(self.opened):
            if not os.path.realpath(path).startswith(inside):
                out.append(f"file {path} {fingerprint(path)}")
        return out


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or not _RECORDING or not args:
        return
    path = args[0]
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if isinstance(path, str):
        for opened in _RECORDING:
            opened.add(os.path.abspath(path))


def fingerprint(path: str) -> str:
    """SHA-256 of a user's file; path, size and mtime of an installed or bytecode file;
    "-" for no file."""
    if not path:
        return "-"
    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    if not os.path.isfile(path):
        return "not-a-file"
    real = os.path.realpath(path)
    if real.endswith(".pyc") or real.startswith(_PREFIXES):
        return f"stat:{st.st_size}:{st.st_mtime_ns}"
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return "unreadable"


def package_digest(folders: Iterable[str]) -> str:
    """SHA-256 of every file under ``folders`` (names and contents; bytecode left out)."""
    h = hashlib.sha256()
    for folder in folders:
        for dirpath, dirnames, names in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            for name in sorted(names):
                if name.endswith((".pyc", ".pyo")):
                    continue
                path = os.path.join(dirpath, name)
                try:
                    with open(path, "rb") as f:
                        data = f.read()
                except OSError:
                    data = b"unreadable"
                rel = os.path.relpath(path, folder).encode()
                h.update(len(rel).to_bytes(8, "little") + rel)
                h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def entry_key(
    arguments: dict[str, Any], folders: Iterable[str], tool: str, used: list[str]
) -> str:
    """The key of a compile (see the module docstring)."""
    env = sorted(
        (k, v)
        for k, v in os.environ.items()
        if k.startswith("FADSL_") and k not in ("FADSL_CACHE_DIR", "FADSL_NO_CACHE")
    )
    return cache.key(
        FORMAT,
        sys.version,
        os.getcwd(),
        json.dumps(sorted(arguments.items()), default=repr),
        json.dumps(env),
        package_digest(folders),
        tool,
        "\n".join(used),
    )


def load(key: str) -> Entry | None:
    """The entry stored under ``key``, or None (none, damaged, or caching off)."""
    packed = cache.read_bytes(cache.cache_dir(PART), key)
    if packed is None:
        return None
    try:
        head, _, body = zlib.decompress(packed).partition(b"\n")
        index = json.loads(head)
        results, at = [], 0
        for item in index["results"]:
            files = {}
            for name, size in item["files"]:
                files[name] = body[at : at + size]
                at += size
            results.append(Result(item["out"], files, item["table"]))
        if at != len(body):
            return None
        return Entry(results, index["stdout"], index["stderr"])
    except (ValueError, KeyError, TypeError, zlib.error):
        return None


def store(key: str, entry: Entry) -> None:
    """Keep ``entry`` under ``key`` (nothing when caching is off)."""
    folder = cache.cache_dir(PART)
    if folder is None:
        return
    results = [
        {
            "out": r.out,
            "table": r.table,
            "files": [[name, len(data)] for name, data in r.files.items()],
        }
        for r in entry.results
    ]
    index = {"results": results, "stdout": entry.stdout, "stderr": entry.stderr}
    body = b"".join(data for r in entry.results for data in r.files.values())
    data = json.dumps(index).encode() + b"\n" + body
    cache.write_bytes(folder, key, zlib.compress(data, 1))
