"""Element dtypes (``fd.f16``, ``f16`` in the textual IR, ``fp16`` on the command line).

Apart from ``types.py`` (which re-exports ``DType``) so that ``@fd.kernel`` and
``fd.In(..., dtype=fd.f32)`` can be evaluated without importing sympy
(``tests/test_light_imports.py``).
"""

from __future__ import annotations

from enum import Enum


class DType(Enum):
    """Element types. The value is the textual-IR spelling."""

    F16 = "f16"
    BF16 = "bf16"
    F32 = "f32"
    I32 = "i32"
    I8 = "i8"
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
        return self in (DType.I32, DType.I8, DType.U8)

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
    DType.I8: 1,
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
        "int8": DType.I8,
        "bool": DType.BOOL,
        "uint8": DType.U8,
        "fp8e4m3": DType.F8E4M3,
        "fp8e5m2": DType.F8E5M2,
        "fp8": DType.F8E4M3,
    }
)
