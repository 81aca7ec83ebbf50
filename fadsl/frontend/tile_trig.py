"""``fd.sin`` / ``fd.cos`` of a tile (``fd.cos(q_idx * theta)``): a vector-unit sequence.

The vector unit has no sine instruction, so the frontend writes one out of tile ops
the backends already lower with documented level-2 API (Muls, Adds, Sub, Mul, and
Cast with CAST_FLOOR for ``fd.floor``), each an f32 tile the resource checker counts,
with its own instruction counts and cost:

* reduction by pi: ``x = k pi + r`` with ``k = n`` (sin) or ``n + 1/2`` (cos) for an
  integer ``n``, ``|r| <= pi / 2``; pi in three parts (Cody and Waite), the first two
  short enough that ``k`` times them is exact for ``|x| < 1e4``;
* ``sin r`` by an odd degree-11 polynomial fitted (least squares) to sin on
  [-pi/2, pi/2]; the whole sequence in f32 is within 1.3e-7 absolute, 2 units in the
  last place where |sin| > 0.01, for |x| < 1e4 (tests/variants/test_mod_trig_tiles.py;
  beyond, the reduction's error grows with |x|);
* the sign ``(-1)^n`` as ``1 - 2 (n - 2 floor(n / 2))``; cos is ``-(-1)^n sin r``.

The interpreter runs the same ops in f32; a mod's float64 reference stays numpy's.
The floors of the reduction are integral steps, derivative 0 where defined: the
backward (mod_grad.py, mod_tensor_grad.py) reads them as constants
(``is_reduction_floor``), so it differentiates the polynomial in ``r``.
"""

from __future__ import annotations

import math
from weakref import WeakKeyDictionary

from fadsl.frontend import ops
from fadsl.frontend import tile_ops as t
from fadsl.ir.types import DType

PI_A = 3.140625
"""pi's first part: 8 significant bits."""
PI_B = 0.0009675025939941406
"""pi's second part: 11 significant bits."""
PI_C = math.pi - PI_A - PI_B
"""The rest (an f32 constant: its product with k is rounded once)."""
SIN_Z = (
    -1.66666666e-01,
    8.33333132e-03,
    -1.98409034e-04,
    2.75273608e-06,
    -2.39250916e-08,
)
"""sin r = r + r z (c1 + z (c2 + ...)), z = r^2: least squares on [0, pi/2]."""


_FLOORS: WeakKeyDictionary[object, set[str]] = WeakKeyDictionary()
"""Per builder: the names of the floor results this module emitted."""


def _floor(x: ops.Tile) -> ops.Tile:
    n = t.floor(x)
    if isinstance(n, ops.Tile):
        _FLOORS.setdefault(ops.current().builder, set()).add(n.value.name)
    return n


def is_reduction_floor(op: object) -> bool:
    """Whether ``op`` is a floor of sin / cos's reduction in the open kernel."""
    from fadsl.ir import nodes as ir

    if not isinstance(op, ir.Floor):
        return False
    return op.result.name in _FLOORS.get(ops.current().builder, set())


def _sin_reduced(r: ops.Tile) -> ops.Tile:
    z = r * r
    p = z * SIN_Z[-1] + SIN_Z[-2]
    for c in reversed(SIN_Z[:-2]):
        p = p * z + c
    return r + r * (z * p)


def _parity_sign(n: ops.Tile) -> ops.Tile:
    """(-1)^n for an integral f32 tile n: 1 - 2 (n - 2 floor(n / 2))."""
    odd = n - _floor(n * 0.5) * 2.0
    return odd * -2.0 + 1.0


def sin_cos(x: ops.Tile, cos: bool) -> ops.Tile:
    """sin(x) or cos(x) of a tile, in f32 (of a float32 numpy array: the same sequence
    in numpy, which is how its accuracy is measured)."""
    if isinstance(x, ops.Tile) and x.dtype is not DType.F32:
        x = t.cast(x, DType.F32)
    if cos:
        n = _floor(x * (1.0 / math.pi))
        k = n + 0.5
    else:
        n = _floor(x * (1.0 / math.pi) + 0.5)
        k = n
    r = ((x - k * PI_A) - k * PI_B) - k * PI_C
    s = _sin_reduced(r) * _parity_sign(n)
    return s * -1.0 if cos else s
