"""Importing a user's kernel file without writing beside it.

Python's normal import writes ``__pycache__/<name>.pyc`` next to every source file it
loads (and reads a stale one if present). fadsl writes only into its ``-o`` folder, so
the kernel file, and any module it imports from its own folder while it is being
loaded, are compiled from source in memory. Nothing process-wide changes:
``sys.dont_write_bytecode`` is left alone, and fadsl's own modules and installed
packages are imported as usual.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import CodeType, ModuleType

FADSL_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """A source loader that neither reads nor writes bytecode files."""

    def get_code(self, fullname: str) -> CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)  # type: ignore[return-value]


class _UserFolderFinder(importlib.abc.MetaPathFinder):
    """Finds modules as the path finder does; those under ``folder`` (and not in
    fadsl's own package) get a :class:`SourceOnlyLoader`."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = spec.loader if spec is not None else None
        if spec is None or type(loader) is not importlib.machinery.SourceFileLoader:
            return None
        origin = os.path.abspath(spec.origin or "")
        if not _inside(origin, self.folder) or _inside(origin, FADSL_DIR):
            return None
        spec.loader = SourceOnlyLoader(loader.name, loader.path)
        return spec


def _inside(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def exec_user_module(name: str, abspath: str) -> ModuleType:
    """Import the file ``abspath`` as module ``name`` (registered in sys.modules) with
    its folder first on sys.path; no bytecode is read or written for it or for the
    modules it imports from that folder. Exceptions of its code propagate."""
    folder = os.path.dirname(abspath)
    loader = SourceOnlyLoader(name, abspath)
    spec = importlib.util.spec_from_file_location(name, abspath, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    finder = _UserFolderFinder(folder)
    sys.path.insert(0, folder)
    sys.meta_path.insert(0, finder)
    try:
        loader.exec_module(module)
    finally:
        sys.meta_path.remove(finder)
        sys.path.remove(folder)
    return module
