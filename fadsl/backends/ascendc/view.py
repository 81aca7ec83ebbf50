"""The view model: what templates see. Frozen dataclasses of strings, ints and tuples only.

Statements are pre-rendered C++ text grouped in blocks; every group is preceded by a
comment naming the user's source line, so the kernel reads back to the Python.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Line:
    """One C++ statement (or a comment when it starts with //)."""

    text: str


@dataclass(frozen=True)
class Block:
    """``header { body }``: a for / if / plain scope."""

    header: str
    body: tuple[Line | Block, ...]


Stmt = Line | Block


@dataclass(frozen=True)
class Member:
    decl: str
    """e.g. AscendC::TQue<AscendC::TPosition::VECIN, 1> dotQue;"""
    init: str
    """e.g. pipe_.InitBuffer(dotQue, 1, 32768);  (empty for plain members)"""
    comment: str


@dataclass(frozen=True)
class CoreClass:
    """The code one core type runs: the AIC (cube) or the AIV (vector) class."""

    name: str
    role: str
    """cube or vector"""
    members: tuple[Member, ...]
    init: tuple[Stmt, ...]
    process: tuple[Stmt, ...]


@dataclass(frozen=True)
class Constant:
    name: str
    ctype: str
    value: str
    comment: str


@dataclass(frozen=True)
class TilingField:
    name: str
    """C++ member name"""
    ctype: str
    comment: str
    key: str
    """the symbol or scalar as the user named it (shape.txt); empty for padding"""


@dataclass(frozen=True)
class GmParam:
    name: str
    """C++ identifier (the Mangler's; the user's name unless it clashes)"""
    ctype: str
    """element type (half, bfloat16_t, float, int32_t)"""
    elements: str
    """C++ expression of the element count, over tiling fields"""
    kind: str
    """in / out / scratch / workspace"""
    file: str
    """the parameter as the user named it: input/<file>.bin, output/<file>.bin"""
    start: str = ""
    """an in-place output (fadsl/ir/aliases.py): the input whose input/<start>.bin the
    host loads into it before the launch, as the device's in-place buffer holds it"""


@dataclass(frozen=True)
class Flag:
    name: str
    value: int
    comment: str


@dataclass(frozen=True)
class KernelView:
    kernel: str
    source: str
    version: str
    kernel_type: str
    target: str
    constants: tuple[Constant, ...]
    flags: tuple[Flag, ...]
    tiling_name: str
    tiling: tuple[TilingField, ...]
    params: tuple[GmParam, ...]
    cube: CoreClass | None
    vector: CoreClass
    workspace_bytes: str
    """C++ expression: workspace bytes per AIC group."""
    block_dim: str
    """C++ expression (over a tiling variable ``t``) of the launch blockDim."""
    tasks: str
    post: CoreClass | None = None
    """The post phase's vector class (a second fd.grid), run after ``post_sync``."""
    post_sync: tuple[Stmt, ...] = ()
    """The barrier before the post phase (``phases.drained_sync_all``)."""
    sync_all: bool = False
    """Whether any core runs ``AscendC::SyncAll`` (atomic phases or a post phase): the
    op's tiling then asks for batch mode (``SetScheduleMode(1)``)."""
