"""Where an error found in fadsl's own library programs is reported.

``fd.attention`` and its relatives build their kernels from DSL programs in
``fadsl/lib``. A problem found at a line of such a program is the user's problem
(their shapes, their constants), so it is reported at the user's call, the kernel's
declaration, with the library line named in a note. Every layer that can meet a
library line (the resource proofs, the backend, the model) asks this one module.
"""

from __future__ import annotations

import os

from fadsl.errors import Loc

_LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib")


def in_library(loc: Loc) -> bool:
    """A line of fadsl's own DSL programs (fadsl/lib), not of the user's file."""
    return os.path.abspath(loc.file).startswith(_LIB + os.sep)


def user_site(
    loc: Loc | None, kernel_loc: Loc | None, what: str
) -> tuple[Loc | None, tuple[str, ...]]:
    """``loc`` itself when it is the user's line (or unknown); else the kernel's
    declaration and a note ``<what> `<line>` in fadsl's library program (<file:line>), ...``.

    ``what`` says how the line is involved: "raised at", "the value is set by",
    "the tile is loaded by"."""
    if loc is None or not in_library(loc):
        return loc, ()
    if kernel_loc is None or in_library(kernel_loc):
        return loc, ()
    note = (
        f"{what} `{loc.source_line().strip()}` in fadsl's library program "
        f"({loc.short()}), for the kernel declared here"
    )
    return kernel_loc, (note,)
