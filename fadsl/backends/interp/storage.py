"""How values are stored: dtype conversions, rounding, poison fills.

Tiles are stored in their IR dtype. One exception keeps fp16 fast: numpy converts
float32 to float16 slowly, so an f16 result computed in float32 is rounded to f16
precision in float32 (``round_f16``, bit-exact with ``astype(float16)``) and kept as a
``Widened`` value; the float16 array is made the first time an op reads the storage
(a store, a where, a queue copy). Ops that compute in float32 (every elementwise op,
dot) use the widened array directly, which is what they would convert the float16
array to anyway. The values are the same either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from fadsl.errors import ExecutionError, Loc
from fadsl.ir.types import DType
from fadsl.numerics import np_dtype, to_float16


def to_f32(x: np.ndarray) -> np.ndarray:
    """``x`` as float32 (exact for f16/bf16/fp8; a no-op for float32)."""
    if x.dtype == np.float32:
        return x
    if x.dtype == np.float16 and x.size <= _SMALL_F16:
        return np.take(_F16_TO_F32, x.view(np.uint16))
    return x.astype(np.float32)


_F16_TO_F32 = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
"""float32 of every float16 bit pattern (256 KB), made by ``astype`` itself: a lookup
gives the same bits as ``astype`` (NaN payloads included) by construction."""
_SMALL_F16 = 1 << 18
"""Up to this many elements a lookup beats numpy's float16 -> float32 loop (a K or V
tile of 4 heads, 65,536 elements: 0.16 -> 0.06 ms); on larger arrays it does not."""


_EXPONENT = np.uint32(0x7F800000)
_QUANTUM_MIN = np.uint32(113 << 23)
"""2^-14: below it the f16 quantum is fixed (subnormals)."""
_QUANTUM_MAX = np.uint32(142 << 23)
"""2^15: the largest f16 binade."""
_TO_MAGIC = np.uint32((13 << 23) | (1 << 22))
"""Added to an exponent field: 1.5 x 2^13 times that binade's power of two."""


_BLOCK = 1 << 20
"""Elements per piece of a large ``round_f16`` (4 MB of float32: no array-sized scratch
is faulted in, and the temporaries stay in the last-level cache; 2.0 -> 1.1 ns per
element here). Pieces of 1 MB were as fast on one thread but made four times as many
numpy calls, each of which gives up and retakes the GIL: with the grid on two threads
that costs a wait for the other thread's Python every time (causal FA2 at S=4096,
interpreter 0.78 -> 0.74 s, medians of 8 alternating runs)."""


def round_f16(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """float32 ``x`` rounded to the nearest float16 (ties to even), as float32; a large
    contiguous ``x`` piece by piece (each element's result is the same either way)."""
    whole = out is None or out.flags.c_contiguous
    if x.size <= _BLOCK or not x.flags.c_contiguous or not whole:
        return _round_f16(x, out)
    if out is None:
        out = np.empty(x.shape, np.float32)
    xs, ys = x.reshape(-1), out.reshape(-1)
    for i in range(0, xs.size, _BLOCK):
        _round_f16(xs[i : i + _BLOCK], ys[i : i + _BLOCK])
    return out


def _round_f16(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """float32 ``x`` rounded to the nearest float16 (ties to even), as float32.

    Bit-exact with ``x.astype(np.float16).astype(np.float32)`` including subnormals,
    overflow to inf and NaN (zeros come out as +0), at about half its cost. For ``x``
    in the binade [2^e, 2^(e+1)), the magic number M = 1.5 x 2^(e+13) keeps ``x + M``
    inside [2^(e+13), 2^(e+14)) whatever the sign of ``x``; there the float32 spacing
    is 2^(e-10), the f16 spacing of ``x``'s binade, so the FPU's rounding of the sum
    (to nearest even: M is an even multiple of that spacing) rounds ``x`` as float16
    does, and ``(x + M) - M`` is exact. Below 2^-14 the spacing stays 2^-24
    (subnormals); above 2^15 it stays 2^5, and the rare results past 65504 become
    inf. ``out`` may be ``x``.
    """
    magic = np.bitwise_and(x.view(np.uint32), _EXPONENT)
    top = magic.max() if magic.size else _QUANTUM_MIN
    np.maximum(magic, _QUANTUM_MIN, out=magic)
    if top > _QUANTUM_MAX:
        np.minimum(magic, _QUANTUM_MAX, out=magic)
    magic += _TO_MAGIC
    m = magic.view(np.float32)
    with np.errstate(invalid="ignore"):  # signalling NaN inputs; they stay NaN
        out = np.add(x, m, out=out)
        out -= m
    if top >= _QUANTUM_MAX:
        over = np.abs(out) > np.float32(65504)
        out[over] = np.copysign(np.float32(np.inf), out[over])
    return out


def round_to(x: np.ndarray, dtype: DType, out: np.ndarray | None = None) -> np.ndarray:
    """float32 ``x`` rounded to ``dtype``'s precision, still as float32 (``out`` may be
    ``x`` when ``x`` is a temporary)."""
    if dtype is DType.F32:
        return x.astype(np.float32, copy=False)
    if dtype is DType.F16:
        return round_f16(np.ascontiguousarray(x, dtype=np.float32), out)
    return x.astype(np_dtype(dtype)).astype(np.float32)


@dataclass(frozen=True)
class Widened:
    """A value of a narrow float ``dtype`` held as float32 (each element representable)."""

    wide: np.ndarray
    dtype: DType

    def narrow(self) -> np.ndarray:
        if self.dtype is DType.F16:
            return to_float16(self.wide)
        return self.wide.astype(np_dtype(self.dtype))


def stored(out: Any, dtype: DType, temporary: bool = False) -> np.ndarray | Widened:
    """A computed result (float32, int64 or bool) in ``dtype``: rounded or wrapped.

    ``temporary``: ``out`` is a fresh array nothing else uses (rounded in place).
    """
    if dtype is DType.F16:
        wide = np.asarray(out)
        reuse = temporary and wide.dtype == np.float32 and wide.flags.c_contiguous
        return Widened(round_to(wide, dtype, wide if reuse else None), dtype)
    return np.asarray(out).astype(np_dtype(dtype), copy=False)


def convert_scalar(x: Any, dtype: DType, loc: Loc) -> Any:
    """A number (or per-point array) converted to ``dtype``'s storage type."""
    nd = np_dtype(dtype)
    if dtype.is_int:
        arr = np.asarray(x, dtype=np.float64 if isinstance(x, float) else None)
        if arr.dtype.kind == "f":
            if not np.isfinite(arr).all():
                raise ExecutionError(f"{x} does not convert to {dtype.value}", loc)
            arr = np.trunc(arr)
        out = arr.astype(np.int64).astype(nd)
    else:
        out = np.asarray(x).astype(nd)
    return out if out.ndim else out[()]


def nan_of(dtype: DType) -> Any:
    """The fill value of fresh memory: NaN, or the documented poison for integers."""
    return POISON.get(dtype, np.nan)


POISON: dict[DType, Any] = {
    DType.I32: np.iinfo(np.int32).min,
    DType.I8: np.iinfo(np.int8).min,
    DType.U8: np.iinfo(np.uint8).max,
    DType.BOOL: True,
}
"""Fill of fresh integer/bool memory (outputs, scratch, queue slots): INT32_MIN, 255, True."""
