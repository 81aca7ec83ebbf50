"""The order in which a dot's vector-made operands reach the cube.

The vector cores send a dot operand they make right after the op that makes it
(``backends/ascendc/vector.py``): in program order of the producers. A dot with two
such operands (an int8 cache's P @ V: P from the softmax, V dequantised right after
its load, long before P) is received in that order too, so the cube copies V into
L1 while the vector cores still run the softmax, and only P's hand-over is left
between the softmax and P @ V. Both waits precede the Mmad either way; the flags are
distinct, so the order changes no value. The kernel model (``perf/timeline_steps.py``)
places the workspace steps in the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from fadsl.ir import nodes as ir


def positions(body: Iterable[ir.Op]) -> dict[str, int]:
    """Value name -> index of the op making it, in program order (loops depth first;
    a loop's carried values at the loop)."""
    out: dict[str, int] = {}
    for i, op in enumerate(_walk(tuple(body))):
        for v in op.results():
            out.setdefault(v.name, i)
        if isinstance(op, ir.For):
            for v in op.iter_args:
                out.setdefault(v.name, i)
    return out


def in_send_order(
    operands: tuple[ir.Value, ...], made: Mapping[str, int]
) -> tuple[ir.Value, ...]:
    """``operands`` ordered by where they are made (ties and unknowns keep their
    order: operand a before b)."""
    last = max(made.values(), default=0) + 1
    keyed = sorted(
        enumerate(operands), key=lambda x: (made.get(x[1].name, last), x[0])
    )
    return tuple(v for _, v in keyed)


def _walk(body: tuple[ir.Op, ...]) -> Iterable[ir.Op]:
    for op in body:
        yield op
        if isinstance(op, (ir.Grid, ir.For)):
            yield from _walk(op.body)


__all__ = ["in_send_order", "positions"]
