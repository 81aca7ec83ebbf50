"""The dtype names of the DSL (``fd.f16``, ``fd.f32`` ...) and ``fd.inf``: light, so
that ``import fadsl`` and the annotations of ``@fd.kernel`` need no sympy."""

from __future__ import annotations

import math

from fadsl.ir.dtype import DType

f16 = DType.F16
bf16 = DType.BF16
f32 = DType.F32
i32 = DType.I32
i8 = DType.I8
bool_ = DType.BOOL
float8_e4m3 = DType.F8E4M3
float8_e5m2 = DType.F8E5M2
inf = math.inf
