"""IR types: element dtypes, memory spaces, tensor/tile/scalar/queue types."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from fadsl.ir.expr import Expr, as_expr
from fadsl.ir.expr_print import to_text


class DType(Enum):
    """Element types. The value is the textual-IR spelling."""

    F16 = "f16"
    BF16 = "bf16"
    F32 = "f32"
    I32 = "i32"
    U8 = "u8"
    BOOL = "i1"
    F8E4M3 = "f8e4m3"
    F8E5M2 = "f8e5m2"

    @property
    def itemsize(self) -> int:
        return _ITEMSIZE[self]

    @property
    def is_float(self) -> bool:
        return self in (
            DType.F16,
            DType.BF16,
            DType.F32,
            DType.F8E4M3,
            DType.F8E5M2,
        )

    @property
    def is_int(self) -> bool:
        return self in (DType.I32, DType.U8)

    @staticmethod
    def parse(text: str) -> DType:
        """Accepts IR spellings (f16) and CLI spellings (fp16, float16, half)."""
        key = text.strip().lower()
        found = _ALIASES.get(key)
        if found is None:
            raise ValueError(text)
        return found


_ITEMSIZE = {
    DType.F16: 2,
    DType.BF16: 2,
    DType.F32: 4,
    DType.I32: 4,
    DType.U8: 1,
    DType.BOOL: 1,
    DType.F8E4M3: 1,
    DType.F8E5M2: 1,
}

_ALIASES: dict[str, DType] = {d.value: d for d in DType}
_ALIASES.update(
    {
        "fp16": DType.F16,
        "float16": DType.F16,
        "half": DType.F16,
        "bfloat16": DType.BF16,
        "fp32": DType.F32,
        "float32": DType.F32,
        "float": DType.F32,
        "int32": DType.I32,
        "bool": DType.BOOL,
        "uint8": DType.U8,
        "fp8e4m3": DType.F8E4M3,
        "fp8e5m2": DType.F8E5M2,
        "fp8": DType.F8E4M3,
    }
)

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
