"""Runtime state of the interpreter: batched frames, global memory and queue slots.

The grid body runs once for all grid points at the same time. A ``Frame`` is the
environment of one such batched run. Its batch has one axis per grid dimension
(``bshape``, e.g. ``(B, N, cdiv(Sq, block_q))``), and every tile value is a numpy array
``[*batch, *tile_shape]`` in the value's IR dtype whose batch axes are either full or 1
where the value does not depend on that grid variable: a K tile loaded at ``k[b, h, ...]``
is ``[B, N, 1, block_kv, D]``, a constant is ``[1, 1, 1, ...]``. numpy broadcasting does
the rest. Scalar symbols are Python numbers or int64 arrays with the batch's rank.

Frames nest. A child frame sees its parent's points through a transform: ``None`` (the
same points), ``Along`` (a selection along one batch axis: a slice is a view, an index
array a gather), ``Flat`` (points picked by flat index; the child has one batch axis)
or ``Fork`` (a grid's axes added in front of the batch-less top level). Values and
symbols of enclosing frames are transformed lazily on first use and memoised in the
child, so a loop-invariant tile is gathered once per loop, not once per iteration.

Queue slots (``QueueAlloc`` ...) are the only mutable state besides global memory. A
queue has per-point slots (``slots.py``). Children see their parent's queue state
through views or gathered copies, and hand their changes back when they close. A queue tensor value (from ``AllocTensor``,
``Dequeue`` or ``Load(into=...)``) is a ``Handle`` naming a slot; reading it reads the
slot's current memory, so a use after ``FreeTensor`` reads NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import sys

import numpy as np

from fadsl.backends.interp.batch import Along, Flat, Transform
from fadsl.backends.interp.machine import Machine, Path
from fadsl.backends.interp.slots import Handle, QueueRef, QueueState
from fadsl.backends.interp.storage import Widened, to_f32
from fadsl.errors import ExecutionError, InternalError, Loc
from fadsl.ir.expr import Expr, compile_expr
from fadsl.ir.nodes import Value


def take(x: Any, tr: Transform) -> Any:
    """Restrict a batched value (array, symbol array or Handle) to a child's points."""
    if tr is None:
        return x
    if isinstance(x, np.ndarray):
        return tr.take(x)
    if isinstance(x, Widened):
        return Widened(tr.take(x.wide), x.dtype)
    if isinstance(x, Handle) and isinstance(x.slot, np.ndarray):
        return Handle(x.queue, tr.take(x.slot))
    return x


def agreed(x: np.ndarray) -> int | np.ndarray:
    """An int64 array as a Python int if it is the same at every point."""
    if x.size and (x == x.flat[0]).all():
        return int(x.flat[0])
    return x


class Symbols(Mapping[str, Any]):
    """Scalar symbols of a frame, looked up lazily in the enclosing frames' symbols."""

    __slots__ = ("parent", "tr", "local")

    def __init__(
        self, parent: Symbols | None, tr: Transform, local: dict[str, Any]
    ) -> None:
        self.parent = parent
        self.tr = tr
        self.local = local

    def __getitem__(self, name: str) -> Any:
        found = self.local.get(name, _MISSING)
        if found is not _MISSING:
            return found
        if self.parent is None:
            raise KeyError(name)
        found = take(self.parent[name], self.tr)
        self.local[name] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.local)

    def __len__(self) -> int:
        return len(self.local)


_MISSING = object()


class Frame:
    """Values, symbols and queue states of one batched run over ``bshape`` points."""

    __slots__ = (
        "machine",
        "parent",
        "tr",
        "bshape",
        "point_vars",
        "path",
        "_vals",
        "_shadows",
        "_recipes",
        "syms",
        "_queues",
        "_gathered",
        "_defined",
        "dying",
        "collectors",
    )

    def __init__(
        self,
        machine: Machine,
        parent: Frame | None,
        tr: Transform,
        bshape: tuple[int, ...],
        syms: dict[str, Any] | None = None,
        point_vars: tuple[str, ...] = (),
    ) -> None:
        self.machine = machine
        self.parent = parent
        self.tr = tr
        self.bshape = bshape
        self.point_vars = point_vars
        self.path: Path = parent.path if parent is not None else ()
        """The loop iterations this frame runs in (set by the loop impl)."""
        """Grid and loop variables that name a point in error messages."""
        self._vals: dict[Value, Any] = {}
        self._shadows: dict[Value, np.ndarray] = {}
        self._recipes: dict[Value, Callable[[], np.ndarray]] = {}
        parent_syms = parent.syms if parent is not None else None
        self.syms = Symbols(parent_syms, tr, dict(syms or {}))
        self._queues: dict[object, QueueState] = {}
        self._gathered: list[tuple[QueueRef, QueueState]] = []
        self._defined: set[Value] = set()
        self.dying: tuple[Value, ...] = ()
        """Values whose last use is the op running now (set by ``run_block``)."""
        self.collectors: Sequence[np.ndarray | None] = ()
        """The list in which a shrinking loop holds (once) the arrays that collect its
        final values, updated in place through views (see ``donate``); the list adds
        one reference to each, however many frames see it."""

    @property
    def k(self) -> int:
        """Number of batch axes."""
        return len(self.bshape)

    def child(
        self,
        tr: Transform,
        bshape: tuple[int, ...],
        syms: dict[str, Any] | None = None,
        point_vars: tuple[str, ...] = (),
    ) -> Frame:
        return Frame(self.machine, self, tr, bshape, syms, self.point_vars + point_vars)

    # -- values ----------------------------------------------------------------

    def raw(self, v: Value) -> Any:
        """The stored entry of ``v``: an array, a Handle or a QueueRef."""
        found = self._vals.get(v, _MISSING)
        if found is not _MISSING:
            return found
        if self.parent is None:
            raise InternalError(f"%{v.name} is used before it is defined")
        found = take(self.parent.raw(v), self.tr)
        self._vals[v] = found
        return found

    def val(self, v: Value) -> Any:
        """The stored contents of ``v`` in its dtype (a queue tensor reads its slot now)."""
        found = self.raw(v)
        if isinstance(found, Handle):
            return self.read_slot(found)
        if isinstance(found, Widened):
            narrow = found.narrow()
            self._vals[v] = narrow
            self._shadows[v] = found.wide
            return narrow
        return found

    def set(self, v: Value, x: Any) -> None:
        self._vals[v] = x
        self._defined.add(v)

    def donate(self, v: Any, held: Any, shape: tuple[int, ...]) -> np.ndarray | None:
        """``held``, the float32 array of ``v``, if the running op may overwrite it with
        its result: ``v`` dies at this op, was defined in this frame, has ``shape``, and
        nothing else refers to its memory (no other view, no loop driver). ``held`` may
        be a view of an array that nothing else holds: a causal loop's carried values
        are the running rows of the previous iteration's results."""
        if not isinstance(v, Value) or v not in self.dying or v not in self._defined:
            return None
        if (
            type(held) is not np.ndarray
            or self._vals.get(v) is not held
            or held.dtype != np.float32
            or held.shape != shape
            or not held.flags.writeable
        ):
            return None
        # references: the frame's dict, the caller's local, this argument, getrefcount's
        if sys.getrefcount(held) > 4 + self._collected(held):
            return None
        base = held.base
        if base is None:
            return held if held.flags.c_contiguous else None
        # references to the owner: held.base, the local `base`, getrefcount's argument
        if type(base) is not np.ndarray or sys.getrefcount(base) > 3 + self._collected(
            base
        ):
            return None
        return held

    def _collected(self, x: np.ndarray) -> int:
        """1 if a loop holds ``x`` to collect final values (one more reference), else 0."""
        return int(any(c is x for c in self.collectors))

    def release(self, dead: Sequence[Value]) -> None:
        """Forget values that are not used any more, so their memory can be reused."""
        for v in dead:
            self._vals.pop(v, None)
            self._shadows.pop(v, None)
            self._recipes.pop(v, None)

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
        if isinstance(raw, Widened):
            return raw.wide
        if raw.dtype == np.float32:
            return raw
        if self.parent is not None and not self._is_local(v):
            found = take(self.parent.f32(v), self.tr)
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
        """Value of a scalar expression: a Python number or an array per point."""
        try:
            return compile_expr(e)(self.syms)
        except KeyError as exc:
            raise ExecutionError(
                f"symbol `{exc.args[0]}` has no value",
                loc,
                hint="pass every shape symbol, tile constant and scalar in `env`",
            ) from None

    def int_scalar(
        self, e: Expr, loc: Loc, what: str, collapse: bool = True
    ) -> int | np.ndarray:
        """An integer expression: a Python int, or an int64 array (batch rank) if it
        varies (or, without ``collapse``, if it is an array at all)."""
        x = self.scalar(e, loc)
        if isinstance(x, np.ndarray):
            if x.dtype.kind == "f" and not (x == np.trunc(x)).all():
                raise ExecutionError(f"{what} is not an integer", loc)
            x = x.astype(np.int64, copy=False)
            if collapse and isinstance(x := agreed(x), int):
                return x
            if x.ndim != self.k:
                raise InternalError(
                    f"{what} has {x.ndim} batch axes, expected {self.k}"
                )
            return x
        if isinstance(x, float) and not x.is_integer():
            raise ExecutionError(f"{what} is {x}, not an integer", loc)
        return int(x)

    def static_int(self, e: Expr, loc: Loc, what: str) -> int:
        """An integer that must be the same at every point (a tile size, a grid extent)."""
        x = self.int_scalar(e, loc, what)
        if isinstance(x, np.ndarray):
            raise ExecutionError(
                f"{what} differs between grid points",
                loc,
                hint="tile sizes and grid extents must not depend on "
                "grid or loop variables",
            )
        return x

    def describe(self, bad: np.ndarray | bool) -> str:
        """``b=0, h=3, i=7, j=5``: the first point where ``bad`` (batch-shaped) holds."""
        bad = np.asarray(bad)
        if bad.ndim:
            pos = np.unravel_index(int(np.argmax(bad)), bad.shape)
        else:  # the same at every point: name the first one
            pos = (0,) * self.k
        parts = []
        for name in self.point_vars:
            x = self.syms[name]
            if isinstance(x, np.ndarray):
                x = x[tuple(p if x.shape[a] > 1 else 0 for a, p in enumerate(pos))]
            parts.append(f"{name}={int(x)}")
        return ", ".join(parts) if parts else "outside the grid"

    # -- queues ----------------------------------------------------------------

    def new_queue(self, ref: QueueRef) -> None:
        self._queues[ref.key] = QueueState.fresh(ref, self.bshape)

    def queue(self, ref: QueueRef) -> QueueState:
        found = self._queues.get(ref.key)
        if found is not None:
            return found
        if self.parent is None:
            raise InternalError(f"queue %{ref.name} is used outside its scope")
        found = self.parent.queue(ref).select(self.tr, self.bshape)
        if isinstance(self.tr, (Along, Flat)):
            self._gathered.append((ref, found))
        self._queues[ref.key] = found
        return found

    def read_slot(self, h: Handle) -> np.ndarray:
        return self.queue(h.queue).read(h.slot)

    def close(self) -> None:
        """Give the parent frame what this frame changed in its queues."""
        for ref, state in self._gathered:
            assert self.parent is not None and isinstance(self.tr, (Along, Flat))
            state.write_back(self.parent.queue(ref), self.tr)
        self._gathered.clear()
