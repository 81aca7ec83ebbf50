"""fadsl's on-disk cache: work that depends only on its inputs, kept between runs.

Two things are cached here, both keyed so that a stale entry cannot be used: Jinja2's
compiled templates (Jinja checks each template's source checksum) and clang-format's
output (keyed by the SHA-256 of the formatter binary's identity, the style, the file
name and the unformatted text). Every entry is stored with the SHA-256 of its content
and checked when read: an edited, truncated or otherwise damaged entry is reported
on stderr and rebuilt, never used. Entries are written to a temporary name and
renamed. Either cache is only a speed-up: any failure to read or write it falls back
to doing the work. (``fadsl sim`` keeps its builds apart, in fadsl/backends/sim/cache.py.)

The folder is ``$FADSL_CACHE_DIR``, else ``$XDG_CACHE_HOME/fadsl``, else
``~/.cache/fadsl``; ``FADSL_NO_CACHE=1`` turns the cache off.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile

FORMAT = "2"
"""Part of every key: entries of an older layout are never looked up."""


def cache_dir(part: str) -> str | None:
    """The cache folder for ``part`` (created), or None when caching is off or the
    folder cannot be made."""
    if os.environ.get("FADSL_NO_CACHE") == "1":
        return None
    root = os.environ.get("FADSL_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
            os.path.expanduser("~"), ".cache"
        )
        root = os.path.join(base, "fadsl")
    path = os.path.join(root, part)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None
    return path


def key(*parts: str | bytes) -> str:
    """A hex digest naming an entry: SHA-256 of the parts, each length-prefixed."""
    h = hashlib.sha256()
    for p in (FORMAT, *parts):
        data = p.encode() if isinstance(p, str) else p
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def read(folder: str | None, name: str) -> str | None:
    """The cached text ``name`` in ``folder``, or None (missing or damaged)."""
    data = read_bytes(folder, name)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def write(folder: str | None, name: str, text: str) -> None:
    """Store ``text`` as ``name`` (see ``write_bytes``)."""
    write_bytes(folder, name, text.encode("utf-8"))


def read_bytes(folder: str | None, name: str) -> bytes | None:
    """The bytes stored as ``name``, checked against the SHA-256 stored with them;
    None when there is no entry, or when it is damaged (then a note says so)."""
    if folder is None:
        return None
    path = os.path.join(folder, name)
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    header, newline, body = raw.partition(b"\n")
    if not newline or header != _header(body):
        note_damaged(path, "its content does not match the SHA-256 stored with it")
        return None
    return body


def write_bytes(folder: str | None, name: str, data: bytes) -> None:
    """Store ``data`` as ``name``, after a line with its SHA-256, atomically
    (readers never see half an entry)."""
    if folder is None:
        return
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(_header(data) + b"\n" + data)
        os.replace(tmp, os.path.join(folder, name))
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _header(data: bytes) -> bytes:
    return b"sha256:" + hashlib.sha256(data).hexdigest().encode()


def note_damaged(path: str, why: str) -> None:
    """Tell the user that a cache entry is ignored and rebuilt."""
    print(
        f"note: ignoring the damaged cache entry {path} ({why}); rebuilding it",
        file=sys.stderr,
    )
