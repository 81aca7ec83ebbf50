"""The generated project's README claims only what `fadsl compile` checked, and
`fadsl sim` records what it built and ran (issue 13, defect 5)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from test_outputs import FA2, cli, fake_sim, sim_args


def checked_section(project: Path) -> str:
    text = (project / "README.md").read_text(encoding="utf-8")
    return text[text.index("## What was checked") :]


def test_the_readme_claims_no_build_that_compile_did_not_do(tmp_path: Path) -> None:
    out = tmp_path / "proj"
    assert cli(tmp_path, "compile", FA2, "-o", str(out), "--quiet") == 0
    section = checked_section(out)
    assert "builds with plain cmake" not in section
    assert "when it generated this project" not in section
    assert "It did not build or run anything." in section
    assert "every on-chip buffer fits ascend910b1" in section
    assert not any(p.name == "build" for p in out.iterdir())


def test_the_readme_does_not_claim_a_fit_that_was_skipped(tmp_path: Path) -> None:
    out = tmp_path / "proj"
    big = ["--set", "block_q=512", "--set", "block_kv=1024"]
    argv = ["compile", FA2, "-o", str(out), "--quiet", "--skip-resource-proof", *big]
    assert cli(tmp_path, *argv) == 0
    section = checked_section(out)
    assert "fits ascend910b1 for" not in section
    assert "the buffers do NOT fit" in section


def test_sim_records_what_it_built_and_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_sim(monkeypatch)
    out = tmp_path / "sim"
    assert cli(tmp_path, *sim_args(out)) == 0
    meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    assert meta["shape"] == {"B": 1, "N": 1, "Sq": 16, "Skv": 16, "D": 16}
    assert meta["result"] == "PASS"
    assert re.match(r"cmake, .+, RUN_MODE=fadsl$", meta["built_with"])
    assert cli(tmp_path, *sim_args(tmp_path / "unchecked", "--no-check")) == 0
    meta = json.loads((tmp_path / "unchecked" / "meta.json").read_text())
    assert meta["result"] == "not checked"
