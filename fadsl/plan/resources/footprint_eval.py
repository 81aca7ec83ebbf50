"""Evaluating and solving footprint formulas: exact values, fast batches, largest fits.

A helper of ``check_resources`` (and of ``fadsl tune``): footprints are sympy sums of
``align * ceiling(bytes / align)`` terms over shape and block-size symbols. This module
evaluates them exactly (rational arithmetic), in batches over numpy arrays (float
arithmetic only where it is provably exact), and finds the largest multiple of 16 of one
block size that keeps a set of formulas under their capacities (sympy solves the
relaxed inequality, exact evaluation confirms).

Non-goals: building the formulas (BufferPlan.footprint), wording errors (check_resources).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any

import sympy

from fadsl.errors import UsageError
from fadsl.ir.expr import Expr, isym

STEP = 16
"""Block sizes are searched over multiples of this (one cube fractal edge)."""

Env = Mapping[str, Any]
BatchFn = Callable[[Env], dict[str, Any]]


def exact(e: Expr | int, env: Env) -> int:
    """Integer value of a footprint or task-count expression (rounded up if fractional)."""
    expr = sympy.sympify(e)
    try:
        value = _compiled(expr)(env)
    except KeyError as exc:
        raise UsageError(
            f"the resource formula {sympy.sstr(expr)} needs a value for "
            f"{exc.args[0]}",
            hint="give it with --shape or --set",
        ) from None
    return int(math.ceil(value)) if isinstance(value, Fraction) else int(value)


@lru_cache(maxsize=4096)
def _compiled(e: Expr) -> Callable[[Env], Any]:
    """``e`` as one Python function of ``env`` (the operations of ``_closure``, in
    its order, on ints and Fractions: the same values; fadsl tune evaluates hundreds
    of thousands of footprints and task counts), or ``_closure`` if it cannot be."""
    consts: list[Any] = []
    code = _source(e, consts)  # ValueError: an operation exact() does not know
    try:
        fn = eval(f"lambda env: {code}", {**_CODE, "_c": consts})  # noqa: S307
    except (RecursionError, SyntaxError, MemoryError):
        return _closure(e)
    return fn  # type: ignore[no-any-return]


def _source(e: Expr, consts: list[Any]) -> str:
    """Python source of ``e`` over ``env``, every operand parenthesised."""
    if e.is_Integer:
        return f"({int(e)})"
    if e.is_Rational:
        consts.append(Fraction(int(e.p), int(e.q)))
        return f"_c[{len(consts) - 1}]"
    if e.is_Symbol:
        return f"env[{e.name!r}]"
    name = type(e).__name__
    if name not in _EXACT:
        raise ValueError(f"cannot evaluate {e} exactly")
    args = [_source(a, consts) for a in e.args]
    if name in _INFIX:
        return "(" + _INFIX[name].join(args) + ")"
    return f"{_CALLS[name]}({', '.join(args)})"


_INFIX = {"Add": " + ", "Mul": " * ", "FloorDiv": " // ", "Mod": " % "}
_CALLS = {
    "Pow": "_pow",
    "ceiling": "_ceil",
    "floor": "_floor",
    "CeilDiv": "_cdiv",
    "Min": "min",
    "Max": "max",
}


def _closure(e: Expr) -> Callable[[Env], Any]:
    """``e`` as nested closures, one per operation."""
    if e.is_Integer:
        iv = int(e)
        return lambda env: iv
    if e.is_Rational:
        fv = Fraction(int(e.p), int(e.q))
        return lambda env: fv
    if e.is_Symbol:
        name = e.name
        return lambda env: env[name]
    fn = _EXACT.get(type(e).__name__)
    if fn is None:
        raise ValueError(f"cannot evaluate {e} exactly")
    args = [_closure(a) for a in e.args]
    return lambda env: fn(*[a(env) for a in args])


def _prod(*xs: Any) -> Any:
    out = xs[0]
    for x in xs[1:]:
        out = out * x
    return out


_EXACT: dict[str, Callable[..., Any]] = {
    "Add": lambda *xs: sum(xs[1:], xs[0]),
    "Mul": _prod,
    "Pow": lambda a, b: Fraction(a) ** b if b < 0 else a**b,
    "ceiling": math.ceil,
    "floor": math.floor,
    "CeilDiv": lambda a, b: -((-a) // b),
    "FloorDiv": lambda a, b: a // b,
    "Mod": lambda a, b: a % b,
    "Min": min,
    "Max": max,
}
_CODE: dict[str, Any] = {
    "__builtins__": {"min": min, "max": max},
    "_pow": _EXACT["Pow"],
    "_ceil": math.ceil,
    "_floor": math.floor,
    "_cdiv": _EXACT["CeilDiv"],
}


def batch(formulas: Mapping[str, Expr]) -> BatchFn:
    """An evaluator of several formulas at once; values may be numpy arrays.

    Float arithmetic is used only when every rational in the formulas has a power-of-two
    denominator (then it is exact below 2**53); otherwise each element is evaluated
    exactly.
    """
    exprs = {k: sympy.sympify(f) for k, f in formulas.items()}
    names = sorted({x.name for f in exprs.values() for x in f.free_symbols})
    if not all(_float_exact(f) for f in exprs.values()):
        return _elementwise(exprs)
    keys = list(exprs)
    fn = _lambdify(names, [exprs[k] for k in keys])

    def evaluate(env: Env) -> dict[str, Any]:
        return dict(zip(keys, fn(*[env[n] for n in names])))

    return evaluate


def _float_exact(e: Expr) -> bool:
    return all(not (int(r.q) & (int(r.q) - 1)) for r in e.atoms(sympy.Rational))


def _lambdify(names: list[str], e: list[Expr]) -> Callable[..., Any]:
    import numpy as np

    namespace = {
        "ceiling": np.ceil,
        "floor": np.floor,
        "Min": np.minimum,
        "Max": np.maximum,
        "CeilDiv": lambda a, b: -((-a) // b),
        "FloorDiv": lambda a, b: a // b,
    }
    # the module, not "numpy": lambdify then runs `from numpy import *`, which loads
    # numpy.f2py, numpy.ma, ... (0.1-0.2 s of every fadsl tune process); the printer
    # and the code it prints are the same
    return sympy.lambdify([isym(n) for n in names], e, modules=[namespace, np])


def _elementwise(exprs: dict[str, Expr]) -> BatchFn:
    import numpy as np

    def evaluate(env: Env) -> dict[str, Any]:
        arrays = {k: np.asarray(v) for k, v in env.items()}
        shape = np.broadcast_shapes(*(a.shape for a in arrays.values()))
        flat = {k: np.broadcast_to(a, shape).ravel() for k, a in arrays.items()}
        size = int(np.prod(shape))
        out = {}
        for key, f in exprs.items():
            vals = [
                exact(f, {k: int(v[i]) for k, v in flat.items()}) for i in range(size)
            ]
            out[key] = np.array(vals, dtype=np.int64).reshape(shape)
        return out

    return evaluate


def largest_fit(limits: Iterable[tuple[Expr, int]], name: str, env: Env) -> int | None:
    """Largest multiple of 16 for ``name`` (others fixed at ``env``), at most its current
    value, with every ``formula <= capacity`` of ``limits``; None if even 16 fails.

    For each formula sympy solves the relaxed equation (ceilings dropped, a lower bound
    of the footprint) for ``name = 16 t``; exact evaluation then steps down from the
    smallest root to the true answer.
    """
    pairs = list(limits)
    top = max(1, int(env[name]) // STEP)
    guess = min([_relaxed_root(f, c, name, env, top) for f, c in pairs] + [top])
    for k in range(guess, 0, -1):
        trial = {**env, name: STEP * k}
        if all(exact(f, trial) <= c for f, c in pairs):
            return STEP * k
    return None


def _relaxed_root(formula: Expr, capacity: int, name: str, env: Env, top: int) -> int:
    t = sympy.Symbol("t", positive=True)
    fixed = {
        isym(k): v
        for k, v in env.items()
        if k != name and isinstance(v, int) and not isinstance(v, bool)
    }
    f = sympy.sympify(formula).subs(fixed).subs(isym(name), STEP * t)
    relaxed = sympy.expand(f.replace(sympy.ceiling, lambda x: x))
    if t not in relaxed.free_symbols:
        return top if relaxed <= capacity else 0
    try:
        roots = [r for r in sympy.solve(relaxed - capacity, t) if r.is_real and r > 0]
    except (NotImplementedError, TypeError, ValueError):
        return top
    if not roots:
        return top if relaxed.subs(t, 1) <= capacity else 0
    return max(0, min(top, int(math.floor(min(roots)))))


def best_pair(
    fn: BatchFn, capacities: Mapping[str, int], a: str, b: str, env: Env
) -> tuple[int, int] | None:
    """Multiples of 16 (at most the current values) for ``a`` and ``b`` that fit every
    capacity, with the largest product a*b (ties: the more balanced pair)."""
    pairs = ranked_pairs(fn, capacities, a, b, env, 1)
    return pairs[0] if pairs else None


def ranked_pairs(
    fn: BatchFn, capacities: Mapping[str, int], a: str, b: str, env: Env, limit: int
) -> list[tuple[int, int]]:
    """Up to ``limit`` fitting pairs for ``a`` and ``b``, best first (see best_pair)."""
    import numpy as np

    va = np.arange(STEP, int(env[a]) + 1, STEP)
    vb = np.arange(STEP, int(env[b]) + 1, STEP)
    if not len(va) or not len(vb):
        return []
    ga, gb = np.meshgrid(va, vb, indexing="ij")
    values = fn({**env, a: ga, b: gb})
    ok = np.ones(ga.shape, dtype=bool)
    for key, cap in capacities.items():
        ok &= np.asarray(values[key]) <= cap
    score = np.where(ok, ga * gb * 4096 - np.abs(ga - gb), -1).ravel()
    order = np.argsort(-score, kind="stable")[:limit]
    return [(int(ga.flat[i]), int(gb.flat[i])) for i in order if score[i] >= 0]
