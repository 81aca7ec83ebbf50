"""Caches are checked when read (issue 13, defect 2): an edited, truncated or partial
entry is reported and rebuilt, never used.

The compile caches (clang-format's output, Jinja's compiled templates) are exercised
through separate processes (the Jinja environment lives for the process); the sim
build cache through ``sim`` with the cmake build replaced by a stand-in that writes a
small program, so that no C++ is compiled here.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_outputs import FA2, ROOT, SMALL, cli, tree

from fadsl.backends.sim import run as sim_run


def compile_with_cache(cache: Path, out: Path) -> str:
    env = dict(os.environ, FADSL_CACHE_DIR=str(cache))
    env.pop("FADSL_NO_CACHE", None)
    cmd = [sys.executable, "-m", "fadsl", "compile", FA2, "-o", str(out), "--quiet"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_an_edited_compile_cache_entry_is_not_used(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert compile_with_cache(cache, tmp_path / "fresh") == ""
    edited = 0
    for entry in sorted((cache / "clang-format").iterdir()):
        text = entry.read_bytes()
        if b"BLOCK_Q / 2" in text:
            entry.write_bytes(text.replace(b"BLOCK_Q / 2", b"BLOCK_Q / 4"))
            edited += 1
    for entry in sorted((cache / "jinja").iterdir()):
        entry.write_bytes(entry.read_bytes()[:-40])  # truncated
    assert edited, "no cached kernel text to edit"
    err = compile_with_cache(cache, tmp_path / "again")
    assert tree(tmp_path / "again") == tree(tmp_path / "fresh")
    assert "note: ignoring the damaged cache entry" in err
    assert compile_with_cache(cache, tmp_path / "third") == ""  # rebuilt entries


class FakeBuild:
    """Stands in for cmake: writes build/<kernel>_main, a program that does nothing."""

    def __init__(self) -> None:
        self.builds = 0

    def __call__(self, folder: str, *_: Any) -> None:
        self.builds += 1
        program = Path(folder) / "build" / "fa2_main"
        program.parent.mkdir()
        program.write_text("#!/bin/sh\nexit 0\n")
        program.chmod(0o755)


@pytest.fixture
def fake_cmake(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[FakeBuild, Path]:
    from fadsl.backends.interp.interpreter import interpret
    from fadsl.passes import run_pipeline

    def run_binary(
        binary: str, binding: Any, inputs: dict, timeout: float, *_: Any
    ) -> dict:
        assert subprocess.run([binary]).returncode == 0  # a damaged one would fail
        return interpret(run_pipeline(binding.kernel), binding.env(), inputs).outputs

    fake = FakeBuild()
    cache = tmp_path / "simcache"
    monkeypatch.setenv("FADSL_CACHE_DIR", str(cache))
    monkeypatch.setattr(sim_run, "_cmake", fake)
    monkeypatch.setattr(sim_run, "run_binary", run_binary)
    return fake, cache


def sim(tmp_path: Path, n: int) -> None:
    out = tmp_path / f"sim{n}"
    assert cli(tmp_path, "sim", FA2, "--shape", SMALL, "-o", str(out)) == 0


def entry(cache: Path) -> Path:
    (found,) = [p for p in cache.iterdir() if p.name.startswith("fa2-")]
    return found


@pytest.mark.parametrize("damage", ["truncated_program", "edited_source", "partial"])
def test_a_damaged_sim_cache_entry_is_rebuilt(
    tmp_path: Path,
    fake_cmake: tuple[FakeBuild, Path],
    capsys: pytest.CaptureFixture[str],
    damage: str,
) -> None:
    fake, cache = fake_cmake
    sim(tmp_path, 1)
    sim(tmp_path, 2)
    assert fake.builds == 1  # the second run used the cache
    assert "damaged" not in capsys.readouterr().err
    folder = entry(cache)
    if damage == "truncated_program":
        program = folder / "build" / "fa2_main"
        program.write_bytes(program.read_bytes()[:5])
    elif damage == "edited_source":
        with open(folder / "fa2_kernel.cpp", "a") as f:
            f.write("// edited\n")
    else:  # what a build interrupted before its manifest looks like
        (folder / "fadsl-manifest.json").unlink()
    sim(tmp_path, 3)
    assert fake.builds == 2
    assert f"ignoring the damaged cache entry {folder}" in capsys.readouterr().err
    sim(tmp_path, 4)
    assert fake.builds == 2
    assert "damaged" not in capsys.readouterr().err


def test_a_killed_build_leaves_nothing_that_is_used_or_kept(
    tmp_path: Path, fake_cmake: tuple[FakeBuild, Path]
) -> None:
    fake, cache = fake_cmake

    def killed(folder: str, *_: Any) -> None:
        raise KeyboardInterrupt  # the build stops midway

    gone = subprocess.Popen(["true"])
    gone.wait()
    host = "".join(c if c.isalnum() or c == "_" else "_" for c in socket.gethostname())
    # The compile step's own caches (clang-format, Jinja, header names) are filled
    # before the build starts; which of them a process creates depends on what it
    # ran before (some are read once per process), so they are made here first.
    compiled = tmp_path / "compiled"
    assert cli(tmp_path, "compile", FA2, "--shape", SMALL, "-o", str(compiled)) == 0
    before = sorted(p.name for p in cache.iterdir())
    leftover = cache / f".tmp-{host}-{gone.pid}-fa2-abcd"  # a build killed with -9
    (leftover / "build").mkdir(parents=True)
    sim_run._cmake, real = killed, sim_run._cmake  # type: ignore[assignment]
    try:
        out = tmp_path / "killed"
        assert cli(tmp_path, "sim", FA2, "--shape", SMALL, "-o", str(out)) == 130
    finally:
        sim_run._cmake = real  # type: ignore[assignment]
    assert sorted(p.name for p in cache.iterdir()) == before
    sim(tmp_path, 1)
    assert fake.builds == 1
    assert [p.name for p in cache.iterdir() if p.name.startswith(".")] == []
