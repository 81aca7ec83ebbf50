"""Freed tile arrays stay in the heap while the interpreter runs (glibc's malloc).

The interpreter allocates arrays of tens of megabytes every iteration (a score tile of
every grid point). glibc serves such requests with a fresh ``mmap`` and returns them to
the system on ``free``, so every iteration page-faults its memory in again: in a causal
FA2 run at S=4096, whose tiles shrink every iteration, the faults took more time than
the arithmetic (interpreter 1.69 s with them, 1.22 s without; docs/performance.md).
Raising the mmap and trim thresholds for the duration of a run keeps freed blocks in
the heap for the next iteration; afterwards the thresholds go back to glibc's initial
values and the heap is trimmed. Elsewhere (musl, macOS, Windows) nothing changes.
Only where memory comes from changes: never a value.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

# mallopt parameters and glibc's initial values (malloc/malloc.h, mallopt(3))
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
INITIAL_THRESHOLD = 128 * 1024
RUN_THRESHOLD = 1 << 30


@cache
def _glibc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:  # glibc's soname; find_library would run ldconfig in a subprocess
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None


@contextmanager
def reuse_freed_memory() -> Iterator[None]:
    """Within the block, large freed arrays are reused instead of unmapped."""
    libc = _glibc()
    if libc is None:
        yield
        return
    libc.mallopt(M_MMAP_THRESHOLD, RUN_THRESHOLD)
    libc.mallopt(M_TRIM_THRESHOLD, RUN_THRESHOLD)
    try:
        yield
    finally:
        libc.mallopt(M_MMAP_THRESHOLD, INITIAL_THRESHOLD)
        libc.mallopt(M_TRIM_THRESHOLD, INITIAL_THRESHOLD)
        libc.malloc_trim(0)
