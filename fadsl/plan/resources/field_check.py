"""The API field proof: every ``api_fields.FieldUse`` evaluated against its field's range.

A helper of ``check_resources``. Input: the uses of a BufferPlan and the values of the
shape symbols and block sizes. Output: ``FieldValue``s and, for each value out of its
documented range, one ResourceError with the formula, the numbers, the op's line, what
the C type would make of the value, and what to change: the largest value of each
symbol that keeps the field in range (block sizes in steps of 16), and for a GM row
stride a layout whose rows are contiguous.

Non-goals: finding the uses (api_fields), other resources (check_resources).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sympy

from fadsl.errors import Loc, ResourceError
from fadsl.user_site import user_site
from fadsl.plan.resources.api_fields import FieldUse
from fadsl.plan.resources.footprint_eval import STEP, exact, largest_fit

if TYPE_CHECKING:
    from fadsl.plan.memory.buffer_plan import BufferPlan
    from fadsl.plan.resources.check_resources import ResourceReport

TYPE_MAX = {"uint8_t": 2**8 - 1, "uint16_t": 2**16 - 1, "uint32_t": 2**32 - 1}
TYPE_MAX["int32_t"] = 2**31 - 1


@dataclass(frozen=True)
class FieldValue:
    use: FieldUse
    value: int

    @property
    def ok(self) -> bool:
        return self.use.field.lo <= self.value <= self.use.field.hi


def evaluate(
    uses: Sequence[FieldUse], env: Mapping[str, Any]
) -> tuple[FieldValue, ...]:
    return tuple(FieldValue(u, exact(u.value, env)) for u in uses)


def errors(
    report: ResourceReport,
    plan: BufferPlan,
    target: str,
    file: str,
    tunable: Sequence[str],
    kernel_loc: Loc | None,
) -> list[ResourceError]:
    """One error per field value of ``report`` out of range. Shape symbols that are
    tile dimensions (the head dim) are never suggested as the thing to shrink."""
    fixed = frozenset(
        s.name
        for b in plan.buffers
        for d in b.shape
        for s in sympy.sympify(d).free_symbols
    )
    return [
        _error(v, report.kernel, target, file, report.env, tunable, kernel_loc, fixed)
        for v in report.fields
        if not v.ok
    ]


def _error(
    v: FieldValue,
    kernel: str,
    target: str,
    file: str,
    env: Mapping[str, Any],
    tunable: Sequence[str],
    kernel_loc: Loc | None,
    fixed: frozenset[str],
) -> ResourceError:
    f, u = v.use.field, v.use
    bound = f"at most {f.hi:,}" if v.value > f.hi else f"at least {f.lo:,}"
    head = (
        f"Ascend C field overflow in kernel `{kernel}` ({file}) on {target}: "
        f"{f.title} ({f.ctype}, {bound}) would be {v.value:,}, {u.what}"
    )
    unit = f" {f.unit}" if f.unit else ""
    notes = [
        f"{f.name} = {sympy.sstr(u.value)} = {v.value:,}{unit} at {_at(u, env)}",
        _consequence(v),
        f"{f.title} is a {f.ctype} documented in [{f.lo:,}, {f.hi:,}] ({f.doc})",
    ]
    loc, site = user_site(u.loc, kernel_loc, "the value is set by")
    notes += site
    return ResourceError(
        head,
        loc or kernel_loc,
        _hint(v, env, tunable, fixed),
        notes,
        code="api_field_overflow",
    )


def _at(u: FieldUse, env: Mapping[str, Any]) -> str:
    names = sorted(s.name for s in sympy.sympify(u.value).free_symbols)
    return ", ".join(f"{n}={env[n]}" for n in names if n in env) or "any shape"


def _consequence(v: FieldValue) -> str:
    top = TYPE_MAX.get(v.use.field.ctype)
    if top is not None and v.value > top:
        kept = v.value % (top + 1)
        return (
            f"a {v.use.field.ctype} keeps {v.value:,} mod {top + 1:,} = {kept:,}: the "
            "kernel would move or compute the wrong data without any error"
        )
    return "the hardware does not take this value (it is outside the documented range)"


def _hint(
    v: FieldValue,
    env: Mapping[str, Any],
    tunable: Sequence[str],
    fixed: frozenset[str] = frozenset(),
) -> str:
    u = v.use
    names = sorted(s.name for s in sympy.sympify(u.value).free_symbols)
    parts = [
        _largest(u, n, env, n in tunable)
        for n in names
        if n in env and (n in tunable or n not in fixed)
    ]
    if u.layout is not None:
        parts.append(
            f"or store `{u.layout}` with its rows next to each other, so that the row "
            'stride is the head dim: for fd.attention, layout="BNSD" instead of '
            "BSND/BSH"
        )
    text = "; ".join(p for p in parts if p)
    return text or "use smaller block sizes or shapes"


def _largest(u: FieldUse, name: str, env: Mapping[str, Any], tunable: bool) -> str:
    """The largest value of ``name`` (others fixed) that keeps the field in range."""
    hi = u.field.hi
    if tunable:
        best = largest_fit([(u.value, hi)], name, env)
        if best is None:
            return f"no multiple of {STEP} for {name} keeps it in range"
        return f"{name} <= {best} keeps it in range (--set {name}={best})"
    best = _search(u, name, env)
    if best is None:
        return ""
    return f"{name} <= {best:,} keeps it in range with the rest of the shape fixed"


def _search(u: FieldUse, name: str, env: Mapping[str, Any]) -> int | None:
    """Bisection for the largest value of a shape symbol in [1, current] that fits."""

    def fits(x: int) -> bool:
        return exact(u.value, {**env, name: x}) <= u.field.hi

    lo, hi = 1, int(env[name])
    if not fits(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo
