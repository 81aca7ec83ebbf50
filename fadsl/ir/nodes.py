"""IR nodes: frozen, typed, one class per op, each with its numpy meaning and type rule.

A Kernel holds parameters and a body of statements. Statements are ops. Ops that
produce a tile have a ``result`` Value; ``infer(ctx)`` computes that result's type
from the operands alone and raises ShapeError/DTypeError at the op's ``loc``.
Every node carries a ``loc`` that is excluded from equality, so a parsed kernel
compares equal to the one it was printed from.

Operands are listed in each class's ``OPERANDS``; every other field except
``result``, ``loc`` and region bodies is an attribute (printed as ``{name = value}``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar

from fadsl.errors import Loc
from fadsl.ir.expr import Expr

# The op classes live in op_*.py by family; this module is the one public name for all
# of them (``from fadsl.ir import nodes as ir``), and all_op_classes() walks it.
from fadsl.ir.op_base import *  # noqa: F401,F403
from fadsl.ir.op_base import Op, Param, ParamKind, Value
from fadsl.ir.op_columns import *  # noqa: F401,F403
from fadsl.ir.op_debug import *  # noqa: F401,F403
from fadsl.ir.op_elementwise import *  # noqa: F401,F403
from fadsl.ir.op_gather import *  # noqa: F401,F403
from fadsl.ir.op_memory import *  # noqa: F401,F403
from fadsl.ir.op_scalar import *  # noqa: F401,F403
from fadsl.ir.op_scatter import *  # noqa: F401,F403
from fadsl.ir.op_tile import *  # noqa: F401,F403

# ----------------------------------------------------------------------------
# Control flow and the kernel
# ----------------------------------------------------------------------------


class LoopKind(Enum):
    SERIAL = "serial"
    PIPELINED = "pipelined"


@dataclass(frozen=True, slots=True, kw_only=True)
class Grid(Op):
    """for vars in product(ranges(extents)), in parallel over AI cores: body."""

    vars: tuple[str, ...]
    extents: tuple[Expr, ...]
    body: tuple[Op, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class For(Op):
    """Sequential loop ``for var in range(start, stop)`` with loop-carried values.

    ``iter_args`` start as ``inits``; each iteration's ``yields`` become the next
    iteration's ``iter_args``; after the loop they are ``results``. A pipelined loop
    with ``stages`` = s overlaps loads of iteration j+1..j+s-1 with compute of j.
    ``ring`` = r > 1 runs the cube core's dots that need no vector result r - 1
    iterations ahead through GM workspace rings of r slots (``plan/schedule/ring.py``); 1 runs
    the body as written; 0 (the default) lets the planner choose. ``defer_update``
    runs the vector steps on the P @ V of an iteration one iteration late
    (``plan/schedule/defer.py``): true forces it, false turns it off, none lets the planner
    choose. ``row_chunk`` = n > 0 runs the vector code of the body's row-wise ops
    over chunks of n rows of each vector core's tiles (``plan/memory/row_chunk.py``); 0 lets
    the planner choose (chunks only when the whole rows do not fit UB). All three
    change the schedule, never the values.
    """

    var: str
    start: Expr
    stop: Expr
    kind: LoopKind = LoopKind.SERIAL
    stages: int = 1
    ring: int = 0
    defer_update: bool | None = None
    row_chunk: int = 0
    inits: tuple[Value, ...] = ()
    iter_args: tuple[Value, ...] = ()
    body: tuple[Op, ...] = ()
    yields: tuple[Value, ...] = ()
    loop_results: tuple[Value, ...] = ()
    OPERANDS: ClassVar[tuple[str, ...]] = ("inits",)

    def results(self) -> tuple[Value, ...]:
        return self.loop_results


@dataclass(frozen=True, slots=True, kw_only=True)
class Kernel:
    """One kernel: parameters, symbols, tile constants and a body."""

    name: str
    params: tuple[Param, ...]
    shape_syms: tuple[str, ...]
    consts: tuple[tuple[str, int | float | bool | str], ...]
    """Compile-time constants with their chosen values (block sizes, flags)."""
    body: tuple[Op, ...]
    loc: Loc = field(compare=False)

    def param(self, name: str, loc: Loc) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        from fadsl.errors import KernelSyntaxError

        raise KernelSyntaxError(f"kernel `{self.name}` has no parameter `{name}`", loc)

    def const_values(self) -> dict[str, int | float | bool | str]:
        return dict(self.consts)

    @property
    def inputs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.kind is ParamKind.IN)

    @property
    def outputs(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.kind is ParamKind.OUT)


_ABSTRACT = ("Op", "ValueOp", "Unary", "Binary", "Reduce")


def all_op_classes() -> tuple[type[Op], ...]:
    """Every concrete op class defined in this module, sorted by name."""
    import sys

    module = sys.modules[__name__]
    found = []
    for name, obj in vars(module).items():
        if not isinstance(obj, type) or not issubclass(obj, Op) or name in _ABSTRACT:
            continue
        found.append(obj)
    return tuple(sorted(found, key=lambda c: c.__name__))
