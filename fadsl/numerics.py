"""When an output is right: the tolerance rule (as in FlashAttention's tests), numpy dtypes.

An output passes against a float64 reference when

    max|out - ref| <= 2 * max|out_same - ref| + atol

where ``out_same`` is a plain (non-tiled) computation in the kernel's input dtype with
fp32 accumulation, and ``atol`` is the rounding noise of the output dtype at the
reference's magnitude, ``2 * max|(x + 0.3 - 0.3) - x|`` computed in that dtype
(FlashAttention 3's ``fwd_atol``) over the reference's elements and evenly spaced
magnitudes up to its largest (``atol_for``). NaN anywhere fails; infinities must match the
reference's (fully masked rows give -inf LSE).
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from fadsl.ir.types import DType

RTOL_FACTOR = 2.0


_NUMPY_DTYPES = (DType.F16, DType.F32, DType.I32, DType.I8, DType.U8, DType.BOOL)
"""The dtypes numpy has itself (the others come from ml_dtypes)."""


def np_dtype(dtype: DType) -> np.dtype:
    """The numpy storage dtype of an IR dtype (bf16 and fp8 through ml_dtypes)."""
    if dtype is DType.F16:
        return np.dtype(np.float16)
    if dtype is DType.F32:
        return np.dtype(np.float32)
    if dtype is DType.I32:
        return np.dtype(np.int32)
    if dtype is DType.I8:
        return np.dtype(np.int8)
    if dtype is DType.U8:
        return np.dtype(np.uint8)
    if dtype is DType.BOOL:
        return np.dtype(np.bool_)
    import ml_dtypes

    return np.dtype(
        {
            DType.BF16: ml_dtypes.bfloat16,
            DType.F8E4M3: ml_dtypes.float8_e4m3fn,
            DType.F8E5M2: ml_dtypes.float8_e5m2,
        }[dtype]
    )


def dtype_of_name(name: str) -> DType:
    """IR dtype from a numpy dtype name as written in meta.json (numpy's own dtypes
    first: ml_dtypes is imported only for the others)."""
    for d in sorted(DType, key=lambda d: d not in _NUMPY_DTYPES):
        try:
            if np_dtype(d).name == name:
                return d
        except KeyError:
            continue
    return DType.parse(name)


@dataclass(frozen=True)
class Verdict:
    """Errors of one output against its reference and the pass/fail decision."""

    name: str
    max_abs: float
    mean_abs: float
    max_rel: float
    nan_count: int
    inf_mismatch: int
    bound: float
    """The allowed max|out - ref| (2 * same-precision error + atol)."""
    same_precision_error: float | None
    atol: float
    passed: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """The figures that decide PASS/FAIL: max|err| against the bound, how the
        bound is made, and any NaN or infinity that fails the output by itself.
        (mean|err| and max_rel are in as_dict() / meta.json, not here: a relative
        error is huge wherever the reference is near 0 and decides nothing.)"""
        status = "PASS" if self.passed else "FAIL"
        holds = "<=" if self.max_abs <= self.bound else ">"
        if self.same_precision_error is None:
            made = f"atol {self.atol:.3e}"
        else:
            made = (
                f"{RTOL_FACTOR:g} x same-precision error "
                f"{self.same_precision_error:.3e} + atol {self.atol:.3e}"
            )
        text = (
            f"{self.name}: max|err| {self.max_abs:.3e} {holds} bound {self.bound:.3e}"
        )
        text += f" = {made}"
        if self.nan_count:
            text += f"; {self.nan_count} NaN"
        if self.inf_mismatch:
            text += f"; {self.inf_mismatch} infinities not in the reference"
        return f"{text}  {status}"


ATOL_GRID = 8193
"""Magnitudes ``atol_for`` samples between -max|ref| and max|ref| besides ``ref``."""


def atol_for(ref: np.ndarray, dtype: DType) -> float:
    """Rounding noise of ``dtype`` at the magnitude of ``ref`` (FA3's fwd_atol).

    FA3 measures it as ``2 * max|(ref + 0.3 - 0.3) - ref|`` in ``dtype``, a maximum
    over the output's elements: over the many elements of an attention output it is
    close to its supremum over every magnitude up to ``max|ref|``, but over a few (one
    LSE per row and head: a decode step has B * N of them) it falls anywhere below,
    to 0 for values that survive the round trip, and the rule then demanded less than
    one rounding of the output (issue 28: a paged decode's own seeded check failed by
    0.05%). So the same formula is also taken over ``ATOL_GRID`` evenly spaced
    magnitudes in ``[-max|ref|, max|ref|]``: never less than FA3's value on ``ref``,
    and the same for a large output."""
    finite = np.where(np.isfinite(ref), ref, 0.0).astype(np.float64).ravel()
    if finite.size == 0:
        return 0.0
    top = float(np.max(np.abs(finite)))
    grid = np.linspace(-top, top, ATOL_GRID)
    return max(_round_trip(finite, dtype), _round_trip(grid, dtype))


def _round_trip(x: np.ndarray, dtype: DType) -> float:
    """``2 * max|(x + 0.3 - 0.3) - x|`` computed in ``dtype``."""
    nd = np_dtype(dtype)
    shifted = (x.astype(nd) + nd.type(0.3)).astype(nd) - nd.type(0.3)
    return float(2.0 * np.max(np.abs(shifted.astype(np.float64) - x)))


def compare(
    name: str,
    out: np.ndarray,
    ref: np.ndarray,
    same: np.ndarray | None,
    dtype: DType,
    same_error: float | None = None,
) -> Verdict:
    """Apply the tolerance rule to ``out`` (any dtype) against float64 ``ref``.

    ``same`` is the same-precision reference output; ``same_error`` may be given
    instead (as recorded in a run's meta.json).
    """
    o = np.asarray(out).astype(np.float64)
    r = np.asarray(ref).astype(np.float64)
    if o.shape != r.shape:
        raise ValueError(f"{name}: shape {o.shape} vs reference {r.shape}")
    nan_count = int(np.isnan(o).sum())
    inf_mismatch = int(
        np.sum(np.isinf(o) != np.isinf(r))
        + np.sum(np.isinf(o) & np.isinf(r) & (np.sign(o) != np.sign(r)))
    )
    both = np.isfinite(o) & np.isfinite(r)
    diff = np.abs(o[both] - r[both])
    max_abs = float(diff.max()) if diff.size else 0.0
    mean_abs = float(diff.mean()) if diff.size else 0.0
    denom = np.maximum(np.abs(r[both]), 1e-6)
    max_rel = float((diff / denom).max()) if diff.size else 0.0
    if same is not None:
        s = np.asarray(same).astype(np.float64)
        ok = np.isfinite(s) & np.isfinite(r)
        same_error = float(np.abs(s[ok] - r[ok]).max()) if ok.any() else 0.0
    atol = atol_for(r, dtype)
    bound = RTOL_FACTOR * (same_error or 0.0) + atol
    passed = nan_count == 0 and inf_mismatch == 0 and max_abs <= bound
    return Verdict(
        name,
        max_abs,
        mean_abs,
        max_rel,
        nan_count,
        inf_mismatch,
        bound,
        same_error,
        atol,
        passed,
    )


def quantize(x: np.ndarray, dtype: DType) -> np.ndarray:
    """Round float64 data to ``dtype`` and back (for same-precision references)."""
    return np.asarray(x).astype(np_dtype(dtype)).astype(np.float64)


def to_float16(x: np.ndarray) -> np.ndarray:
    """``x.astype(np.float16)``, bit for bit, about twice as fast for float32 arrays.

    numpy converts float32 to float16 one element at a time. ml_dtypes' ``complex32``
    (two float16 halves) converts from complex64 in compiled code with the same
    rounding (to nearest even, overflow to inf), so pairs of float32 values are viewed
    as complex64. NaN payloads are the one difference, so a result holding any inf or
    NaN is made again by numpy (they are rare in data: random inputs, outputs).

    Only once something else has imported ml_dtypes (bf16 or fp8 data): importing it
    costs 1.4 s of CPU (ml_dtypes 0.7 registers its casts at import), far more than it
    saves here (about 30 ms on the 32 MB inputs of FA2 at S=4096; issue 32).
    """
    halves = _complex32()
    if (
        halves is None
        or x.dtype != np.float32
        or x.size % 2
        or not x.flags.c_contiguous
    ):
        return x.astype(np.float16)
    out = x.reshape(-1).view(np.complex64).astype(halves).view(np.float16)
    if out.size and np.bitwise_and(out.view(np.uint16), 0x7C00).max() == 0x7C00:
        return x.astype(np.float16)
    return out.reshape(x.shape)


def _complex32() -> Any:
    ml_dtypes = sys.modules.get("ml_dtypes")
    return getattr(ml_dtypes, "complex32", None)  # ml_dtypes >= 0.5
