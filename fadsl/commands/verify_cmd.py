"""``fadsl verify``: compare actual outputs with expected ones by the tolerance rule.

Arguments are two ``.bin`` files or two run folders (from ``fadsl run`` / ``fadsl sim``).
Dtypes and shapes come from the folders' meta.json; bare files need ``--dtype``.
The bound is ``2 * (same-precision error recorded in the expected run) + atol``; when
no such record exists the bound is ``atol`` of the dtype and the report says so.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from fadsl.errors import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("actual", help="ACTUAL.bin or a run folder")
    p.add_argument("expected", help="EXPECTED.bin or a run folder")
    p.add_argument(
        "--dtype", help="dtype of bare .bin files without meta.json (fp16, bf16, fp32)"
    )


def main(args: argparse.Namespace) -> int:
    pairs = _pairs(args.actual, args.expected, args.dtype)
    ok = True
    for name, actual, expected, dtype, same_error in pairs:
        ok &= _verify_one(name, actual, expected, dtype, same_error)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def _verify_one(
    name: str, actual: Any, expected: Any, dtype: Any, same_error: float | None
) -> bool:
    from fadsl.numerics import compare

    v = compare(name, actual.reshape(expected.shape), expected, None, dtype, same_error)
    print(v.line())
    if same_error is None:
        print("    (the expected side records no same-precision error: atol only)")
    print(
        f"    inf/nan: actual {int((~_finite(actual)).sum())}, "
        f"expected {int((~_finite(expected)).sum())}"
    )
    return v.passed


def _finite(a: Any) -> Any:
    import numpy as np

    return np.isfinite(a.astype(np.float64))


def _pairs(actual: str, expected: str, dtype_flag: str | None) -> list[tuple]:
    for path in (actual, expected):
        if not os.path.exists(path):
            raise UsageError(
                f"no such file or folder: {path}",
                hint="give two .bin files or two run folders",
            )
    if os.path.isdir(actual) != os.path.isdir(expected):
        kinds = [
            "a folder" if os.path.isdir(p) else "a file" for p in (actual, expected)
        ]
        raise UsageError(
            f"{actual} is {kinds[0]} but {expected} is {kinds[1]}",
            hint="give two .bin files or two run folders, not one of each",
        )
    if os.path.isdir(actual):
        return _folder_pairs(actual, expected)
    return [_file_pair(actual, expected, dtype_flag)]


def _folder_pairs(actual: str, expected: str) -> list[tuple]:
    from fadsl.runio import read_meta

    ma, me = read_meta(actual), read_meta(expected)
    if ma is None or me is None:
        missing = actual if ma is None else expected
        raise UsageError(
            f"{missing} has no meta.json; is it a run folder?",
            hint="fadsl run / fadsl sim write run folders",
        )
    outs = [
        n for n, p in me["params"].items() if p["kind"] == "out" and n in ma["params"]
    ]
    if not outs:
        raise UsageError(f"{actual} and {expected} share no output parameter")
    return [
        _load_pair(
            n,
            os.path.join(actual, ma["params"][n]["file"]),
            os.path.join(expected, me["params"][n]["file"]),
            me["params"][n],
            me,
        )
        for n in outs
    ]


def _file_pair(actual: str, expected: str, dtype_flag: str | None) -> tuple:
    from fadsl.runio import read_meta

    me = read_meta(os.path.dirname(os.path.abspath(expected)))
    base = os.path.basename(expected)
    entry = None
    if me is not None:
        entry = next((p for p in me["params"].values() if p["file"] == base), None)
    if entry is None:
        if dtype_flag is None:
            raise UsageError(
                f"{expected}: no meta.json beside it names its dtype",
                hint="pass --dtype fp16|bf16|fp32",
            )
        from fadsl.commands.flags import parse_dtype
        from fadsl.numerics import np_dtype

        dt = parse_dtype(dtype_flag)
        entry = {"dtype": np_dtype(dt).name, "shape": None}
    name = os.path.splitext(base)[0]
    return _load_pair(name, actual, expected, entry, me)


def _load_pair(
    name: str,
    actual: str,
    expected: str,
    entry: dict[str, Any],
    meta: dict[str, Any] | None,
) -> tuple:
    import numpy as np

    from fadsl.numerics import dtype_of_name, np_dtype
    from fadsl.runio import read_bin

    try:
        dtype = dtype_of_name(entry["dtype"])
    except ValueError:
        raise UsageError(
            f"{expected}: meta.json gives the unknown dtype " f"{entry['dtype']!r}"
        ) from None
    nd = np_dtype(dtype)
    a = read_bin(actual, nd, f"actual `{name}`")
    e = read_bin(expected, nd, f"expected `{name}`")
    if a.size != e.size:
        raise UsageError(
            f"`{name}`: {actual} holds {a.size:,} {nd.name} values but {expected} holds "
            f"{e.size:,}",
            hint="compare outputs of the same kernel, --shape and --dtype",
        )
    if entry.get("shape"):
        shape = tuple(entry["shape"])
        if e.size != int(np.prod(shape)):
            raise UsageError(
                f"{expected} holds {e.size:,} {nd.name} values, but "
                f"meta.json gives the shape {list(shape)}",
                hint="the file and its meta.json come from different runs",
            )
        e = e.reshape(shape)
    return name, a, e, dtype, _same_precision_error(meta, name)


def _same_precision_error(meta: dict[str, Any] | None, name: str) -> float | None:
    entry = ((meta or {}).get("check") or {}).get(name)
    value = entry.get("same_precision_error") if isinstance(entry, dict) else None
    return float(value) if isinstance(value, (int, float)) else None
