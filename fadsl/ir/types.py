"""IR types: element dtypes, memory spaces, tensor/tile/scalar/queue types."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from fadsl.ir.dtype import DType as DType  # re-exported (dtype.py needs no sympy)
from fadsl.ir.expr import Expr, as_expr
from fadsl.ir.expr_print import to_text

CLI_DTYPES = ("fp16", "bf16", "fp32")


class MemSpace(Enum):
    """Where a tile lives. TILE means not yet placed (before plan_buffers)."""

    TILE = "tile"
    GM = "GM"
    UB = "UB"
    L1 = "L1"
    L0A = "L0A"
    L0B = "L0B"
    L0C = "L0C"


Shape = tuple[Expr, ...]


def shape_of(dims: tuple[object, ...] | list[object]) -> Shape:
    return tuple(as_expr(d) for d in dims)


def shape_text(shape: Shape) -> str:
    return "[" + ", ".join(to_text(d) for d in shape) + "]"


@dataclass(frozen=True, slots=True)
class TensorType:
    """A global-memory tensor parameter."""

    shape: Shape
    dtype: DType

    def __str__(self) -> str:
        return f"{self.dtype.value}{shape_text(self.shape)}"


@dataclass(frozen=True, slots=True)
class TileType:
    """An on-chip tile: static (symbolic) shape, dtype, memory space."""

    shape: Shape
    dtype: DType
    space: MemSpace = MemSpace.TILE

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        text = f"{self.dtype.value}{shape_text(self.shape)}"
        if self.space is not MemSpace.TILE:
            text += f" @{self.space.value}"
        return text


@dataclass(frozen=True, slots=True)
class ScalarType:
    """A scalar runtime parameter."""

    dtype: DType

    def __str__(self) -> str:
        return self.dtype.value


@dataclass(frozen=True, slots=True)
class QueueType:
    """A TQue: ``buffers`` slots of ``tile``, at Ascend C queue position ``position``."""

    tile: TileType
    buffers: int
    position: str

    def __str__(self) -> str:
        return f"queue<{self.position}, {self.buffers}, {self.tile}>"


@dataclass(frozen=True, slots=True)
class ErrorType:
    """Poison type of a value whose op failed to type-check."""

    def __str__(self) -> str:
        return "<error>"


ValueType = TileType | QueueType | ErrorType
