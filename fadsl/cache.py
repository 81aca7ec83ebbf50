"""fadsl's on-disk cache: work that depends only on its inputs, kept between runs.

Two things are cached, both keyed so that a stale entry cannot be used: Jinja2's
compiled templates (Jinja checks each template's source checksum) and clang-format's
output (keyed by the SHA-256 of the formatter binary's identity, the style, the file
name and the unformatted text). Either is only a speed-up: any failure to read or
write the cache falls back to doing the work.

The folder is ``$FADSL_CACHE_DIR``, else ``$XDG_CACHE_HOME/fadsl``, else
``~/.cache/fadsl``; ``FADSL_NO_CACHE=1`` turns the cache off.
"""

from __future__ import annotations

import hashlib
import os
import tempfile


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
    for p in parts:
        data = p.encode() if isinstance(p, str) else p
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def read(folder: str | None, name: str) -> str | None:
    """The cached text ``name`` in ``folder``, or None."""
    if folder is None:
        return None
    try:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def write(folder: str | None, name: str, text: str) -> None:
    """Store ``text`` as ``name`` atomically (readers never see half a file)."""
    if folder is None:
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, os.path.join(folder, name))
    except OSError:
        return
