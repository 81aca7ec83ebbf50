"""Chip targets: every built-in loads, every fact has a source, user files are validated."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fadsl import target as targets
from fadsl.errors import UsageError
from fadsl.target import OPTIONAL_RATES

REQUIRED = (
    "ascend910b1",
    "ascend910b2",
    "ascend910b3",
    "ascend910b4",
    "ascend910_9392",
    "ascend910a",
    "ascend310p3",
)
BUILTIN_DIR = Path(targets.__file__).parent / "targets"


def test_every_listed_chip_is_built_in() -> None:
    assert set(REQUIRED) <= set(targets.builtin_names())


@pytest.mark.parametrize("name", targets.builtin_names())
def test_target_loads_with_sources_for_every_memory_fact(name: str) -> None:
    t = targets.get(name)
    assert t.name == name
    for fact in targets.MEMORY_FACTS:
        assert len(t.sources[fact]) > 10, f"{name}: {fact} has no real source"
    for space in targets.SPACES:
        align = t.align(space)
        assert t.capacity(space) > 0 and align & (align - 1) == 0
        assert t.capacity(space) % 32 == 0
    assert set(targets.RATE_NAMES) <= set(t.rates)
    for rate in t.rates.values():
        assert rate.unit and rate.source
        assert rate.value > 0 or (rate.is_default and rate.name in OPTIONAL_RATES)


@pytest.mark.parametrize("name", targets.builtin_names())
def test_peak_rates_are_labelled_unverified_or_assumption(name: str) -> None:
    t = targets.get(name)
    for key in ("clock_hz", "cube_flops_per_cycle", "hbm_bytes_per_s"):
        r = t.rates[key]
        assert (
            r.is_unverified or r.is_assumption
        ), f"{name}: {key} claims a verified peak"


@pytest.mark.parametrize(
    "name, aic, aiv, open_facts",
    [
        ("ascend910b1", 24, 48, set()),
        ("ascend910b2", 24, 48, set()),
        ("ascend910b3", 20, 40, set()),
        ("ascend910b4", 20, 40, {"aiv_cores"}),
        ("ascend910_9392", 20, 40, {"aic_cores", "aiv_cores"}),
        ("ascend910a", 30, 30, {"aic_cores"}),
        ("ascend310p3", 8, 8, {"aic_cores"}),
    ],
)
def test_core_counts_and_their_unverified_marks(
    name: str, aic: int, aiv: int, open_facts: set[str]
) -> None:
    t = targets.get(name)
    assert (t.aic_cores, t.aiv_cores) == (aic, aiv)
    assert open_facts <= set(t.unverified())
    for fact in open_facts:
        assert t.sources[fact].startswith("UNVERIFIED")


def test_disagreeing_core_counts_mention_the_other_value() -> None:
    assert "32" in targets.get("ascend910a").sources["aic_cores"]
    assert "10" in targets.get("ascend310p3").sources["aic_cores"]
    assert "24" in targets.get("ascend910_9392").sources["aic_cores"]


@pytest.mark.parametrize("name", ["ascend910b1", "ascend910b4", "ascend910_9392"])
def test_split_chips(name: str) -> None:
    t = targets.get(name)
    assert t.arch == 2201 and t.split and t.codegen and t.has_datacopypad
    assert (t.ub_bytes, t.l1_bytes, t.l0a_bytes, t.l0b_bytes, t.l0c_bytes) == (
        192 * 1024 - 256,
        512 * 1024 - 256,
        64 * 1024,
        64 * 1024,
        128 * 1024,
    )
    assert "bf16" in t.cube_dtypes and "f32" in t.cube_dtypes
    assert t.core_of("UB") == "AIV" and t.core_of("L0C") == "AIC"
    assert t.physical_cores("MIX_AIC_1_2") == (t.aic_cores, "AIC")
    assert t.physical_cores("AIV_ONLY") == (t.aiv_cores, "AIV")


@pytest.mark.parametrize("name, arch", [("ascend910a", 1001), ("ascend310p3", 2002)])
def test_coupled_chips(name: str, arch: int) -> None:
    t = targets.get(name)
    assert t.arch == arch and not t.split and not t.codegen and not t.has_datacopypad
    assert (t.ub_bytes, t.l1_bytes, t.l0c_bytes) == (
        248 * 1024,
        1024 * 1024,
        256 * 1024,
    )
    assert "bf16" not in t.cube_dtypes
    assert {t.core_of(s) for s in targets.SPACES} == {"AICORE"}
    assert t.physical_cores("AICORE") == (t.aic_cores, "AI Core")


def test_unknown_target_suggests_a_close_name() -> None:
    with pytest.raises(UsageError, match="unknown target") as info:
        targets.get("ascend910b9")
    assert info.value.hint is not None and "did you mean" in info.value.hint


def _user_file(tmp_path: Path, **changes: object) -> str:
    data = json.loads((BUILTIN_DIR / "ascend910b1.json").read_text(encoding="utf-8"))
    data.update(name="mychip")
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    path = tmp_path / "mychip.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_target_file_wins_over_target_name(tmp_path: Path) -> None:
    path = _user_file(tmp_path, ub_bytes=65536)
    t = targets.resolve("ascend910a", path)
    assert (t.name, t.ub_bytes) == ("mychip", 65536)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"l0c_bytes": None}, "lacks l0c_bytes"),
        ({"ub_bytes": -1}, "ub_bytes must be a positive integer"),
        ({"ub_align": 48}, "ub_align must be a power of two"),
        ({"flux": 1}, "unknown target field"),
        ({"sources": {"ub_bytes": "x"}}, "no source given for l1_bytes"),
        (
            {"rates": {"clock_hz": {"value": 1e9, "unit": "Hz", "source": "x"}}},
            'rates" lacks cube_flops_per_cycle',
        ),
    ],
)
def test_bad_target_files_are_usage_errors(
    tmp_path: Path, change: dict, message: str
) -> None:
    with pytest.raises(UsageError, match=message.replace('"', ".")):
        targets.load_file(_user_file(tmp_path, **change))


def test_rate_without_source_is_refused(tmp_path: Path) -> None:
    data = json.loads((BUILTIN_DIR / "ascend910b1.json").read_text(encoding="utf-8"))
    data["rates"]["clock_hz"] = {"value": 1e9, "unit": "Hz"}
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(UsageError, match='needs a "unit" and a "source"'):
        targets.load_file(str(path))


def test_assumption_key_marks_the_rate(tmp_path: Path) -> None:
    data = json.loads((BUILTIN_DIR / "ascend910b1.json").read_text(encoding="utf-8"))
    data["rates"]["clock_hz"] = {"value": 1e9, "unit": "Hz", "assumption": "my guess"}
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert targets.load_file(str(path)).rates["clock_hz"].is_assumption


def test_invalid_json_points_at_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{\n  "name": "x",\n  oops\n}\n', encoding="utf-8")
    with pytest.raises(UsageError, match="not valid JSON") as info:
        targets.load_file(str(path))
    assert info.value.loc is not None and info.value.loc.line == 3
    with pytest.raises(UsageError, match="no such file"):
        targets.load_file(os.path.join(str(tmp_path), "missing.json"))


def test_docs_list_every_builtin_target_with_its_numbers() -> None:
    docs = (Path(__file__).parent.parent / "docs" / "targets.md").read_text(
        encoding="utf-8"
    )
    sections = {s.split("\n", 1)[0].strip(): s for s in docs.split("\n### ")[1:]}
    for name in targets.builtin_names():
        t = targets.get(name)
        assert name in sections, f"docs/targets.md has no section for {name}"
        for fact in ("ub_bytes", "l1_bytes", "l0c_bytes", "aic_cores", "aiv_cores"):
            assert f"| {fact} | {getattr(t, fact)} |" in sections[name], (name, fact)
