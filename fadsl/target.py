"""Chip targets: one frozen table of facts per SOC_VERSION, loaded from data.

Every fact keeps its public source (repository, file, document; docs/targets.md); facts
the sources do not settle are marked ``UNVERIFIED ...`` in their source string, and
cost-model rates without any source say ``"assumption"``. Built-in targets live in
``fadsl/targets/*.json``; ``--target-file`` loads a user's own description in the same
format (docs/targets.md). This module is the single source of chip facts: the resource
checker, the cost model and the backends read them from here, nothing else hard-codes one.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from fadsl.errors import UsageError

_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "targets")

SPACES = ("UB", "L1", "L0A", "L0B", "L0C")

KERNEL_TYPES = ("MIX_AIC_1_2", "AIV_ONLY", "AIC_ONLY", "AICORE")
"""How a kernel occupies cores: split-chip MIX (1 AIC + 2 AIV per block), vector
only, cube only, or a coupled chip's AI Core (cube and vector in one core)."""

RATE_NAMES = (
    "clock_hz",
    "cube_flops_per_cycle",
    "cube_f32_flops_per_cycle",
    "l1_to_l0a_bytes_per_cycle",
    "l1_to_l0b_bytes_per_cycle",
    "vector_elems_per_cycle",
    "vector_transcendental_cost",
    "hbm_bytes_per_s",
    "mte2_bytes_per_cycle",
    "mte3_bytes_per_cycle",
    "iteration_overhead_cycles",
    "task_overhead_cycles",
)
"""Cost-model rates every target must give (docs/cost-model.md explains each)."""

OPTIONAL_RATES: dict[str, tuple[str, str | None, float]] = {
    "ddr_bytes_per_cycle": (
        "B/cycle per core, HBM -> L1/UB",
        "mte2_bytes_per_cycle",
        1,
    ),
    "fixpipe_bytes_per_cycle": (
        "B/cycle per AIC, L0C -> GM",
        "mte3_bytes_per_cycle",
        1,
    ),
    "l2_bytes": ("B per chip (0: no L2 modelled)", None, 0),
    "flag_handover_cycles": ("cycles per cube <-> vector flag", None, 0),
    "pipe_barrier_cycles": ("cycles per vector op (PipeBarrier)", None, 0),
    "launch_overhead_cycles": ("cycles per kernel launch", None, 0),
}
"""Rates added after the first target format (engine model, L2, overheads): a target
file that lacks one gets (unit, the rate it copies or None, else this value), with a
``default:`` source saying so, so user targets written before them keep loading."""

_SIZES = (
    "ub_bytes",
    "l1_bytes",
    "l0a_bytes",
    "l0b_bytes",
    "l0c_bytes",
    "aic_cores",
    "aiv_cores",
    "ub_align",
    "l1_align",
    "l0ab_align",
    "l0c_align",
)
"""Facts that are positive integers."""

MEMORY_FACTS = _SIZES + (
    "has_datacopypad",
    "cube_dtypes",
    "vector_dtypes",
)
"""Facts that must carry a source string in every target description."""


@dataclass(frozen=True)
class Rate:
    """One cost-model rate: a number, its unit, and where it comes from."""

    name: str
    value: float
    unit: str
    source: str
    """A public source, ``UNVERIFIED ...`` when sources disagree, or ``assumption ...``."""

    @property
    def is_assumption(self) -> bool:
        return self.source.lower().startswith("assumption")

    @property
    def is_unverified(self) -> bool:
        return self.source.startswith("UNVERIFIED")

    @property
    def is_default(self) -> bool:
        return self.source.startswith("default:")


@dataclass(frozen=True)
class Target:
    """Per-core memories (bytes usable by a kernel), core counts and rules of one chip."""

    name: str
    """SOC_VERSION as CMake takes it, e.g. ascend910b1."""
    arch: int
    """__NPU_ARCH__: 2201 (910B/A3), 1001 (910A), 2002 (310P)."""
    split: bool
    """True when cube (AIC) and vector (AIV) are separate cores (C:V = 1:2)."""
    ub_bytes: int
    """Per vector core (split chips) or per AI Core (coupled chips)."""
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    aic_cores: int
    """Cube cores (split) or AI Cores (coupled): the MIX/AICORE blockDim limit."""
    aiv_cores: int
    """Vector cores a vector-only kernel can start (coupled: the AI Cores' vector units)."""
    has_datacopypad: bool
    cube_dtypes: tuple[str, ...]
    """Operand dtypes the cube multiplies (IR spellings: f16, bf16, f32, u8 ...)."""
    vector_dtypes: tuple[str, ...]
    ub_align: int = 32
    l1_align: int = 32
    l0ab_align: int = 512
    l0c_align: int = 1024
    standalone_vector_cores: int = 0
    """Extra Vector Cores outside the AI Cores (310P); fadsl does not launch on them."""
    codegen: bool = True
    """Whether the Ascend C backend lowers for this chip (else: check only)."""
    hbm_bytes: int = 0
    """Device memory (HBM, or the 310P's DDR) of one device in bytes, which holds every
    GM tensor of a launch; 0: unknown, not checked (``plan/resources/device_memory.py``)."""
    rates: dict[str, Rate] = field(default_factory=dict, compare=False)
    """Cost-model rates by name (see RATE_NAMES)."""
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    """Fact name -> public source; values starting with UNVERIFIED mark open facts."""

    def capacity(self, space: str) -> int:
        return {
            "UB": self.ub_bytes,
            "L1": self.l1_bytes,
            "L0A": self.l0a_bytes,
            "L0B": self.l0b_bytes,
            "L0C": self.l0c_bytes,
        }[space]

    def align(self, space: str) -> int:
        return {
            "UB": self.ub_align,
            "L1": self.l1_align,
            "L0A": self.l0ab_align,
            "L0B": self.l0ab_align,
            "L0C": self.l0c_align,
        }[space]

    def core_of(self, space: str) -> str:
        """The core that owns ``space``: AIV/AIC on split chips, AICORE on coupled ones."""
        if not self.split:
            return "AICORE"
        return "AIV" if space == "UB" else "AIC"

    def physical_cores(self, kernel_type: str) -> tuple[int, str]:
        """(count, what is counted) that bounds blockDim for ``kernel_type``."""
        if kernel_type == "AIV_ONLY":
            return self.aiv_cores, "AIV" if self.split else "AI Core"
        if kernel_type in ("MIX_AIC_1_2", "AIC_ONLY"):
            return self.aic_cores, "AIC"
        return self.aic_cores, "AI Core"

    def rate(self, name: str) -> float:
        found = self.rates.get(name)
        if found is None:
            raise UsageError(
                f"target {self.name} has no cost-model rate {name!r}",
                hint=f'add it under "rates"; every target gives '
                f"{', '.join(RATE_NAMES)}",
            )
        return found.value

    def unverified(self) -> list[str]:
        """Names of facts and rates whose source is marked UNVERIFIED."""
        facts = [k for k, v in self.sources.items() if v.startswith("UNVERIFIED")]
        return facts + [k for k, r in self.rates.items() if r.is_unverified]


def builtin_names() -> tuple[str, ...]:
    return tuple(sorted(f[:-5] for f in os.listdir(_DIR) if f.endswith(".json")))


@lru_cache(maxsize=None)
def get(name: str) -> Target:
    """A built-in target by SOC_VERSION (case-insensitive)."""
    key = name.strip().lower()
    path = os.path.join(_DIR, f"{key}.json")
    if not os.path.isfile(path):
        names = builtin_names()
        import difflib

        close = difflib.get_close_matches(key, names, n=1)
        raise UsageError(
            f"unknown target {name!r}",
            None,
            hint=(f"did you mean {close[0]!r}? " if close else "")
            + f"built-in targets: {', '.join(names)}; or describe your chip in JSON "
            "and pass --target-file",
            code="unknown_target",
        )
    return load_file(path)


def load_file(path: str) -> Target:
    """Load a target description (the JSON format of fadsl/targets/*.json)."""
    from fadsl.io.files import read_json

    hint = "start from a built-in one: fadsl/targets/ascend910b1.json"
    if os.path.isdir(path):
        raise UsageError(
            f"--target-file {path} is a folder; it takes a JSON file", hint=hint
        )
    data = read_json(path, "--target-file", hint=hint)
    if not isinstance(data, dict):
        raise UsageError(f"{path}: a target description is a JSON object")
    return from_dict(data, path)


_REQUIRED = (
    "name",
    "arch",
    "split",
    "ub_bytes",
    "l1_bytes",
    "l0a_bytes",
    "l0b_bytes",
    "l0c_bytes",
    "aic_cores",
    "aiv_cores",
    "has_datacopypad",
    "cube_dtypes",
    "vector_dtypes",
    "rates",
    "sources",
)
_HINT = "see docs/targets.md and fadsl/targets/ascend910b1.json for the format"


def from_dict(data: dict[str, Any], origin: str) -> Target:
    missing = [k for k in _REQUIRED if k not in data]
    if missing:
        raise UsageError(
            f"{origin}: target description lacks {', '.join(missing)}", hint=_HINT
        )
    known = set(Target.__dataclass_fields__)
    extra = sorted(set(data) - known - {"comment"})
    if extra:
        raise UsageError(
            f"{origin}: unknown target field(s) {', '.join(extra)}", hint=_HINT
        )
    kwargs = {k: v for k, v in data.items() if k in known}
    for k in ("cube_dtypes", "vector_dtypes"):
        if not isinstance(kwargs[k], list) or not all(
            isinstance(d, str) for d in kwargs[k]
        ):
            raise UsageError(
                f"{origin}: {k} must be a list of dtype names, got " f"{kwargs[k]!r}",
                hint='e.g. ["f16", "bf16"]',
            )
        kwargs[k] = tuple(kwargs[k])
    for k in _SIZES + ("hbm_bytes",):
        if k in kwargs and (not _is_int(kwargs[k]) or kwargs[k] <= 0):
            raise UsageError(
                f"{origin}: {k} must be a positive integer, got {kwargs[k]!r}"
            )
    for k in ("ub_align", "l1_align", "l0ab_align", "l0c_align"):
        if k in kwargs and kwargs[k] & (kwargs[k] - 1):
            raise UsageError(f"{origin}: {k} must be a power of two, got {kwargs[k]}")
    kwargs["sources"] = _sources(data["sources"], origin)
    kwargs["rates"] = _rates(data["rates"], origin)
    return Target(**kwargs)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _sources(raw: Any, origin: str) -> dict[str, str]:
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise UsageError(f'{origin}: "sources" maps fact names to source strings')
    unsourced = [k for k in MEMORY_FACTS if not raw.get(k, "").strip()]
    if unsourced:
        raise UsageError(
            f"{origin}: no source given for {', '.join(unsourced)}",
            hint="every memory and core fact names where it comes from; write "
            '"UNVERIFIED: ..." when sources disagree, "assumption: ..." when there is none',
        )
    return dict(raw)


def _rates(raw: Any, origin: str) -> dict[str, Rate]:
    if not isinstance(raw, dict):
        raise UsageError(
            f'{origin}: "rates" maps rate names to {{value, unit, source}}'
        )
    missing = [k for k in RATE_NAMES if k not in raw]
    if missing:
        raise UsageError(f"{origin}: \"rates\" lacks {', '.join(missing)}", hint=_HINT)
    rates = {name: _rate(name, entry, origin) for name, entry in raw.items()}
    for name, (unit, copies, value) in OPTIONAL_RATES.items():
        if name in rates:
            continue
        if copies is not None:
            value, how = rates[copies].value, f"the value of {copies}"
        else:
            how = f"{value:g} (not modelled)"
        rates[name] = Rate(name, float(value), unit, f"default: not in the file; {how}")
    return rates


def _rate(name: str, entry: Any, origin: str) -> Rate:
    where = f"{origin}: rate {name}"
    if not isinstance(entry, dict):
        raise UsageError(f'{where}: expected {{"value", "unit", "source"}}')
    value = entry.get("value")
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise UsageError(f"{where}: value must be a positive number, got {value!r}")
    unit = entry.get("unit")
    source = entry.get("source") or entry.get("assumption")
    if not isinstance(unit, str) or not isinstance(source, str) or not source.strip():
        raise UsageError(f'{where}: needs a "unit" and a "source" (or "assumption")')
    if "assumption" in entry and not source.lower().startswith("assumption"):
        source = "assumption: " + source
    return Rate(name, float(value), unit, source)


def resolve(name: str | None, file: str | None) -> Target:
    """The target chosen on the command line (--target-file wins over --target)."""
    for flag, given in (("--target-file", file), ("--target", name)):
        if given is not None and not given.strip():
            raise UsageError(
                f"{flag} is empty",
                hint=f"name a chip, e.g. --target ascend910b1 (built-in targets: "
                f"{', '.join(builtin_names())}); leave {flag} out for ascend910b1",
                code="target_empty",
            )
    if file:
        return load_file(file)
    return get(name or "ascend910b1")
