"""``fadsl check``: the table, --json, exit codes, and the overflow error of the issue."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fadsl import target as targets
from fadsl.cli import main

ROOT = Path(__file__).resolve().parents[2]
FA2 = str(ROOT / "examples" / "fa2.py")
DEFAULT_SHAPE = "B=1,N=8,Sq=4096,Skv=4096,D=128"
BIG_SHAPE = "B=1,N=8,Sq=10000,Skv=10000,D=256"
LISTED = (
    "ascend910b1",
    "ascend910b2",
    "ascend910b3",
    "ascend910b4",
    "ascend910_9392",
    "ascend910a",
    "ascend310p3",
)


def _check(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    rc = main(["check", FA2, *extra])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.smoke
def test_must_show_overflow_exits_1_and_names_the_file(capsys, golden) -> None:  # type: ignore[no-untyped-def]
    rc, out, err = _check(
        capsys,
        "--target",
        "ascend910b1",
        "--shape",
        BIG_SHAPE,
        "--set",
        "block_q=512",
        "--set",
        "block_kv=512",
    )
    assert rc == 1
    assert re.search(r"overflow in kernel `fa2` \(fa2\.py\) on ascend910b1", err)
    assert "--set block_" in err and "fa2.py:" in err
    assert "DOES NOT FIT" in out
    golden(err.replace(str(ROOT), "<repo>"), "err")


def test_the_suggested_pair_fits(capsys) -> None:  # type: ignore[no-untyped-def]
    _, _, err = _check(
        capsys,
        "--target",
        "ascend910b1",
        "--shape",
        BIG_SHAPE,
        "--set",
        "block_q=512",
        "--set",
        "block_kv=512",
    )
    sets = re.findall(r"--set (block_\w+)=(\d+)", err.split("= hint:")[1])
    assert sets
    args = [a for name, v in dict(sets).items() for a in ("--set", f"{name}={v}")]
    rc, out, _ = _check(capsys, "--target", "ascend910b1", "--shape", BIG_SHAPE, *args)
    assert rc == 0 and "fa2 fits on ascend910b1" in out


def test_small_blocks_fit_the_big_shape(capsys) -> None:  # type: ignore[no-untyped-def]
    rc, out, err = _check(
        capsys,
        "--target",
        "ascend910b1",
        "--shape",
        BIG_SHAPE,
        "--set",
        "block_q=64",
        "--set",
        "block_kv=64",
    )
    assert (rc, err) == (0, "")


@pytest.mark.parametrize("name", LISTED)
def test_every_listed_target_fits_fa2_with_default_tiles(capsys, name: str) -> None:  # type: ignore[no-untyped-def]
    rc, out, err = _check(capsys, "--target", name, "--shape", DEFAULT_SHAPE)
    assert rc == 0, err
    assert f"fa2 fits on {name}" in out


def test_table_shows_spaces_buffers_and_cores(capsys) -> None:  # type: ignore[no-untyped-def]
    rc, out, _ = _check(capsys, "--target", "ascend910b1", "--shape", DEFAULT_SHAPE)
    assert rc == 0
    lines = out.splitlines()
    assert any(ln.split()[:2] == ["memory", "core"] for ln in lines)
    for space, core in (("UB", "AIV"), ("L1", "AIC"), ("L0A", "AIC"), ("L0C", "AIC")):
        assert any(ln.split()[:2] == [space, core] for ln in lines), space
    assert any(ln.startswith("buffer ") and "source" in ln for ln in lines)
    assert re.search(r"cores: 256 tasks .*blockDim 24 .* 11 tasks per core", out)
    assert "UB = " in out and "pad32(" in out


def test_json_agrees_with_itself(capsys) -> None:  # type: ignore[no-untyped-def]
    rc, out, _ = _check(
        capsys, "--target", "ascend910b3", "--shape", DEFAULT_SHAPE, "--json"
    )
    assert rc == 0
    data = json.loads(out)
    assert data["fits"] is True and data["target"] == "ascend910b3"
    assert [s["space"] for s in data["spaces"]] == ["UB", "L1", "L0A", "L0B", "L0C"]
    for s in data["spaces"]:
        inside = [b["bytes"] for b in data["buffers"] if b["space"] == s["space"]]
        assert sum(inside) == s["used"] and s["capacity"] == targets.get(
            "ascend910b3"
        ).capacity(s["space"])
    assert data["cores"] == {
        "tasks": 256,
        "block_dim": 20,
        "physical": 20,
        "unit": "AIC",
        "tasks_per_core": 13,
        "requested": False,
        "ok": True,
    }
    assert all(re.match(r"fa2\.py:\d+$", b["source"]) for b in data["buffers"])


def test_json_on_overflow_still_prints_and_exits_1(capsys) -> None:  # type: ignore[no-untyped-def]
    rc, out, err = _check(
        capsys,
        "--target",
        "ascend910b1",
        "--shape",
        BIG_SHAPE,
        "--set",
        "block_q=512",
        "--set",
        "block_kv=512",
        "--json",
    )
    data = json.loads(out)
    assert rc == 1 and data["fits"] is False and "overflow" in err
    assert any(s["overflow"] for s in data["spaces"])


def test_user_target_file(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(
        (Path(targets.__file__).parent / "targets" / "ascend910b1.json").read_text(
            encoding="utf-8"
        )
    )
    data.update(name="tinychip", ub_bytes=32768)
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    rc, _, err = _check(capsys, "--target-file", str(path), "--shape", DEFAULT_SHAPE)
    assert rc == 1 and "UB overflow in kernel `fa2` (fa2.py) on tinychip" in err


def test_block_dim_above_physical_aic_is_refused(capsys) -> None:  # type: ignore[no-untyped-def]
    rc, _, err = _check(
        capsys, "--target", "ascend910b1", "--shape", DEFAULT_SHAPE, "--block-dim", "25"
    )
    assert rc == 1 and "asks blockDim 25, but ascend910b1 has 24 physical AIC" in err
    rc, out, _ = _check(
        capsys, "--target", "ascend910b1", "--shape", DEFAULT_SHAPE, "--block-dim", "24"
    )
    assert rc == 0 and "blockDim 24 = asked" in out


def test_unknown_target_is_a_usage_error(capsys) -> None:  # type: ignore[no-untyped-def]
    rc, _, err = _check(capsys, "--target", "ascend910", "--shape", DEFAULT_SHAPE)
    assert rc == 1 and "unknown target 'ascend910'" in err


def test_bf16_on_a_chip_whose_cube_lacks_it(capsys) -> None:  # type: ignore[no-untyped-def]
    rc, _, err = _check(
        capsys,
        "--target",
        "ascend910a",
        "--shape",
        DEFAULT_SHAPE,
        "--dtype",
        "bf16",
        "--set",
        "block_q=64",
    )
    assert rc == 1 and "the cube of ascend910a does not take bf16" in err
    rc, _, err = _check(
        capsys, "--target", "ascend910b1", "--shape", DEFAULT_SHAPE, "--dtype", "bf16"
    )
    assert rc == 0, err
