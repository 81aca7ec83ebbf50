"""Hand-built IR for interpreter tests: parameters, a grid, loops, ops via the Builder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import sympy

from fadsl.backends.interp import InterpResult, interpret
from fadsl.errors import Loc
from fadsl.ir.builder import Builder
from fadsl.ir.expr import as_expr, fsym, isym
from fadsl.ir.expr_parse import parse_expr_text
from fadsl.ir.nodes import (
    For,
    Grid,
    Imm,
    Kernel,
    Load,
    LoopKind,
    Op,
    Param,
    ParamKind,
    Point,
    Slice,
    Store,
    Value,
)
from fadsl.ir.types import DType, ScalarType, TensorType
from fadsl.numerics import np_dtype

LOC = Loc("kernel_under_test.py", 1, text="op under test")


def expr(e: Any) -> Any:
    """A sympy expression; a string names an integer symbol."""
    return isym(e) if isinstance(e, str) else as_expr(e)


def point(e: Any) -> Point:
    return Point(expr(e))


def span(start: Any, size: Any) -> Slice:
    return Slice(expr(start), expr(size))


def everything(n: Any) -> Slice:
    return span(0, n)


def _default(value: Any) -> Any:
    return parse_expr_text(value) if isinstance(value, str) else as_expr(value)


def imm(value: Any, dtype: DType = DType.F32) -> Imm:
    return Imm(expr(value), dtype)


class Kit:
    """Collects parameters and ops of one small kernel (the TypeContext of its Builder)."""

    def __init__(self, name: str = "k") -> None:
        self.name = name
        self.params: list[Param] = []
        self.shape_syms: list[str] = []
        self.builder = Builder(self)

    def param(self, name: str, loc: Loc) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def tensor(
        self, name: str, kind: ParamKind, shape: Sequence[Any], dtype: DType
    ) -> str:
        dims = []
        for d in shape:
            if isinstance(d, str):
                if d not in self.shape_syms:
                    self.shape_syms.append(d)
                dims.append(isym(d))
            else:
                dims.append(as_expr(d))
        self.params.append(
            Param(name=name, kind=kind, type=TensorType(tuple(dims), dtype), loc=LOC)
        )
        return name

    def inp(self, name: str, shape: Sequence[Any], dtype: DType) -> str:
        return self.tensor(name, ParamKind.IN, shape, dtype)

    def out(self, name: str, shape: Sequence[Any], dtype: DType) -> str:
        return self.tensor(name, ParamKind.OUT, shape, dtype)

    def scratch(self, name: str, shape: Sequence[Any], dtype: DType) -> str:
        return self.tensor(name, ParamKind.SCRATCH, shape, dtype)

    def scalar(self, name: str, default: Any = None) -> sympy.Symbol:
        self.params.append(
            Param(
                name=name,
                kind=ParamKind.SCALAR,
                type=ScalarType(DType.F32),
                default=None if default is None else _default(default),
                loc=LOC,
            )
        )
        return fsym(name)

    def op(self, cls: type[Op], hint: str = "t", loc: Loc = LOC, **fields: Any) -> Any:
        """Emit ``cls(**fields)`` at ``loc``; numbers and symbol names in expression
        fields become sympy expressions."""
        for name in ("value", "start", "size"):
            if name in fields and not isinstance(fields[name], (Value, Imm)):
                fields[name] = expr(fields[name])
        if "shape" in fields:
            fields["shape"] = tuple(expr(d) for d in fields["shape"])
        return self.builder.emit(cls, loc, hint, **fields)

    def load(self, src: str, *index: Any, pad: Any = None, **kw: Any) -> Value:
        pad_expr = None if pad is None else expr(pad)
        v = self.op(Load, src, src=src, index=tuple(index), pad=pad_expr, **kw)
        assert v is not None
        return v

    def store(self, dst: str, value: Value, *index: Any, loc: Loc = LOC) -> None:
        self.op(Store, loc=loc, dst=dst, index=tuple(index), value=value)

    def grid(
        self,
        extents: Sequence[Any],
        body: Callable[..., None],
        names: Sequence[str] = ("b", "h", "i"),
    ) -> None:
        names = tuple(names[: len(extents)])
        with self.builder.block() as ops:
            body(*(isym(n) for n in names))
        self.builder.append(
            Grid(
                vars=names,
                extents=tuple(expr(e) for e in extents),
                body=tuple(ops),
                loc=LOC,
            )
        )

    def loop(
        self,
        var: str,
        start: Any,
        stop: Any,
        inits: Sequence[Value],
        body: Callable[..., Sequence[Value]],
        kind: LoopKind = LoopKind.SERIAL,
    ) -> list[Value]:
        """``for var in range(start, stop)`` carrying ``inits``; body(j, *args) -> yields."""
        args = [Value(self.builder.fresh(v.name), v.type) for v in inits]
        with self.builder.block() as ops:
            yields = body(isym(var), *args)
        results = [Value(self.builder.fresh(v.name), v.type) for v in inits]
        self.builder.append(
            For(
                var=var,
                start=expr(start),
                stop=expr(stop),
                kind=kind,
                stages=2 if kind is LoopKind.PIPELINED else 1,
                inits=tuple(inits),
                iter_args=tuple(args),
                body=tuple(ops),
                yields=tuple(yields),
                loop_results=tuple(results),
                loc=LOC,
            )
        )
        return results

    def kernel(self) -> Kernel:
        return Kernel(
            name=self.name,
            params=tuple(self.params),
            shape_syms=tuple(self.shape_syms),
            consts=(),
            body=self.builder.finish(),
            loc=LOC,
        )

    def run(
        self, env: dict[str, Any] | None = None, **inputs: np.ndarray
    ) -> InterpResult:
        return interpret(self.kernel(), env or {}, inputs)


def random(
    shape: Sequence[int],
    dtype: DType,
    seed: int = 0,
    low: float = -3.0,
    high: float = 3.0,
) -> np.ndarray:
    """Seeded inputs in ``dtype``: normals (floats) or integers in [low, high)."""
    rng = np.random.default_rng(seed)
    if dtype.is_int:
        return rng.integers(int(low), int(high), size=shape).astype(np_dtype(dtype))
    return rng.standard_normal(shape).astype(np_dtype(dtype))
