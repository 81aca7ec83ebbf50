"""Jinja2's compiled templates in fadsl's cache, each entry checked when read.

Jinja's own FileSystemBytecodeCache checks that an entry belongs to the template's
current source, but not that the compiled code in it is what Jinja wrote: an edited
entry would change the generated project. Here each entry goes through
``fadsl.io.cache.read_bytes``/``write_bytes``, stored with the SHA-256 of its content;
a damaged one is reported and rebuilt.
"""

from __future__ import annotations

import jinja2
from jinja2.bccache import Bucket

from fadsl.io.cache import key, read_bytes, write_bytes


class CheckedBytecodeCache(jinja2.BytecodeCache):
    """Compiled templates in ``folder``, one verified entry per template."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def load_bytecode(self, bucket: Bucket) -> None:
        data = read_bytes(self.folder, self._name(bucket))
        if data is not None:
            bucket.bytecode_from_string(data)  # Jinja checks source checksum, version

    def dump_bytecode(self, bucket: Bucket) -> None:
        write_bytes(self.folder, self._name(bucket), bucket.bytecode_to_string())

    def _name(self, bucket: Bucket) -> str:
        return key("jinja", bucket.key) + ".jbc"
