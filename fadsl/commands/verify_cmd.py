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
    p.add_argument("--dtype", help="dtype of bare .bin files without meta.json (fp16, bf16, fp32)")


def main(args: argparse.Namespace) -> int:
    pairs = _pairs(args.actual, args.expected, args.dtype)
    ok = True
    for name, actual, expected, dtype, same_error in pairs:
        ok &= _verify_one(name, actual, expected, dtype, same_error)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def _verify_one(name: str, actual: Any, expected: Any, dtype: Any,
                same_error: float | None) -> bool:
    from fadsl.numerics import compare

    if actual.size != expected.size:
        raise UsageError(f"{name}: {actual.size} elements vs {expected.size} expected")
    v = compare(name, actual.reshape(expected.shape), expected, None, dtype, same_error)
    basis = ("2 x same-precision error + atol" if same_error is not None
             else "atol only: the expected side records no same-precision error")
    print(v.line() + f"   (bound: {basis})")
    print(f"    inf/nan: actual {int((~_finite(actual)).sum())}, "
          f"expected {int((~_finite(expected)).sum())}")
    return v.passed


def _finite(a: Any) -> Any:
    import numpy as np

    return np.isfinite(a.astype(np.float64))


def _pairs(actual: str, expected: str, dtype_flag: str | None) -> list[tuple]:
    if os.path.isdir(actual) != os.path.isdir(expected):
        raise UsageError("give two .bin files or two run folders, not one of each")
    if os.path.isdir(actual):
        return _folder_pairs(actual, expected)
    return [_file_pair(actual, expected, dtype_flag)]


def _folder_pairs(actual: str, expected: str) -> list[tuple]:
    from fadsl.runio import read_meta

    ma, me = read_meta(actual), read_meta(expected)
    if ma is None or me is None:
        missing = actual if ma is None else expected
        raise UsageError(f"{missing} has no meta.json; is it a run folder?",
                         hint="fadsl run / fadsl sim write run folders")
    outs = [n for n, p in me["params"].items() if p["kind"] == "out" and n in ma["params"]]
    if not outs:
        raise UsageError(f"{actual} and {expected} share no output parameter")
    return [_load_pair(n, os.path.join(actual, ma["params"][n]["file"]),
                       os.path.join(expected, me["params"][n]["file"]),
                       me["params"][n], me) for n in outs]


def _file_pair(actual: str, expected: str, dtype_flag: str | None) -> tuple:
    from fadsl.runio import read_meta

    for path in (actual, expected):
        if not os.path.isfile(path):
            raise UsageError(f"no such file: {path}")
    me = read_meta(os.path.dirname(os.path.abspath(expected)))
    base = os.path.basename(expected)
    entry = None
    if me is not None:
        entry = next((p for p in me["params"].values() if p["file"] == base), None)
    if entry is None:
        if dtype_flag is None:
            raise UsageError(
                f"{expected}: no meta.json beside it names its dtype",
                hint="pass --dtype fp16|bf16|fp32")
        from fadsl.commands.common import parse_dtype
        from fadsl.numerics import np_dtype

        dt = parse_dtype(dtype_flag)
        entry = {"dtype": np_dtype(dt).name, "shape": None}
    name = os.path.splitext(base)[0]
    return _load_pair(name, actual, expected, entry, me)


def _load_pair(name: str, actual: str, expected: str, entry: dict[str, Any],
               meta: dict[str, Any] | None) -> tuple:
    import numpy as np

    from fadsl.numerics import dtype_of_name, np_dtype

    dtype = dtype_of_name(entry["dtype"])
    nd = np_dtype(dtype)
    a = _read(actual, nd)
    e = _read(expected, nd)
    if entry.get("shape"):
        shape = tuple(entry["shape"])
        if e.size != int(np.prod(shape)):
            raise UsageError(f"{expected}: {e.size} elements, meta.json says {shape}")
        e = e.reshape(shape)
    same = None
    if meta and meta.get("check") and meta["check"].get(name):
        same = meta["check"][name].get("same_precision_error")
    return name, a, e, dtype, same


def _read(path: str, nd: Any) -> Any:
    import numpy as np

    size = os.path.getsize(path)
    if size % nd.itemsize:
        raise UsageError(f"{path}: {size} bytes is not a whole number of {nd.name} values")
    return np.fromfile(path, dtype=nd.newbyteorder("<")).astype(nd)
