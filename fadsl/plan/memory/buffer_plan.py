"""The buffer plan: every on-chip buffer and GM workspace a kernel allocates, per core.

``plan/memory/plan_buffers.py`` produces it from the lowered IR and a target; the resource
checker sums it per memory space, and the Ascend C backend emits exactly these
buffers (one ``InitBuffer`` each), so the proof and the generated code cannot drift
apart. Shapes are symbolic (block sizes stay sympy symbols) and per core: on split
chips a vector tile holds the rows of one of the two AIVs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import sympy

from fadsl.errors import Loc
from fadsl.ir.expr import Expr, as_expr
from fadsl.ir.types import DType, Shape

if TYPE_CHECKING:
    from fadsl.plan.memory.l0_split import SubDots
    from fadsl.plan.resources.api_fields import FieldUse
    from fadsl.plan.schedule.atomic_plan import AtomicSum

SPACES = ("UB", "L1", "L0A", "L0B", "L0C")


@lru_cache(maxsize=4096)
def round_up(x: Expr, align: int) -> Expr:
    """x rounded up to a multiple of ``align`` (symbolic: align * ceiling(x / align));
    kept per (x, align): every plan ``fadsl tune`` makes asks for the same ones."""
    if align <= 1:
        return x
    return align * sympy.ceiling(as_expr(x) / align)


@dataclass(frozen=True)
class Buffer:
    """One InitBuffer: a TQue (``buffers`` slots) or a TBuf (one slot) in one memory."""

    name: str
    """C++ member name, e.g. ``sQue`` or ``accBuf``."""
    space: str
    """UB, L1, L0A, L0B or L0C."""
    position: str
    """Ascend C TPosition: VECIN, VECOUT, VECCALC, A1, B1, A2, B2, CO1."""
    core: str
    """AIC or AIV: which core allocates it."""
    shape: Shape
    """Elements per slot, per core (rows already split between the two AIVs)."""
    dtype: DType
    buffers: int
    """Slots (InitBuffer num): 2 for a double-buffered queue."""
    kind: str
    """queue or tbuf."""
    role: str
    """operand, result, state, staging, temp, reduce-work, broadcast, mask, cast."""
    values: tuple[str, ...]
    """IR values that live in this buffer (empty for implicit temporaries)."""
    loc: Loc
    """User source line of the first value (or of the op that needs the temporary)."""
    bits_per_element: int = 0
    """Non-zero for bit masks (Compare output): storage is 1 bit per element."""
    min_align: int = 0
    """Slot padding this buffer needs beyond the memory's alignment (256 B for UB tiles:
    Compare works on whole 256-byte repeats, so tiles are padded to one)."""
    holds: tuple[DType, ...] = ()
    """For a byte (u8) queue shared by operands of several dtypes (an L0 queue serving
    f16 and f32 dots, ``plan/memory/l0_plan.py``): those dtypes, which the unit must
    take; empty otherwise."""

    def slot_bytes(self) -> Expr:
        """Unpadded bytes of one slot."""
        n = sympy.Mul(*self.shape) if self.shape else sympy.Integer(1)
        if self.bits_per_element:
            return sympy.ceiling(n * self.bits_per_element / 8)
        return n * self.dtype.itemsize

    def bytes(self, align: int) -> Expr:
        """Bytes requested from the memory: each slot rounded up to the alignment."""
        return self.buffers * round_up(self.slot_bytes(), max(align, self.min_align))


@dataclass(frozen=True)
class Workspace:
    """A GM region the host allocates for cube<->vector exchange, per AIC group."""

    name: str
    shape: Shape
    """Elements per AIC group (one slot)."""
    dtype: DType
    slots: int
    role: str
    """What travels through it, e.g. 'S = q @ k^T (cube -> vector)'."""
    loc: Loc

    def bytes(self) -> Expr:
        n = sympy.Mul(*self.shape) if self.shape else sympy.Integer(1)
        return self.slots * n * self.dtype.itemsize


@dataclass(frozen=True)
class BufferPlan:
    """All buffers of a kernel on one target, plus how work maps onto cores."""

    kernel: str
    target: str
    kernel_type: str
    """MIX_AIC_1_2 (split chips), AIV_ONLY, AIC_ONLY or AICORE (coupled chips)."""
    buffers: tuple[Buffer, ...]
    workspaces: tuple[Workspace, ...]
    tasks: Expr
    """Grid points: product of the grid extents."""
    rows_per_vector_core: Expr | None
    """Rows of a Q block each AIV owns (block_q / 2), None when not split."""
    fields: tuple[FieldUse, ...] = ()
    """Every integer the kernel passes to an Ascend C parameter (``api_fields``)."""
    atomics: tuple[AtomicSum, ...] = ()
    """Outputs ``atomic_add`` writes, with their f32 GM sums (``atomic_plan``)."""
    scratch: tuple[tuple[str, Shape, DType], ...] = ()
    """The kernel's fd.Scratch tensors (GM, allocated with the inputs): name, shape,
    dtype (split-KV's partial outputs and LSE)."""
    post_tasks: Expr | None = None
    """Tasks of the post-phase grid (run after SyncAll), None without one."""
    row_chunks: tuple[tuple[str, str, int, Expr], ...] = ()
    """Loops whose row-wise vector work runs in row chunks (``plan/memory/row_chunk.py``):
    loop variable, its source line, rows of a chunk, rows per vector core."""
    notes: tuple[str, ...] = ()
    """Planner choices ``fadsl check`` prints (sub-dots, single-buffered loads)."""
    sub_dots: tuple[tuple[str, str, SubDots], ...] = ()
    """Dots run as sub-dots: result name, source line, sizes (``l0_split.py``)."""

    def in_space(self, space: str) -> tuple[Buffer, ...]:
        return tuple(b for b in self.buffers if b.space == space)

    def footprint(self, space: str, align: int) -> Expr:
        """Bytes of ``space`` one core requests: the sum of its padded buffers."""
        total: Expr = sympy.Integer(0)
        for b in self.in_space(space):
            total += b.bytes(align)
        return total
