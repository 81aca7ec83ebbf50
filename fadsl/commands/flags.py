"""Values of the shared command-line flags: --seed, --shape, --set, --dtype.

Every parse error points into the argument with a caret, through ``arg_loc``.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from fadsl.driver.binding import DIGITS_ONLY, size_problem
from fadsl.errors import Loc, UsageError

_SHAPE_ITEM = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")
_INT = re.compile(r"[+-]?[0-9]+")
"""An integer as flags take it: ASCII digits only. Python's int() also reads
``64_0`` (as 640) and other scripts' digits (``٦٤``), which a flag must not."""
_FLOAT = re.compile(
    r"[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|inf|infinity|nan)", re.I
)


def strict_int(text: str) -> int:
    """``text`` as an integer of ASCII digits with an optional sign; ValueError else."""
    if not _INT.fullmatch(text.strip()):
        raise ValueError(text)
    return int(text)


def strict_float(text: str) -> float:
    """``text`` as a decimal number of ASCII digits (``1``, ``-0.5``, ``2e-3``) or
    ``inf``/``nan`` (which the callers refuse with their own message)."""
    if not _FLOAT.fullmatch(text.strip()):
        raise ValueError(text)
    return float(text)


def integer(text: str) -> int:
    """argparse type of an integer flag (--block-dim, --top, --iterations)."""
    try:
        return strict_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer, got {text!r}; {DIGITS_ONLY}"
        ) from None


def seed_value(text: str) -> int:
    """argparse type of --seed: an integer >= 0 (numpy's seeds are non-negative)."""
    try:
        value = strict_int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative integer, got {text!r}; {DIGITS_ONLY}"
        ) from None
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative integer, got {value}"
        )
    return value


def folder_name(text: str) -> str:
    """argparse type of --inputs: a non-empty path (an empty one would silently mean
    seeded random inputs)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder, got an empty name")
    return text


def parse_timeout(text: str) -> float:
    """--timeout: seconds, a positive finite number."""
    loc = arg_loc("--timeout", text, 0, len(text))
    try:
        value = strict_float(text)
    except ValueError:
        raise UsageError(
            f"--timeout {text}: expected a number of seconds", loc, hint=DIGITS_ONLY
        ) from None
    if not 0 < value < 1e9:
        raise UsageError(
            f"--timeout {text}: expected a number of seconds above 0",
            loc,
            hint="the CPU-runtime run is stopped after this many seconds; "
            "leave --timeout out for the default of 600",
            code="timeout_not_positive",
        )
    return value


def arg_loc(flag: str, text: str, start: int = 0, end: int | None = None) -> Loc:
    """A Loc pointing into a command-line argument, for carets under the bad part."""
    shown = f"{flag} {text}"
    off = len(flag) + 1
    return Loc(
        "<command line>", 1, off + start, None if end is None else off + end, text=shown
    )


# ----------------------------------------------------------------------------
# --shape, --set, --dtype
# ----------------------------------------------------------------------------


def parse_assignments(text: str, flag: str) -> list[tuple[str, str, int, int]]:
    """Split ``a=1,b=2`` into (name, value, start, end) with character offsets."""
    items = []
    pos = 0
    for part in text.split(","):
        start, end = pos, pos + len(part)
        pos = end + 1
        m = _SHAPE_ITEM.match(part)
        if not m or not m.group(2):
            raise UsageError(
                f"bad {flag} item {part.strip()!r}: expected NAME=VALUE",
                arg_loc(flag, text, start, end),
                hint=(
                    f"e.g. {flag} B=1,N=8,Sq=4096,Skv=4096,D=128"
                    if flag == "--shape"
                    else f"e.g. {flag} block_q=64"
                ),
                code="set_syntax",
            )
        items.append((m.group(1), m.group(2), start, end))
    return items


def shape_names(text: str) -> set[str]:
    """The symbols a --shape text names (checked by parse_shape)."""
    return {name for name, _, _, _ in parse_assignments(text, "--shape")}


def parse_shape(
    text: str | None, symbols: tuple[str, ...], defaults: dict[str, int] | None = None
) -> dict[str, int]:
    """Shape symbol values; ``Nkv`` defaults to ``N``, ``Dv`` to ``D``; every other
    symbol must be given."""
    values: dict[str, int] = {}
    if text is not None and not text.strip():
        raise UsageError(
            "--shape is empty",
            arg_loc("--shape", text, 0, len(text)),
            hint="give NAME=VALUE items, e.g. --shape "
            + ",".join(f"{s}={(defaults or {}).get(s, 128)}" for s in symbols)
            + "; leave --shape out to use the kernel's default shape",
        )
    if text:
        for name, raw, start, end in parse_assignments(text, "--shape"):
            loc = arg_loc("--shape", text, start, end)
            if name not in symbols and name not in ("Nkv", "Dv"):
                raise UsageError(
                    f"--shape: this kernel has no shape symbol {name!r}",
                    loc,
                    hint=f"its shape symbols are {', '.join(symbols)}",
                    code="shape_unknown_symbol",
                )
            try:
                v = strict_int(raw)
            except ValueError:
                raise _bad_size(name, raw, loc) from None
            problem = size_problem(v)
            if problem is not None:
                raise UsageError(
                    f"--shape {name}={raw}: {problem}",
                    loc,
                    code="shape_not_positive",
                )
            if name in values:
                raise UsageError(f"--shape gives {name} twice", loc)
            values[name] = v
    elif defaults:
        values.update({k: v for k, v in defaults.items() if k in symbols})
    if "Nkv" in symbols and "Nkv" not in values and "N" in values:
        values["Nkv"] = values["N"]
    if "Dv" in symbols and "Dv" not in values and "D" in values:
        values["Dv"] = values[
            "D"
        ]  # the value head dim defaults to D (docs/variants.md)
    missing = [s for s in symbols if s not in values]
    if missing:
        raise UsageError(
            f"--shape is missing {', '.join(missing)}",
            None,
            hint="give every shape symbol, e.g. --shape "
            + ",".join(f"{s}={(defaults or {}).get(s, 128)}" for s in symbols),
            code="shape_missing_symbol",
        )
    return {s: values[s] for s in symbols}


def _bad_size(name: str, raw: str, loc: Loc) -> UsageError:
    """``--shape NAME=RAW`` whose RAW is no integer: a separator, or a digit fadsl
    does not read (``64_0``, digits of another script)."""
    if any(c in raw for c in ";=: "):
        hint: str | None = (
            "separate NAME=VALUE items with commas, e.g. --shape "
            "B=1,N=8,Sq=4096,Skv=4096,D=128"
        )
        code = "shape_syntax"
    elif raw.strip().isdigit() or "_" in raw:
        hint, code = DIGITS_ONLY, "shape_not_ascii"
    else:
        hint, code = None, "shape_syntax"
    return UsageError(
        f"--shape {name}={raw}: expected a positive integer", loc, hint=hint, code=code
    )


def parse_value(raw: str) -> int | float | bool | str:
    low = raw.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "none":
        return "None"
    try:
        return strict_int(raw)
    except ValueError:
        pass
    try:
        return strict_float(raw)
    except ValueError:
        return raw.strip()


def parse_sets(sets: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for text in sets:
        for name, raw, start, end in parse_assignments(text, "--set"):
            out[name] = (parse_value(raw), arg_loc("--set", text, start, end))
    return out


def parse_dtype(text: str | None) -> Any:
    from fadsl.driver.binding import element_dtype
    from fadsl.ir.types import CLI_DTYPES

    if text is None:
        return None
    dtype = element_dtype(text)
    if dtype is None:
        raise UsageError(
            f"--dtype {text}: expected one of {', '.join(CLI_DTYPES)}",
            arg_loc("--dtype", text, 0, len(text)),
            code="unknown_dtype",
        )
    return dtype
