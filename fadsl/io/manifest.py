"""What fadsl wrote into a folder: ``fadsl-manifest.json``, file names and SHA-256s.

Every output folder (``compile``, ``run``, ``sim``) and every ``sim`` build-cache entry
carries one. It lets fadsl tell an unchanged earlier output, which it may replace,
from a folder that holds anything else (a file the user added or edited), which it
must not delete; and a sound cache entry from a damaged one. The file is
deterministic: the same files give the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass, field

from fadsl.errors import UsageError
from fadsl.io.files import read_json

NAME = "fadsl-manifest.json"
FORMAT = 1
MAX_BYTES = 8 << 20
"""A manifest larger than this is not one fadsl wrote."""


def file_digest(path: str) -> str:
    """SHA-256 (hex) of the file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def digests(folder: str) -> dict[str, str]:
    """Every regular file under ``folder`` (``/``-separated relative path) -> SHA-256,
    the top-level manifest left out."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, folder).replace(os.sep, "/")
            if rel != NAME and os.path.isfile(path) and not os.path.islink(path):
                out[rel] = file_digest(path)
    return out


def write(folder: str, files: dict[str, str] | None = None) -> None:
    """Write the manifest of ``files`` (default: everything now in ``folder``)."""
    listed = digests(folder) if files is None else files
    doc = {
        "written_by": "fadsl",
        "format": FORMAT,
        "files": dict(sorted(listed.items())),
    }
    with open(os.path.join(folder, NAME), "w", encoding="utf-8") as f:
        f.write(json.dumps(doc, indent=1) + "\n")


def read(folder: str) -> dict[str, str] | None:
    """The files the manifest lists, or None when it is missing or not fadsl's."""
    path = os.path.join(folder, NAME)
    if os.path.islink(path) or not os.path.isfile(path):
        return None
    try:
        doc = read_json(path, limit=MAX_BYTES)
    except UsageError:  # unreadable, a FIFO, too large, not UTF-8, not JSON
        return None
    if not isinstance(doc, dict) or doc.get("written_by") != "fadsl":
        return None
    files = doc.get("files")
    if not isinstance(files, dict):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        return None
    return files


@dataclass
class Difference:
    """How a folder differs from its manifest (relative paths, folders end in /)."""

    extra: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def compare(folder: str, files: dict[str, str]) -> Difference:
    """Walk ``folder`` (following no links) against the manifest's ``files``."""
    diff = Difference()
    seen: set[str] = set()
    parents = {
        rel.rsplit("/", i)[0] for rel in files for i in range(1, rel.count("/") + 1)
    }
    for dirpath, dirnames, filenames in os.walk(folder):
        base = os.path.relpath(dirpath, folder).replace(os.sep, "/")
        prefix = "" if base == "." else base + "/"
        for name in sorted(dirnames):
            rel = prefix + name
            if rel not in parents or os.path.islink(os.path.join(dirpath, name)):
                diff.extra.append(rel + "/")
                dirnames.remove(name)
        for name in sorted(filenames):
            rel = prefix + name
            if rel == NAME:
                continue
            path = os.path.join(dirpath, name)
            if rel not in files or not _regular(path):
                diff.extra.append(rel)
            elif _digest_or_none(path) != files[rel]:
                diff.edited.append(rel)
            seen.add(rel)
    diff.extra.sort()
    diff.missing = sorted(set(files) - seen)
    return diff


def _digest_or_none(path: str) -> str | None:
    try:
        return file_digest(path)
    except OSError:  # unreadable: cannot be shown to be unchanged
        return None


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
