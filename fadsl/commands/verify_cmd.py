"""``fadsl verify``: compare actual outputs with expected ones by the tolerance rule.

Arguments are two ``.bin`` files or two run folders (from ``fadsl run`` / ``fadsl sim``).
Dtypes and shapes come from the folders' meta.json; bare files need ``--dtype``.
The bound is ``2 * (same-precision error of the expected run) + atol``: recomputed
from the expected folder's recorded inputs with ``--kernel-file``, else the error its
meta.json records when that is plausible (``verify_record.py``); when no such record
exists the bound is ``atol`` of the dtype and the report says so. Outputs of other
dtypes or shapes are refused, naming both.
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
    p.add_argument(
        "--kernel-file",
        metavar="FILE",
        help="the kernel's .py file: recompute the same-precision error from the "
        "inputs the expected run folder holds (it runs the file, as run does)",
    )
    p.add_argument(
        "--kernel", help="which kernel of --kernel-file (default: the recorded one)"
    )


def main(args: argparse.Namespace) -> int:
    pairs = _pairs(args.actual, args.expected, args.dtype)
    errors = _same_errors(args, pairs)
    ok = True
    for (name, actual, expected, dtype, _, _), (same, basis) in zip(pairs, errors):
        ok &= _verify_one(name, actual, expected, dtype, same, basis)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def _same_errors(
    args: argparse.Namespace, pairs: list[tuple]
) -> list[tuple[float | None, str]]:
    """Per pair: the same-precision error to bound with, and what it is."""
    from fadsl.commands import verify_record

    if args.kernel_file is None:
        out = []
        for name, _, expected, _, meta, folder in pairs:
            same = verify_record.recorded(meta, name, expected, folder)
            out.append((same, "recorded"))
        return out
    meta, folder = pairs[0][4], pairs[0][5]
    if meta is None:
        raise UsageError(
            f"--kernel-file: {args.expected} is not in a run folder with meta.json, "
            "so there are no recorded inputs to recompute from",
            hint="give the run folder fadsl run / fadsl sim wrote as EXPECTED",
        )
    again = verify_record.recompute(args, folder, meta)
    return [(again.get(p[0]), "recomputed from the recorded inputs") for p in pairs]


def _verify_one(
    name: str,
    actual: Any,
    expected: Any,
    dtype: Any,
    same_error: float | None,
    how: str,
) -> bool:
    from fadsl.numerics import compare

    v = compare(name, actual.reshape(expected.shape), expected, None, dtype, same_error)
    print(v.line())
    if same_error is None:
        print("    (the expected side records no same-precision error: atol only)")
    else:
        print(f"    (same-precision error {how})")
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
    from fadsl.io.runio import read_meta

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
            (os.path.join(actual, ma["params"][n]["file"]), ma["params"][n]),
            os.path.join(expected, me["params"][n]["file"]),
            me["params"][n],
            me,
        )
        for n in outs
    ]


def _file_pair(actual: str, expected: str, dtype_flag: str | None) -> tuple:
    from fadsl.io.runio import read_meta

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
    ma = read_meta(os.path.dirname(os.path.abspath(actual)))
    recorded = None
    if ma is not None:
        recorded = next(
            (p for p in ma["params"].values() if p["file"] == os.path.basename(actual)),
            None,
        )
    return _load_pair(name, (actual, recorded), expected, entry, me)


def _load_pair(
    name: str,
    actual_file: tuple[str, dict[str, Any] | None],
    expected: str,
    entry: dict[str, Any],
    meta: dict[str, Any] | None,
) -> tuple:
    """(name, actual, expected, dtype, expected meta, expected folder)."""
    import numpy as np

    from fadsl.numerics import dtype_of_name, np_dtype
    from fadsl.io.runio import read_bin

    actual, actual_entry = actual_file
    if actual_entry is not None:
        _same_kind(name, actual, actual_entry, expected, entry)

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
            code="verify_sizes",
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
    folder = os.path.dirname(os.path.abspath(expected))
    return name, a, e, dtype, meta, folder


def _same_kind(
    name: str, actual: str, a: dict[str, Any], expected: str, e: dict[str, Any]
) -> None:
    """Refuse outputs that the meta.json files record with other dtypes or shapes
    (read with the expected dtype, the actual bits would be other numbers)."""
    shapes = [x.get("shape") for x in (a, e)]
    if a["dtype"] == e["dtype"] and (None in shapes or shapes[0] == shapes[1]):
        return
    raise UsageError(
        f"`{name}`: {actual} is {_kind(a)} but {expected} is {_kind(e)}",
        hint="compare outputs of the same kernel, --shape and --dtype",
        code="verify_shapes_differ",
    )


def _kind(entry: dict[str, Any]) -> str:
    shape = entry.get("shape")
    return entry["dtype"] + ("" if shape is None else f" {list(shape)}")
