"""``fadsl tune``: feasible and sorted results, speed, fixed constants, progress, --apply."""

from __future__ import annotations

import argparse
import os
import shutil
import stat
from pathlib import Path

import pytest

from fadsl import target as targets
from fadsl.cli import main
from fadsl.commands import common, flags, tune_cmd
from fadsl.driver.lower import lower
from fadsl.driver.source import load_source, select

ROOT = Path(__file__).resolve().parents[2]
FA2 = str(ROOT / "examples" / "fa2.py")
SHAPE = "B=1,N=8,Sq=4096,Skv=4096,D=128"


def _args(path: str = FA2, *sets: str, top: int = 12) -> argparse.Namespace:
    return argparse.Namespace(
        file=path,
        kernel=None,
        sets=list(sets),
        dtype=None,
        shape=SHAPE,
        target="ascend910b1",
        target_file=None,
        top=top,
        apply=False,
        json=False,
    )


@pytest.fixture(scope="module")
def full_search() -> tune_cmd.TuneResult:
    args = _args()
    chosen = select(load_source(FA2), None)
    return tune_cmd.search(chosen, args, targets.get("ascend910b1"))


def test_search_covers_the_whole_space(full_search: tune_cmd.TuneResult) -> None:
    # Its speed (issue 6: 200 configurations in 5 s) is measured by bench/tune.py, not here.
    assert full_search.tuned == ("block_q", "block_kv", "stages")
    assert full_search.evaluated == 32 * 32 * 2
    assert 0 < full_search.feasible < full_search.evaluated


def test_results_are_feasible_and_sorted_by_modelled_time(
    full_search: tune_cmd.TuneResult,
) -> None:
    ranked = full_search.ranked
    assert len(ranked) == 12
    times = [c.estimate.time_s for c in ranked]
    assert times == sorted(times)
    chosen = select(load_source(FA2), None)
    t = targets.get("ascend910b1")
    for c in ranked:
        binding = common.bind(
            chosen, _args(FA2, *(f"{k}={v}" for k, v in c.values.items())), target=t
        )
        report = lower(binding).report
        assert report is not None
        assert report.ok, c.values
        assert {s.space: s.percent for s in report.spaces} == c.percent


def test_best_configuration_beats_every_feasible_square_tile(
    full_search: tune_cmd.TuneResult,
) -> None:
    from fadsl.perf.kernel import KernelModel

    best = full_search.ranked[0].estimate.time_s
    chosen = select(load_source(FA2), None)
    kernel = chosen.build({"stages": 2})
    model = KernelModel(kernel, targets.get("ascend910b1"))
    env = {**flags.parse_shape(SHAPE, kernel.shape_syms), "stages": 2}
    for size in (32, 64, 96):
        assert best <= model.estimate({**env, "block_q": size, "block_kv": size}).time_s


@pytest.mark.smoke
def test_set_holds_a_constant_fixed() -> None:
    args = _args(FA2, "block_q=64", top=3)
    chosen = select(load_source(FA2), None)
    result = tune_cmd.search(chosen, args, targets.get("ascend910b1"))
    assert result.tuned == ("block_kv", "stages") and result.evaluated == 64
    assert all("block_q" not in c.values for c in result.ranked)


def test_cli_prints_progress_and_a_modelled_table(capsys) -> None:  # type: ignore[no-untyped-def]
    rc = main(
        [
            "tune",
            FA2,
            "--target",
            "ascend910b1",
            "--shape",
            SHAPE,
            "--set",
            "stages=2",
            "--top",
            "3",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0
    lines = err.splitlines()  # captured: not a terminal, so a line per phase
    assert lines[0] == "fadsl tune: screening 1024 configurations of block_q, block_kv"
    assert any("ranking: the best 3 by modelled time" in ln for ln in lines)
    assert "1024/1024 configurations, done in" in lines[-1] and "\r" not in err
    rows = [ln for ln in out.splitlines() if ln.strip()[:1].isdigit() and " ms " in ln]
    assert len(rows) == 3
    assert "MODELLED" in out and "1024 configurations evaluated" in out
    assert " planned exactly (as fadsl check plans them)" in out


def test_no_fitting_configuration_is_an_error(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import json

    data = json.loads(
        (Path(targets.__file__).parent / "targets" / "ascend910b1.json").read_text(
            encoding="utf-8"
        )
    )
    data.update(name="nochip", ub_bytes=1024)
    chip = tmp_path / "nochip.json"
    chip.write_text(json.dumps(data), encoding="utf-8")
    rc = main(
        ["tune", FA2, "--target-file", str(chip), "--shape", SHAPE, "--set", "stages=1"]
    )
    assert (
        rc == 1
        and "no configuration of block_q, block_kv fits nochip"
        in capsys.readouterr().err
    )


# ----------------------------------------------------------------------------
# --apply
# ----------------------------------------------------------------------------


def _copy_fa2(tmp_path: Path) -> Path:
    path = tmp_path / "fa2.py"
    shutil.copy(FA2, path)
    os.chmod(path, 0o640)
    return path


def test_apply_rewrites_exactly_the_default_literals(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = _copy_fa2(tmp_path)
    before = path.read_text(encoding="utf-8").splitlines(keepends=True)
    rc = main(
        [
            "tune",
            str(path),
            "--target",
            "ascend910b1",
            "--shape",
            SHAPE,
            "--set",
            "stages=2",
            "--top",
            "1",
            "--apply",
            "--json",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0
    import json

    best = json.loads(out[: out.rindex("}") + 1])["ranked"][0]["values"]
    after = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(after) == len(before)
    changed = [(b, a) for b, a in zip(before, after) if a != b]
    expected = {name: f"    {name}: int = {value},\n" for name, value in best.items()}
    assert {a for _, a in changed} == {
        expected[n] for n in best if f"    {n}: int = {best[n]},\n" not in before
    }
    assert all(b.split(":")[0] == a.split(":")[0] for b, a in changed)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["fa2.py"]
    assert f"applied to {path}" in out


def test_apply_edits_nothing_when_defaults_are_already_best(tmp_path: Path) -> None:
    from fadsl.commands import apply_defaults

    path = _copy_fa2(tmp_path)
    text = path.read_text(encoding="utf-8")
    chosen = select(load_source(str(path)), None)
    assert apply_defaults.apply(str(path), chosen, {"block_q": 128, "stages": 2}) == []
    assert apply_defaults.apply(str(path), chosen, {"block_kv": 96}) == [
        "block_kv: 512 -> 96"
    ]
    assert path.read_text(encoding="utf-8") == text.replace(
        "block_kv: int = 512,", "block_kv: int = 96,"
    )


def test_apply_refuses_textual_ir(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from fadsl.ir.text.printer import print_kernel

    kernel = select(load_source(FA2), None).build({})
    fir = tmp_path / "fa2.fir"
    fir.write_text(print_kernel(kernel), encoding="utf-8")
    rc = main(
        ["tune", str(fir), "--target", "ascend910b1", "--shape", SHAPE, "--apply"]
    )
    err = capsys.readouterr().err
    assert rc == 1 and "is textual IR" in err
    assert fir.read_text(encoding="utf-8") == print_kernel(kernel)


def test_apply_refuses_a_kernel_built_elsewhere(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    user = tmp_path / "variants.py"
    user.write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'examples')!r})\n"
        "from fa2 import fa2 as attention\n",
        encoding="utf-8",
    )
    rc = main(
        ["tune", str(user), "--target", "ascend910b1", "--shape", SHAPE, "--apply"]
    )
    err = capsys.readouterr().err
    assert rc == 1 and "built by fd.attention" in err and "--set" in err


def test_apply_refuses_a_default_that_is_not_a_literal(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = _copy_fa2(tmp_path)
    text = path.read_text(encoding="utf-8").replace(
        "block_q: int = 128,", "block_q: int = 2 * 64,"
    )
    path.write_text(text, encoding="utf-8")
    rc = main(
        [
            "tune",
            str(path),
            "--target",
            "ascend910b1",
            "--shape",
            SHAPE,
            "--set",
            "stages=2",
            "--top",
            "1",
            "--apply",
        ]
    )
    err = capsys.readouterr().err
    assert (
        rc == 1
        and "the default of `block_q` is `2 * 64`, not an integer literal" in err
    )
    assert path.read_text(encoding="utf-8") == text


def test_textual_ir_tunes_block_sizes_but_not_stages(tmp_path: Path) -> None:
    from fadsl.ir.text.printer import print_kernel

    kernel = select(load_source(FA2), None).build({})
    fir = tmp_path / "fa2.fir"
    fir.write_text(print_kernel(kernel), encoding="utf-8")
    chosen = select(load_source(str(fir)), None)
    result = tune_cmd.search(
        chosen, _args(str(fir), "block_q=128", top=2), targets.get("ascend910b2")
    )
    assert result.tuned == ("block_kv",) and result.evaluated == 32
    assert [set(c.values) for c in result.ranked] == [{"block_kv"}] * 2


def test_tune_keeps_exactly_the_configurations_check_accepts() -> None:
    """The pre-screen used to take, per configuration, the largest footprint under plans
    made at other sizes (which double-buffer where a 128x128 plan cannot), and so dropped
    fa2's own defaults on 910B2 although `fadsl check` accepts them."""
    t = targets.get("ascend910b2")
    shape = "B=1,N=8,Sq=8192,Skv=8192,D=128"
    args = _args(FA2, "block_q=128", "stages=2", top=64)
    args.shape, args.target = shape, "ascend910b2"
    chosen = select(load_source(FA2), None)
    result = tune_cmd.search(chosen, args, t)
    kept = {c.values["block_kv"] for c in result.ranked}
    assert {128, 256} <= kept
    for block_kv in tune_cmd.BLOCK_VALUES:
        one = _args(FA2, "block_q=128", "stages=2", f"block_kv={block_kv}")
        one.shape, one.target = shape, "ascend910b2"
        report = lower(common.bind(chosen, one, target=t)).report
        assert report is not None
        assert (block_kv in kept) == report.ok, block_kv
