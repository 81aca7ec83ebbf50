"""Fresh value names for passes that add values to a kernel."""

from __future__ import annotations

from fadsl.ir import nodes as ir


class FreshNames:
    """Names that clash with no value, loop variable, scalar, parameter, shape symbol or
    constant of the kernel, nor with each other."""

    def __init__(self, kernel: ir.Kernel) -> None:
        self.used: set[str] = set()
        _collect(kernel.body, self.used)
        self.used |= {p.name for p in kernel.params} | set(kernel.shape_syms)
        self.used |= {k for k, _ in kernel.consts}

    def fresh(self, hint: str) -> str:
        name, n = hint, 0
        while name in self.used:
            n += 1
            name = f"{hint}_{n}"
        self.used.add(name)
        return name


def _collect(body: tuple[ir.Op, ...], out: set[str]) -> None:
    for op in body:
        out.update(v.name for v in op.results())
        if isinstance(op, ir.Grid):
            out.update(op.vars)
            _collect(op.body, out)
        elif isinstance(op, ir.For):
            out.add(op.var)
            out.update(v.name for v in op.iter_args)
            _collect(op.body, out)
        elif isinstance(op, (ir.LoadScalar, ir.ScalarDef)):
            out.add(op.name)
