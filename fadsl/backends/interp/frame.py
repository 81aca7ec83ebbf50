"""Runtime state of the interpreter: batched frames, global memory and queue slots.

The grid body runs once for all grid points at the same time. A ``Frame`` is the
environment of one such batched run over ``n`` points: every tile value is a numpy
array of shape ``[n, *tile_shape]`` in the value's IR dtype, or ``[1, *tile_shape]``
when it is the same at every point (constants, masks that only depend on the loop
variable). Scalar symbols are Python numbers (uniform) or int64 arrays ``[n]``.

Frames nest. A child frame covers a selection of its parent's points (``sel``: None for
the same points, a slice for a contiguous run, an index array for a gather). Values and
symbols of enclosing frames are looked up lazily and restricted to the child's points on
first use, then memoised in the child: a loop-invariant tile is gathered once per loop,
not once per iteration, and a slice selection costs nothing (a numpy view).

Queue slots (``QueueAlloc`` ...) are the only mutable state besides global memory. A
queue's slot memory is per grid point: ``mem[buffers, n, *tile]`` with a status per slot.
Children see their parent's queue state through views (slices) or gathered copies
(index arrays) that are written back when the child frame closes. A queue tensor value
(from ``AllocTensor``, ``Dequeue`` or ``Load(into=...)``) is a ``Handle`` naming a slot;
reading it reads the slot's current memory, so a use after ``FreeTensor`` reads NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fadsl.errors import ExecutionError, Loc
from fadsl.ir.expr import Expr, compile_expr
from fadsl.ir.nodes import Kernel, Param, Value
from fadsl.ir.types import DType
from fadsl.numerics import np_dtype

Selection = slice | np.ndarray | None

FREE, HELD, QUEUED = 0, 1, 2
"""Slot states: free, held by the core (allocated or dequeued), waiting in the FIFO."""


def to_f32(x: np.ndarray) -> np.ndarray:
    """``x`` as float32 (exact for f16/bf16/fp8; a no-op for float32)."""
    if x.dtype == np.float32:
        return x
    return x.astype(np.float32)


def take(x: Any, sel: Selection) -> Any:
    """Restrict a batched value (array, symbol array or Handle) to the points ``sel``."""
    if sel is None:
        return x
    if isinstance(x, np.ndarray):
        if x.ndim == 0 or x.shape[0] == 1:
            return x
        return x[sel]
    if isinstance(x, Handle) and isinstance(x.slot, np.ndarray):
        return Handle(x.queue, x.slot[sel])
    return x


@dataclass
class LoopStats:
    """Per loop variable: iterations executed and iterations of the bounding rectangle."""

    executed: int = 0
    rectangle: int = 0


@dataclass
class Machine:
    """State shared by every frame of one ``interpret`` call."""

    kernel: Kernel
    params: dict[str, Param]
    gm: dict[str, np.ndarray]
    loop_stats: dict[str, LoopStats] = field(default_factory=dict)
    _gm_f32: dict[str, np.ndarray] = field(default_factory=dict)
    _enqueue_count: int = 0

    def gm_f32(self, name: str) -> np.ndarray:
        """A float32 copy of input ``name`` (inputs are never written), made once."""
        found = self._gm_f32.get(name)
        if found is None:
            found = to_f32(self.gm[name])
            self._gm_f32[name] = found
        return found

    def next_seq(self) -> int:
        self._enqueue_count += 1
        return self._enqueue_count

    def stats(self, var: str) -> LoopStats:
        found = self.loop_stats.get(var)
        if found is None:
            found = self.loop_stats[var] = LoopStats()
        return found


# ----------------------------------------------------------------------------
# Queues
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueRef:
    """The runtime identity of one executed ``QueueAlloc``."""

    name: str
    dtype: DType
    tile_shape: tuple[int, ...]
    buffers: int
    key: object = field(default_factory=object, compare=False)


@dataclass(frozen=True)
class Handle:
    """A queue tensor: the slot it occupies at each point (int: the same everywhere)."""

    queue: QueueRef
    slot: int | np.ndarray


@dataclass
class QueueState:
    """Slots of one queue for the points of one frame."""

    mem: np.ndarray
    """[buffers, n, *tile] slot memory."""
    status: np.ndarray
    """[buffers, n] FREE / HELD / QUEUED."""
    seq: np.ndarray
    """[buffers, n] enqueue order of QUEUED slots (FIFO)."""

    @staticmethod
    def fresh(ref: QueueRef, n: int) -> QueueState:
        mem = np.full((ref.buffers, n, *ref.tile_shape), nan_of(ref.dtype), np_dtype(ref.dtype))
        status = np.full((ref.buffers, n), FREE, np.int8)
        return QueueState(mem, status, np.zeros((ref.buffers, n), np.int64))

    def select(self, sel: Selection) -> QueueState:
        if sel is None:
            return self
        return QueueState(self.mem[:, sel], self.status[:, sel], self.seq[:, sel])

    def broadcast(self, n: int) -> QueueState:
        def rep(a: np.ndarray) -> np.ndarray:
            return np.repeat(a, n, axis=1)

        return QueueState(rep(self.mem), rep(self.status), rep(self.seq))

    def write_back(self, parent: QueueState, sel: np.ndarray) -> None:
        parent.mem[:, sel] = self.mem
        parent.status[:, sel] = self.status
        parent.seq[:, sel] = self.seq


def nan_of(dtype: DType) -> Any:
    """The fill value of fresh memory: NaN, or the documented poison for integers."""
    return POISON.get(dtype, np.nan)


POISON: dict[DType, Any] = {
    DType.I32: np.iinfo(np.int32).min,
    DType.U8: np.iinfo(np.uint8).max,
    DType.BOOL: True,
}
"""Fill of fresh integer/bool memory (outputs, scratch, queue slots): INT32_MIN, 255, True."""


# ----------------------------------------------------------------------------
# Frames
# ----------------------------------------------------------------------------


class Symbols(Mapping[str, Any]):
    """Scalar symbols of a frame, looked up lazily in the enclosing frames' symbols."""

    __slots__ = ("parent", "sel", "local")

    def __init__(self, parent: Symbols | None, sel: Selection, local: dict[str, Any]) -> None:
        self.parent = parent
        self.sel = sel
        self.local = local

    def __getitem__(self, name: str) -> Any:
        found = self.local.get(name, _MISSING)
        if found is not _MISSING:
            return found
        if self.parent is None:
            raise KeyError(name)
        found = take(self.parent[name], self.sel)
        self.local[name] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.local)

    def __len__(self) -> int:
        return len(self.local)


_MISSING = object()


class Frame:
    """Values, symbols and queue states of one batched run over ``n`` points."""

    __slots__ = (
        "machine", "parent", "sel", "n", "fork", "point_vars", "_vals", "_shadows",
        "_recipes", "syms", "_queues", "_gathered",
    )

    def __init__(
        self,
        machine: Machine,
        parent: Frame | None,
        sel: Selection,
        n: int,
        syms: dict[str, Any] | None = None,
        point_vars: tuple[str, ...] = (),
        fork: bool = False,
    ) -> None:
        self.machine = machine
        self.parent = parent
        self.sel = sel
        self.n = n
        self.fork = fork
        """A grid frame: n points forked from a 1-point parent; queue state is copied."""
        self.point_vars = point_vars
        self._vals: dict[Value, Any] = {}
        self._shadows: dict[Value, np.ndarray] = {}
        self._recipes: dict[Value, Callable[[], np.ndarray]] = {}
        parent_syms = parent.syms if parent is not None else None
        self.syms = Symbols(parent_syms, sel, dict(syms or {}))
        self._queues: dict[object, QueueState] = {}
        self._gathered: list[tuple[object, QueueState]] = []

    def child(
        self, sel: Selection, n: int, syms: dict[str, Any] | None = None,
        point_vars: tuple[str, ...] = (),
    ) -> Frame:
        return Frame(self.machine, self, sel, n, syms, self.point_vars + point_vars)

    # -- values ----------------------------------------------------------------

    def raw(self, v: Value) -> Any:
        """The stored entry of ``v``: an array, a Handle or a QueueRef."""
        found = self._vals.get(v, _MISSING)
        if found is not _MISSING:
            return found
        if self.parent is None:
            raise KeyError(v.name)
        found = take(self.parent.raw(v), self.sel)
        self._vals[v] = found
        return found

    def val(self, v: Value) -> Any:
        """The current contents of ``v`` (a queue tensor reads its slot now)."""
        found = self.raw(v)
        if isinstance(found, Handle):
            return self.read_slot(found)
        return found

    def set(self, v: Value, x: Any) -> None:
        self._vals[v] = x

    def define(self, name: str, x: Any) -> None:
        """Bind scalar symbol ``name`` (LoadScalar) for this frame and its children."""
        self.syms.local[name] = x

    def set_recipe(self, v: Value, make_f32: Callable[[], np.ndarray]) -> None:
        """A cheaper way to get ``v`` as float32 than converting it (see ``f32``)."""
        self._recipes[v] = make_f32

    def f32(self, v: Value) -> np.ndarray:
        """``v`` as float32, converted once per frame (loop invariants once per loop)."""
        found = self._shadows.get(v)
        if found is not None:
            return found
        raw = self.raw(v)
        if isinstance(raw, Handle):
            return to_f32(self.read_slot(raw))
        if raw.dtype == np.float32:
            return raw
        if v in self._vals and self.parent is not None and not self._is_local(v):
            found = take(self.parent.f32(v), self.sel)
        else:
            recipe = self._recipes.pop(v, None)
            found = recipe() if recipe is not None else to_f32(raw)
        self._shadows[v] = found
        return found

    def _is_local(self, v: Value) -> bool:
        """Whether ``v`` was defined in this frame (not memoised from a parent)."""
        parent = self.parent
        while parent is not None:
            if v in parent._vals:
                return False
            parent = parent.parent
        return True

    # -- scalars ---------------------------------------------------------------

    def scalar(self, e: Expr, loc: Loc) -> Any:
        """Value of a scalar expression: a Python number or an array [n] per point."""
        try:
            return compile_expr(e)(self.syms)
        except KeyError as exc:
            raise ExecutionError(
                f"symbol `{exc.args[0]}` has no value",
                loc,
                hint="pass every shape symbol, tile constant and scalar in `env`",
            ) from None

    def int_scalar(self, e: Expr, loc: Loc, what: str) -> int | np.ndarray:
        """An integer expression: a Python int, or an int64 array [n] if it varies."""
        x = self.scalar(e, loc)
        if isinstance(x, np.ndarray):
            x = x.astype(np.int64, copy=False)
            if x.size and (x == x.flat[0]).all():
                return int(x.flat[0])
            return np.broadcast_to(x, (self.n,))
        if isinstance(x, float) and not x.is_integer():
            raise ExecutionError(f"{what} is {x}, not an integer", loc)
        return int(x)

    def static_int(self, e: Expr, loc: Loc, what: str) -> int:
        """An integer that must be the same at every point (a tile size, a grid extent)."""
        x = self.int_scalar(e, loc, what)
        if isinstance(x, np.ndarray):
            raise ExecutionError(f"{what} differs between grid points", loc,
                                 hint="tile sizes and grid extents must not depend on "
                                 "grid or loop variables")
        return x

    def describe_point(self, pos: int) -> str:
        """``b=0, h=3, i=7, j=5`` for point ``pos`` of this frame."""
        parts = []
        for name in self.point_vars:
            x = self.syms[name]
            if isinstance(x, np.ndarray):
                x = x[pos] if x.shape[0] > 1 else x[0]
            parts.append(f"{name}={int(x)}")
        return ", ".join(parts) if parts else "outside the grid"

    # -- queues ----------------------------------------------------------------

    def new_queue(self, ref: QueueRef) -> None:
        self._queues[ref.key] = QueueState.fresh(ref, self.n)

    def queue(self, ref: QueueRef) -> QueueState:
        found = self._queues.get(ref.key)
        if found is not None:
            return found
        if self.parent is None:
            raise KeyError(ref.name)
        parent_state = self.parent.queue(ref)
        if self.fork:
            found = parent_state.broadcast(self.n)
        else:
            found = parent_state.select(self.sel)
            if isinstance(self.sel, np.ndarray):
                self._gathered.append((ref, found))
        self._queues[ref.key] = found
        return found

    def read_slot(self, h: Handle) -> np.ndarray:
        state = self.queue(h.queue)
        if isinstance(h.slot, int):
            return state.mem[h.slot]
        return state.mem[h.slot, np.arange(self.n)]

    def close(self) -> None:
        """Write queue states gathered from the parent (index selections) back to it."""
        if not self._gathered:
            return
        assert self.parent is not None and isinstance(self.sel, np.ndarray)
        for ref, state in self._gathered:
            state.write_back(self.parent.queue(ref), self.sel)
        self._gathered.clear()
