"""Hostile bytes and hostile folders (issue 13, item 9).

``hostile_files`` draws a file fadsl reads (textual IR, a kernel .py, a
--target-file, a run folder's meta.json) with bytes that are not UTF-8, control
characters, NULs, a very long line or deep JSON nesting, and the command that reads
it. ``hostile_folders`` draws a folder for ``-o``, ``--inputs`` or ``verify`` whose
entries are FIFOs, symbolic links (to /dev/zero, to nowhere, to a folder outside),
deeply nested or oversized JSON, random bytes, or sub-folders. Every command must
end cleanly (fuzzkit.problem) and never touch the folder outside (``victim``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
FA2 = str(ROOT / "examples" / "fa2.py")
IR = (ROOT / "tests" / "ir_samples" / "masks.fir").read_text(encoding="utf-8")
KERNEL = (ROOT / "examples" / "causal.py").read_text(encoding="utf-8")
TARGET = (ROOT / "fadsl" / "targets" / "ascend910b4.json").read_text(encoding="utf-8")
META = '{"kernel": "fa2", "params": {"o": {"kind": "out", "dtype": "f16", "file": "o.bin"}}}'
SHAPE = "B=1,N=1,Sq=16,Skv=16,D=16"

BAD_BYTES = (
    b"\xe9",  # Latin-1
    b"\xff\xfe",  # a UTF-16 byte-order mark
    b"\xed\xa0\x80",  # an encoded surrogate
    b"\xc0\xaf",  # an overlong '/'
    b"\x80",  # a lone continuation byte
    b"\xf4\x90\x80\x80",  # above U+10FFFF
    b"\x00",
    b"\x1b[2J",  # a terminal escape (valid UTF-8)
    b"\r",
    "\u202e".encode(),  # right-to-left override (valid UTF-8)
)


@st.composite
def _hostile_bytes(draw: Callable, text: str) -> bytes:  # type: ignore[type-arg]
    data = text.encode("utf-8")
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        insert = draw(
            st.one_of(
                st.sampled_from(BAD_BYTES),
                st.binary(min_size=1, max_size=40),
                st.sampled_from((b"a" * 200_000, b"[" * 50_000, b"{" * 3000)),
            )
        )
        data = data[:at] + insert + data[at:]
    return data


def hostile_files() -> st.SearchStrategy[tuple[str, bytes, str]]:
    """(kind, bytes, command) for a file with hostile bytes."""
    return st.one_of(
        st.tuples(st.just("fir"), _hostile_bytes(IR), st.sampled_from(("ir", "check"))),
        st.tuples(st.just("py"), _hostile_bytes(KERNEL), st.just("ir")),
        st.tuples(st.just("target"), _hostile_bytes(TARGET), st.just("check")),
        st.tuples(
            st.just("meta"), _hostile_bytes(META), st.sampled_from(("verify", "run"))
        ),
        st.tuples(st.just("fir"), st.binary(max_size=300), st.just("ir")),
    )


def file_argv(kind: str, path: str, cmd: str) -> list[str]:
    """The command line that reads the hostile file at ``path``."""
    if kind in ("fir", "py"):
        return [cmd, path] + (["--shape", "N=20"] if cmd == "check" else [])
    if kind == "target":
        return ["check", FA2, "--shape", SHAPE, "--target-file", path]
    folder = os.path.dirname(path)
    if cmd == "verify":
        return ["verify", folder, folder]
    return ["run", FA2, "--shape", SHAPE, "-o", folder]


ENTRY_NAMES = (
    "meta.json",
    "fadsl-manifest.json",
    "resources.json",
    "o.bin",
    "q.bin",
    "k.bin",
    "v.bin",
    "notes.txt",
    "sub",
)
ENTRY_KINDS = (
    "fifo",
    "devzero",
    "dangling",
    "victim",
    "folder",
    "deep_json",
    "huge",
    "random",
    "meta",
    "empty",
)


def hostile_folders() -> st.SearchStrategy[tuple[list[tuple[str, str, bytes]], str]]:
    """(entries, command): entries are (name, kind, bytes) of the folder's files."""
    entry = st.tuples(
        st.sampled_from(ENTRY_NAMES),
        st.sampled_from(ENTRY_KINDS),
        st.binary(max_size=64),
    )
    unique = st.lists(entry, min_size=1, max_size=4, unique_by=lambda e: e[0])
    return st.tuples(unique, st.sampled_from(("run-o", "inputs", "verify", "verify")))


def make_folder(
    folder: str, victim: str, entries: list[tuple[str, str, bytes]]
) -> None:
    """Create ``folder`` with ``entries``; ``victim`` is a folder outside it."""
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for name, kind, data in entries:
        path = os.path.join(folder, name)
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "devzero":
            os.symlink("/dev/zero", path)
        elif kind == "dangling":
            os.symlink(os.path.join(folder, "nowhere"), path)
        elif kind == "victim":
            os.symlink(victim, path)
        elif kind == "folder":
            os.makedirs(os.path.join(path, "inner"))
            Path(path, "inner", "meta.json").write_bytes(data)
        else:
            Path(path).write_bytes(_content(kind, data))


def _content(kind: str, data: bytes) -> bytes:
    if kind == "deep_json":
        return b"[" * 100_000 + b"]" * 100_000
    if kind == "huge":
        return b'{"kernel": "' + b"x" * (9 << 20) + b'"}'
    if kind == "meta":
        return META.encode()
    if kind == "empty":
        return b""
    return data


def folder_argv(cmd: str, folder: str) -> list[str]:
    if cmd == "run-o":
        return ["run", FA2, "--shape", SHAPE, "-o", folder]
    if cmd == "inputs":
        return ["run", FA2, "--shape", SHAPE, "--inputs", folder, "-o", folder + "-out"]
    return ["verify", folder, folder]
