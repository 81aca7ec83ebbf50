"""Vector lowering: rewrite what the Ascend vector unit has no instruction for.

Input: typed IR. Output: an equivalent program (the interpreter runs it, so every
rewrite is checked numerically) in which
  * every ``where`` tests a single comparison: ``where(x & y, a, b)`` becomes
    ``where(x, where(y, a, b), b)``, ``|`` and ``~`` likewise, so masks never need
    logical instructions on bit masks;
  * integer tiles (position indices, loaded int tensors) are converted to f32 right
    after they are made (an int8 tile through half: Cast.md has no int8 -> float on
    910B / A3; an int8 tile only cast, as an int8 KV cache's dequantisation does, is
    kept and each cast goes through half), so comparisons and arithmetic run on the float vector unit
    (exact below 2**24, i.e. for sequences up to 16M positions); integer // and % by a
    scalar become exact f32 sequences (int_division.py), a cast of a float tile to
    an integer the f32 truncation (int_casts.py);
  * ops left without users are dropped.

Non-goals: choosing instructions or buffers (plan_buffers / the backend).
"""

from __future__ import annotations

from dataclasses import replace

from fadsl.errors import BackendError
from fadsl.ir import nodes as ir
from fadsl.ir.types import DType, TileType
from fadsl.passes import int_casts, int_division
from fadsl.passes.fresh import FreshNames

NAME = "lower_vector"

_LOGIC = (ir.And, ir.Or, ir.Not)
_INT_SOURCES = (ir.Arange, ir.Load, ir.Dequeue)


def run(kernel: ir.Kernel, target: object = None) -> ir.Kernel:
    body = _Rewriter(kernel, FreshNames(kernel)).block(kernel.body)
    return replace(kernel, body=_dce(body))


def _only_cast(kernel: ir.Kernel) -> set[ir.Value]:
    """int8 tiles every reader of which is a cast (or the queue protocol)."""
    readers: dict[ir.Value, list[ir.Op]] = {}
    for op in _walk(kernel.body):
        for v in op.operand_values():
            readers.setdefault(v, []).append(op)
    protocol = (ir.Cast, ir.Enqueue, ir.FreeTensor)
    return {
        v
        for v, ops in readers.items()
        if isinstance(v.type, TileType)
        and v.type.dtype is DType.I8
        and all(isinstance(r, protocol) for r in ops)
    }


def _walk(body: tuple[ir.Op, ...]):  # type: ignore[no-untyped-def]
    for op in body:
        yield op
        if isinstance(op, (ir.Grid, ir.For)):
            yield from _walk(op.body)


class _Rewriter:
    def __init__(self, kernel: ir.Kernel, names: FreshNames) -> None:
        self.kernel = kernel
        self.fresh = names.fresh
        self.vmap: dict[ir.Value, ir.Value] = {}
        self.defs: dict[ir.Value, ir.Op] = {}
        self.widened: dict[ir.Value, ir.Value] = {}  # f32 copy -> integer tile
        self.only_cast = _only_cast(kernel)

    def block(self, body: tuple[ir.Op, ...]) -> tuple[ir.Op, ...]:
        out: list[ir.Op] = []
        for op in body:
            out.extend(self.op(op))
        return tuple(out)

    def m(self, v: object) -> object:
        if isinstance(v, ir.Value):
            return self.vmap.get(v, v)
        if isinstance(v, tuple):
            return tuple(self.m(x) for x in v)
        return v

    def op(self, op: ir.Op) -> list[ir.Op]:
        if isinstance(op, ir.Grid):
            return [replace(op, body=self.block(op.body))]
        if isinstance(op, ir.For):
            return [self.loop(op)]
        mapped = replace(op, **{f: self.m(getattr(op, f)) for f in op.OPERANDS})
        if isinstance(mapped, (ir.Enqueue, ir.FreeTensor)):
            # queue protocol names the slot's own buffer, never its f32 copy
            return [replace(mapped, x=self.widened.get(mapped.x, mapped.x))]
        if isinstance(mapped, ir.Where):
            return self.where(mapped)
        if not isinstance(mapped, ir.ValueOp):
            return [mapped]
        return self.retype(op, mapped)

    def retype(self, old: ir.ValueOp, op: ir.ValueOp) -> list[ir.Op]:
        if isinstance(op, (ir.FloorDivide, ir.Remainder)) or int_casts.applies(op):
            lower = int_casts.lower if isinstance(op, ir.Cast) else int_division.lower
            ops, value = lower(op, self.fresh, self.kernel)  # type: ignore[arg-type]
            self.defs.update({o.result: o for o in ops if isinstance(o, ir.ValueOp)})
            self.vmap[old.result] = value
            return ops
        t = op.infer(self.kernel)
        new = replace(op, result=ir.Value(op.result.name, t))
        if (
            isinstance(new, ir.Cast)
            and isinstance(new.x.type, TileType)
            and new.x.type.dtype is new.dtype
        ):
            self.vmap[old.result] = new.x
            return []
        if _from_byte(new) and new.dtype is not DType.F16:  # int8 -> half -> dtype
            half = self.cast(new.x, DType.F16, new.loc)  # type: ignore[arg-type]
            new = replace(new, x=half.result)
            self.defs[new.result] = new
            self.vmap[old.result] = new.result
            return [half, new]
        self.vmap[old.result] = new.result
        self.defs[new.result] = new
        out: list[ir.Op] = [new]
        if _int_source(new) and old.result not in self.only_cast:
            if new.result.type.dtype is DType.I8:  # type: ignore[union-attr]
                half = self.cast(new.result, DType.F16, new.loc)
                out.append(half)
                self.defs[half.result] = half
                wide = self.to_float(half.result)
                self.widened[wide.result] = new.result  # type: ignore[attr-defined]
                self.vmap[old.result] = wide.result  # type: ignore[attr-defined]
                return out + [wide]
            out.append(self.to_float(new.result))
        return out

    def cast(self, v: ir.Value, dtype: DType, loc: object) -> ir.Cast:
        t = v.type
        assert isinstance(t, TileType)
        r = ir.Value(self.fresh(v.name + "_h"), TileType(t.shape, dtype, t.space))
        return ir.Cast(result=r, x=v, dtype=dtype, loc=loc.derived(NAME))  # type: ignore[attr-defined]

    def to_float(self, v: ir.Value) -> ir.Op:
        t = v.type
        assert isinstance(t, TileType)
        f = ir.Value(self.fresh(v.name + "_f"), TileType(t.shape, DType.F32, t.space))
        cast = ir.Cast(
            result=f, x=v, dtype=DType.F32, loc=self.defs[v].loc.derived(NAME)
        )
        for old, new in list(self.vmap.items()):
            if new == v:
                self.vmap[old] = f
        self.defs[f] = cast
        self.widened[f] = v
        return cast

    def loop(self, op: ir.For) -> ir.For:
        inits = tuple(self.m(v) for v in op.inits)
        args = tuple(ir.Value(a.name, i.type) for a, i in zip(op.iter_args, inits))
        self.vmap.update(zip(op.iter_args, args))
        body = self.block(op.body)
        yields = tuple(self.m(v) for v in op.yields)
        results = tuple(ir.Value(r.name, a.type) for r, a in zip(op.loop_results, args))
        self.vmap.update(zip(op.loop_results, results))
        return replace(
            op,
            inits=inits,
            iter_args=args,
            body=body,
            yields=yields,
            loop_results=results,
        )

    def where(self, op: ir.Where) -> list[ir.Op]:
        cond = op.cond
        src = self.defs.get(cond) if isinstance(cond, ir.Value) else None
        if not isinstance(src, _LOGIC):
            return self.retype(op, op)
        out: list[ir.Op] = []
        result = self._split(op, src, out)
        self.vmap[op.result] = result
        return out

    def _split(self, op: ir.Where, logic: ir.Op, out: list[ir.Op]) -> ir.Value:
        a, b = op.a, op.b
        if isinstance(logic, ir.Not):
            return self._emit_where(op, logic.x, b, a, out)
        assert isinstance(logic, (ir.And, ir.Or))
        x, y = logic.lhs, logic.rhs
        if not isinstance(x, ir.Value) or not isinstance(y, ir.Value):
            raise BackendError(
                f"`{ir.op_name(type(logic))}` combines the mask tile with the "
                f"constant {y if isinstance(x, ir.Value) else x}",
                logic.loc,
                hint="combine two mask tiles: compare the constant's condition on a "
                "tile (e.g. `(q_idx >= kv_idx) | (h >= 2)` is spread by fadsl)",
            )
        if isinstance(logic, ir.And):
            inner = self._emit_where(op, y, a, b, out)
            return self._emit_where(op, x, inner, b, out)
        inner = self._emit_where(op, y, a, b, out)
        return self._emit_where(op, x, a, inner, out)

    def _emit_where(
        self,
        op: ir.Where,
        cond: ir.Value,
        a: ir.Operand,
        b: ir.Operand,
        out: list[ir.Op],
    ) -> ir.Value:
        logic = self.defs.get(cond)
        if isinstance(logic, _LOGIC):
            sub = replace(op, cond=cond, a=a, b=b)
            return self._split(sub, logic, out)
        name = self.fresh(op.result.name)
        new = ir.Where(
            result=ir.Value(name, op.result.type),
            cond=cond,
            a=a,
            b=b,
            loc=op.loc.derived(NAME),
        )
        new = replace(new, result=ir.Value(name, new.infer(self.kernel)))
        self.defs[new.result] = new
        out.append(new)
        return new.result


def _from_byte(op: ir.ValueOp) -> bool:
    """A cast of an int8 tile (the vector unit casts int8 to half only)."""
    t = op.x.type if isinstance(op, ir.Cast) else None
    return isinstance(t, TileType) and t.dtype is DType.I8


def _int_source(op: ir.ValueOp) -> bool:
    """An integer tile the vector unit reads: widened to f32 where it is made.

    A load into a queue slot is not one: the slot keeps the integer block the DMA wrote
    (enqueue and free_tensor name it); its dequeue is widened instead.
    """
    t = op.result.type
    if not (isinstance(t, TileType) and t.dtype.is_int):
        return False
    if isinstance(op, ir.Load) and op.into is not None:
        return False
    return isinstance(op, _INT_SOURCES)


def _dce(body: tuple[ir.Op, ...]) -> tuple[ir.Op, ...]:
    """Drop pure value ops whose result nobody reads (repeat until stable)."""
    while True:
        used: set[ir.Value] = set()
        _uses(body, used)
        pruned = _prune(body, used)
        if pruned == body:
            return body
        body = pruned


def _uses(body: tuple[ir.Op, ...], used: set[ir.Value]) -> None:
    for op in body:
        used.update(op.operand_values())
        if isinstance(op, ir.For):
            used.update(op.yields)
        if isinstance(op, (ir.Grid, ir.For)):
            _uses(op.body, used)


def _prune(body: tuple[ir.Op, ...], used: set[ir.Value]) -> tuple[ir.Op, ...]:
    out: list[ir.Op] = []
    for op in body:
        if isinstance(op, (ir.Grid, ir.For)):
            out.append(replace(op, body=_prune(op.body, used)))
        elif isinstance(op, ir.ValueOp) and _pure(op) and op.result not in used:
            continue
        else:
            out.append(op)
    return tuple(out)


def _pure(op: ir.ValueOp) -> bool:
    return not isinstance(op, (ir.AllocTensor, ir.Dequeue, ir.QueueAlloc)) and not (
        isinstance(op, ir.Load) and op.into is not None
    )
