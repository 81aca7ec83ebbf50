"""Run folders: ``<param>.bin`` (raw little-endian, C order, the parameter's dtype) + meta.json.

Shared by ``fadsl run`` (interpreter) and ``fadsl sim`` (CPU runtime).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from fadsl.errors import Loc, UsageError
from fadsl.io.files import read_json
from fadsl.io.input_checks import check_index_inputs, check_recorded
from fadsl.ir.expr import evaluate
from fadsl.ir.nodes import Param, ParamKind
from fadsl.ir.types import TensorType
from fadsl.numerics import Verdict, compare, np_dtype, to_float16

META = "meta.json"


def param_shape(p: Param, env: dict[str, Any]) -> tuple[int, ...]:
    assert isinstance(p.type, TensorType)
    return tuple(int(evaluate(d, env)) for d in p.type.shape)


def check_sizes(binding: Any) -> None:
    """Refuse, before any work, a tensor of negative size or tensors too large to hold.

    ``run`` and ``sim`` keep every tensor in memory; the limit is half of this
    machine's physical memory.
    """
    env = binding.env()
    total = 0
    for p in tensor_params(
        binding.kernel, ParamKind.IN, ParamKind.OUT, ParamKind.SCRATCH
    ):
        shape = param_shape(p, env)
        if any(d < 0 for d in shape):
            raise UsageError(
                f"`{p.name}` ({p.type}) would have the negative shape {list(shape)}",
                p.loc,
                hint="check --shape against the kernel's dimensions",
            )
        total += math.prod(shape) * np_dtype(p.type.dtype).itemsize  # type: ignore[union-attr]
    limit = memory_limit()
    if total > limit:
        raise UsageError(
            f"the tensors of `{binding.kernel.name}` take {total:,} B at this shape, more "
            f"than {limit:,} B (half of this machine's memory)",
            None,
            hint="run and sim hold every tensor in memory: choose a smaller --shape "
            "(check and compile take any shape)",
        )


def memory_limit() -> int:
    """Half of the physical memory, in bytes (16 GiB where it cannot be read)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return 16 << 30


def tensor_params(kernel: Any, *kinds: ParamKind) -> list[Param]:
    return [
        p for p in kernel.params if p.kind in kinds and isinstance(p.type, TensorType)
    ]


def make_inputs(binding: Any, seed: int) -> dict[str, np.ndarray]:
    """Seeded inputs: the kernel's own generator if it has one, else N(0, 1) floats."""
    check_sizes(binding)
    env = binding.env()
    kdef = binding.kdef
    maker = getattr(kdef, "make_inputs", None) if kdef is not None else None
    rng = np.random.default_rng(seed)
    made = maker(binding.shape, binding.ref_consts(), rng) if maker else {}
    out: dict[str, np.ndarray] = {}
    for p in tensor_params(binding.kernel, ParamKind.IN):
        shape = param_shape(p, env)
        dtype = np_dtype(p.type.dtype)  # type: ignore[union-attr]
        if p.name in made:
            # astype(order="C"), not ascontiguousarray: that makes a 0-d array 1-d
            out[p.name] = np.asarray(made[p.name]).astype(dtype, order="C")
        elif dtype.kind == "f" or dtype.name in ("bfloat16",) or "float8" in dtype.name:
            normal = rng.standard_normal(shape, dtype=np.float32)
            out[p.name] = (
                to_float16(normal) if dtype == np.float16 else normal.astype(dtype)
            )
        else:
            out[p.name] = np.zeros(shape, dtype=dtype)
    check_index_inputs(binding, out, own_rules=False)  # a mod's `init` may be wrong
    return out


def read_inputs(folder: str, binding: Any) -> dict[str, np.ndarray]:
    """Read and check every input's .bin before any work is done."""
    check_sizes(binding)
    env = binding.env()
    if not os.path.isdir(folder):
        found = (
            "is a file, not a folder" if os.path.exists(folder) else "no such folder"
        )
        raise UsageError(
            f"--inputs {folder}: {found}",
            hint="--inputs names a folder holding <param>.bin files",
        )
    derived = set(getattr(binding.kdef, "derived", ()) or ())
    meta = read_meta(folder)
    out: dict[str, np.ndarray] = {}
    for p in tensor_params(binding.kernel, ParamKind.IN):
        if p.name in derived and not os.path.isfile(
            os.path.join(folder, f"{p.name}.bin")
        ):
            continue  # computed below from the others (an attention block mask)
        out[p.name] = _read_one(folder, p, param_shape(p, env), meta)
    check_index_inputs(binding, out)  # before deriving the missing ones from them
    if derived - set(out):
        made = binding.kdef.derived_inputs(binding.shape, binding.consts, out)
        out.update({k: v for k, v in made.items() if k not in out})
    return out


def _read_one(
    folder: str, p: Param, shape: tuple[int, ...], meta: dict[str, Any] | None
) -> np.ndarray:
    path = os.path.join(folder, f"{p.name}.bin")
    dtype = np_dtype(p.type.dtype)  # type: ignore[union-attr]
    check_recorded(folder, meta, p, dtype, shape)
    want = math.prod(shape) * dtype.itemsize
    described = f"{'x'.join(map(str, shape))} {dtype.name} = {want:,} bytes"
    if not os.path.lexists(path):
        raise UsageError(
            f"input `{p.name}` is missing: no file {path}",
            p.loc,
            hint=f"write {described} (raw little-endian, C order), or drop --inputs "
            "to use seeded random inputs",
            code="missing_input_bin",
        )
    size = _regular_file_size(path, f"input `{p.name}`", p.loc)
    if size != want:
        short = "short" if size < want else "long"
        raise UsageError(
            f"input {path} is too {short}: {size:,} bytes, but `{p.name}` is {described}",
            p.loc,
            hint="check --shape and --dtype against the data",
            code="short_input_bin",
        )
    return read_bin(path, dtype).reshape(shape)


def _regular_file_size(path: str, what: str, loc: Loc | None = None) -> int:
    """The size of ``path``, refusing a missing file, a folder, a pipe or a device."""
    if os.path.isdir(path):
        raise UsageError(
            f"{what}: {path} is a folder, not a file",
            loc,
            hint="give a .bin file of raw little-endian values",
        )
    if not os.path.exists(path):
        raise UsageError(f"{what}: no file {path}", loc)
    if not os.path.isfile(path):
        raise UsageError(
            f"{what}: {path} is not a regular file (a pipe or a device?)",
            loc,
            hint="give a .bin file of raw little-endian values",
        )
    return os.path.getsize(path)


def read_bin(path: str, dtype: np.dtype, what: str = "") -> np.ndarray:
    """The raw little-endian values of ``path``; clear errors for unreadable files."""
    size = _regular_file_size(path, what or path)
    if size % dtype.itemsize:
        raise UsageError(
            f"{path}: {size:,} bytes is not a whole number of {dtype.name} "
            f"values ({dtype.itemsize} bytes each)",
            hint="check --dtype against the data",
        )
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    return np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(dtype)


def nonfinite_report(inputs: dict[str, np.ndarray]) -> list[str]:
    """One line per input holding NaN or Inf (reported, not refused)."""
    lines = []
    for name, arr in inputs.items():
        if arr.dtype.kind not in "fV" and arr.dtype.name not in ("bfloat16",):
            continue
        if _surely_finite(arr):
            continue
        a = arr.astype(np.float32)
        n_nan, n_inf = int(np.isnan(a).sum()), int(np.isinf(a).sum())
        if n_nan or n_inf:
            lines.append(
                f"warning: input `{name}` holds {n_nan} NaN and {n_inf} Inf values"
            )
    return lines


_EXPONENT_BITS = {
    "float16": (np.uint16, 0x7C00),
    "bfloat16": (np.uint16, 0x7F80),
    "float32": (np.uint32, 0x7F800000),
    "float64": (np.uint64, 0x7FF << 52),
}


def _surely_finite(arr: np.ndarray) -> bool:
    """No inf or NaN, seen on the bits (converting f16 to test it costs far more);
    False also when the dtype has no entry here (then the caller counts)."""
    found = _EXPONENT_BITS.get(arr.dtype.name)
    if found is None or not arr.size:
        return found is not None
    uint, mask = found
    bits = np.ascontiguousarray(arr).view(uint)
    return int(np.bitwise_and(bits, uint(mask)).max()) != mask


SAME_PRECISION = (
    "same-precision error: the max|err| of the reference itself computed in the "
    "kernel's dtype; the rule is in the README"
)


@dataclass(frozen=True)
class CheckResult:
    verdicts: list[Verdict]
    note: str = ""

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self.verdicts)

    def lines(self) -> list[str]:
        """What run and sim print: one line per output (``Verdict.line``), what the
        bound is made of, then PASS or FAIL."""
        out = ["  " + v.line() for v in self.verdicts]
        if any(v.same_precision_error is not None for v in self.verdicts):
            out.append(f"  ({SAME_PRECISION})")
        return out + ["PASS" if self.passed else "FAIL"]


def check_outputs(
    binding: Any, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]
) -> CheckResult | None:
    """Compare outputs with the kernel's float64 reference by the tolerance rule.

    NaN and Inf in the references (a mod that overflows) show in the verdicts, so
    numpy's floating-point warnings are silenced rather than printed mid-report.
    """
    ref_fn = (
        getattr(binding.kdef, "reference", None) if binding.kdef is not None else None
    )
    if ref_fn is None:
        return None
    with np.errstate(all="ignore"):
        return _check(binding, ref_fn, inputs, outputs)


def _check(
    binding: Any,
    ref_fn: Any,
    inputs: dict[str, np.ndarray],
    outputs: dict[str, np.ndarray],
) -> CheckResult:
    consts = binding.ref_consts()
    ref64 = ref_fn(inputs, binding.shape, consts)
    verdicts = []
    sames: dict[Any, dict[str, np.ndarray]] = {}
    for p in tensor_params(binding.kernel, ParamKind.OUT):
        if p.name not in ref64:
            continue
        out_dtype = p.type.dtype  # type: ignore[union-attr]
        # the rule's same-precision reference is computed in the kernel's input dtype
        # (an fp16 kernel's f32 lse too), once for all the outputs
        elem = binding.dtype
        elem = elem if elem is not None and elem.is_float else out_dtype
        if elem not in sames:
            sames[elem] = ref_fn(inputs, binding.shape, consts, elem)
        same = sames[elem].get(p.name)
        verdicts.append(
            compare(p.name, outputs[p.name], ref64[p.name], same, out_dtype)
        )
    return CheckResult(verdicts)


def write_run(
    folder: str,
    binding: Any,
    inputs: dict[str, np.ndarray],
    outputs: dict[str, np.ndarray],
    check: CheckResult | None,
    extra: dict[str, Any],
) -> None:
    """Write every input and output as <param>.bin plus meta.json into ``folder``."""
    env = binding.env()
    params: dict[str, Any] = {}
    for p in tensor_params(binding.kernel, ParamKind.IN, ParamKind.OUT):
        arr = inputs.get(p.name) if p.kind is ParamKind.IN else outputs.get(p.name)
        if arr is None:
            continue
        arr = np.ascontiguousarray(arr)
        arr.astype(arr.dtype.newbyteorder("<")).tofile(
            os.path.join(folder, f"{p.name}.bin")
        )
        params[p.name] = {
            "kind": p.kind.value,
            "dtype": arr.dtype.name,
            "shape": list(param_shape(p, env)),
            "file": f"{p.name}.bin",
        }
    meta = {
        "kernel": binding.kernel.name,
        "shape": binding.shape,
        "consts": {k: v for k, v in binding.consts.items()},
        "scalars": binding.scalars,
        "params": params,
        "check": (
            None
            if check is None
            else {v.name: _finite(v.as_dict()) for v in check.verdicts}
        ),
    }
    meta.update(extra)
    with open(os.path.join(folder, META), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")


def _finite(d: dict[str, Any]) -> dict[str, Any]:
    return {
        k: (None if isinstance(v, float) and not math.isfinite(v) else v)
        for k, v in d.items()
    }


_META_HINT = (
    "meta.json is written by fadsl run / fadsl sim; run again to write a fresh one"
)


def read_meta(folder: str) -> dict[str, Any] | None:
    """A run folder's meta.json (None if there is none), checked enough to be used."""
    path = os.path.join(folder, META)
    if not os.path.isfile(path):
        return None
    meta = read_json(path, hint=_META_HINT)
    problem = _meta_problem(meta)
    if problem is not None:
        raise UsageError(f"{path}: {problem}", hint=_META_HINT)
    return meta


def _meta_problem(meta: Any) -> str | None:
    if not isinstance(meta, dict) or not isinstance(meta.get("params"), dict):
        return 'expected an object with a "params" object'
    for name, entry in meta["params"].items():
        if not isinstance(entry, dict):
            return f"params.{name} is not an object"
        if entry.get("kind") not in ("in", "out", "scratch") or not isinstance(
            entry.get("dtype"), str
        ):
            return f'params.{name} needs "kind" (in/out/scratch) and "dtype"'
        file = entry.get("file")
        if (
            not isinstance(file, str)
            or os.path.basename(file) != file
            or file in ("", ".", "..")
        ):
            return f"params.{name}.file must be a file name in the run folder"
        shape = entry.get("shape")
        if shape is not None and not (
            isinstance(shape, list)
            and all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
            )
        ):
            return f"params.{name}.shape must be a list of sizes"
    if not isinstance(meta.get("check") or {}, dict):
        return '"check" must be an object'
    return None
