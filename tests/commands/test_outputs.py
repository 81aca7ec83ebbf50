"""Output folders of compile, run and sim: atomic replacement, nothing outside -o.

A failure or an interrupt injected while files are being written must leave the
previous output byte-identical and no temporary folder behind; a successful command
must change nothing but its -o folder; -o may not name a file, the current folder or
a folder of someone else's files.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fadsl.io import runio
from fadsl.cli import main
from fadsl.io import outputs
from fadsl.backends.sim import run as sim_run

ROOT = Path(__file__).resolve().parents[2]
FA2 = str(ROOT / "examples" / "fa2.py")
SMALL = "B=1,N=1,Sq=16,Skv=16,D=16"


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` -> file bytes (None for folders), with modes."""
    out: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        rel = f"{path.relative_to(root)} {oct(path.stat().st_mode)}"
        out[rel] = None if path.is_dir() else path.read_bytes()
    return out


def leftovers(parent: Path) -> list[str]:
    return sorted(
        p.name for p in parent.iterdir() if ".tmp-" in p.name or ".old-" in p.name
    )


def cli(cwd: Path, *argv: str) -> int:
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return main(list(argv))
    finally:
        os.chdir(old)


def compile_args(out: Path, *extra: str) -> list[str]:
    return ["compile", FA2, "-o", str(out), "--quiet", "--set", "block_q=64", *extra]


def run_args(out: Path, *extra: str) -> list[str]:
    return ["run", FA2, "--shape", SMALL, "-o", str(out), *extra]


# ----------------------------------------------------------------------------
# Injected failures
# ----------------------------------------------------------------------------


class FailAfter:
    """A stand-in for ``open`` that raises ``exc`` on the ``n``-th file opened for writing."""

    def __init__(self, n: int, exc: BaseException) -> None:
        self.n = n
        self.exc = exc
        self.writes = 0

    def __call__(self, file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if "w" in mode:
            self.writes += 1
            if self.writes == self.n:
                raise self.exc
        return open(file, mode, *args, **kwargs)


FAILURES: dict[str, Callable[[], BaseException]] = {
    "bug": lambda: RuntimeError("injected"),
    "interrupt": lambda: KeyboardInterrupt(),
    "disk_full": lambda: OSError(28, "No space left on device"),
}
EXIT = {"bug": 70, "interrupt": 130, "disk_full": 1}


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_a_compile_failing_midway_keeps_the_previous_output(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    failure: str,
) -> None:
    out = tmp_path / "proj"
    assert cli(tmp_path, *compile_args(out)) == 0
    before = tree(out)
    opener = FailAfter(5, FAILURES[failure]())
    monkeypatch.setattr(outputs, "open", opener, raising=False)
    code = cli(tmp_path, *compile_args(out, "--set", "block_kv=64"))
    assert opener.writes == 5, "the failure was not injected midway"
    assert code == EXIT[failure]
    assert tree(out) == before
    assert leftovers(tmp_path) == []
    if failure == "interrupt":
        assert "interrupted; no output was changed" in capsys.readouterr().err


def test_a_renderer_that_raises_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "proj"
    assert cli(tmp_path, *compile_args(out)) == 0
    before = tree(tmp_path)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr("fadsl.backends.ascendc.project.render_all", broken)
    assert cli(tmp_path, *compile_args(out, "--set", "block_kv=64")) == 130
    assert tree(tmp_path) == before


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_a_run_failing_midway_keeps_the_previous_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    out = tmp_path / "run"
    assert cli(tmp_path, *run_args(out)) == 0
    before = tree(out)
    opener = FailAfter(1, FAILURES[failure]())  # meta.json, after the .bin files
    monkeypatch.setattr(runio, "open", opener, raising=False)
    assert cli(tmp_path, *run_args(out, "--seed", "7")) == EXIT[failure]
    assert opener.writes == 1
    assert tree(out) == before
    assert leftovers(tmp_path) == []


def fake_sim(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand-ins for the C++ build and run: sim's own output handling stays real."""
    from fadsl.backends.interp.interpreter import interpret
    from fadsl.passes import run_pipeline

    def run_binary(
        binary: str, binding: Any, inputs: dict, timeout: float, *rest: Any
    ) -> dict:  # rest: progress, sanitize ... (the real one's further arguments)
        return interpret(run_pipeline(binding.kernel), binding.env(), inputs).outputs

    monkeypatch.setattr(sim_run, "build", lambda *a, **k: ("fake", 0.0))
    monkeypatch.setattr(sim_run, "run_binary", run_binary)


def sim_args(out: Path, *extra: str) -> list[str]:
    return ["sim", FA2, "--shape", SMALL, "-o", str(out), *extra]


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_a_sim_failing_midway_keeps_the_previous_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    fake_sim(monkeypatch)
    out = tmp_path / "sim"
    assert cli(tmp_path, *sim_args(out)) == 0
    before = tree(out)
    opener = FailAfter(1, FAILURES[failure]())
    monkeypatch.setattr(runio, "open", opener, raising=False)
    assert cli(tmp_path, *sim_args(out, "--seed", "3")) == EXIT[failure]
    assert tree(out) == before
    assert leftovers(tmp_path) == []


def test_a_multi_kernel_compile_replaces_its_folder_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "two.py"
    text = Path(FA2).read_text(encoding="utf-8")
    src.write_text(
        text + "\n\nfa2_copy = fd.kernel(fa2.fn, name='fa2_copy', dtype='fp16',"
        " default_shape=fa2.default_shape)\n",
        encoding="utf-8",
    )
    out = tmp_path / "both"
    assert cli(tmp_path, "compile", str(src), "-o", str(out), "--quiet") == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "fa2",
        "fa2_copy",
        "fadsl-manifest.json",
    ]
    before = tree(out)
    monkeypatch.setattr(
        outputs, "open", FailAfter(20, KeyboardInterrupt()), raising=False
    )  # inside the second kernel's files
    assert (
        cli(
            tmp_path,
            "compile",
            str(src),
            "-o",
            str(out),
            "--quiet",
            "--set",
            "block_q=64",
        )
        == 130
    )
    assert tree(out) == before
    assert leftovers(tmp_path) == []


# ----------------------------------------------------------------------------
# Nothing outside -o
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["compile", "run", "sim"])
def test_nothing_is_written_outside_the_output_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    fake_sim(monkeypatch)
    work = tmp_path / "work"
    work.mkdir()
    (work / "keep.txt").write_text("mine\n")
    out = work / "nested" / "out"
    argv = {"compile": compile_args(out), "run": run_args(out), "sim": sim_args(out)}[
        command
    ]
    before = tree(tmp_path)
    assert cli(work, *argv) == 0
    after = tree(tmp_path)
    inside = f"work{os.sep}nested"
    assert {k: v for k, v in after.items() if not k.startswith(inside)} == before
    assert any(k.startswith(f"{inside}{os.sep}out{os.sep}") for k in after)


def test_a_failed_command_leaves_no_parent_folders_behind(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "out"
    assert cli(tmp_path, *run_args(out, "--set", "block_q=0")) == 1
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------
# What -o may name
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["compile", "run", "sim"])
def test_an_existing_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    target = tmp_path / "taken"
    target.write_text("precious\n")
    argv = {
        "compile": compile_args(target),
        "run": run_args(target),
        "sim": sim_args(target),
    }[command]
    assert cli(tmp_path, *argv) == 1
    assert (
        "a file of that name exists; outputs go into a folder"
        in capsys.readouterr().err
    )
    assert target.read_text() == "precious\n"


@pytest.mark.parametrize("name", [".", "..", "/"])
def test_the_current_folder_and_its_ancestors_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    (tmp_path / "kernel_notes.txt").write_text("mine\n")
    before = tree(tmp_path)
    assert cli(tmp_path, *run_args(Path(name))) == 1
    assert "would replace the current folder or one that contains it" in (
        capsys.readouterr().err
    )
    assert tree(tmp_path) == before


def test_a_folder_of_other_files_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "kernel.py").write_text("# mine\n")
    assert cli(tmp_path, *run_args(project)) == 1
    err = capsys.readouterr().err
    assert "is not an unchanged earlier fadsl output" in err
    assert "it has no fadsl-manifest.json" in err and "kernel.py" in err
    assert (project / "kernel.py").read_text() == "# mine\n"


def test_earlier_outputs_and_empty_folders_are_replaced(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli(tmp_path, *run_args(empty)) == 0
    assert cli(tmp_path, *run_args(empty, "--seed", "1")) == 0  # a run folder now
    assert (empty / "meta.json").is_file()
    proj = tmp_path / "proj"
    assert cli(tmp_path, *compile_args(proj)) == 0
    assert cli(tmp_path, *compile_args(proj)) == 0  # its manifest matches
    (proj / "README.md").unlink()  # a file fadsl wrote, removed: nothing to lose
    assert cli(tmp_path, *compile_args(proj)) == 0
    assert (proj / "README.md").is_file()


def test_a_path_through_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "f").write_text("x")
    assert cli(tmp_path, *run_args(tmp_path / "f" / "sub")) == 1
    assert f"{tmp_path / 'f'} is a file, not a folder" in capsys.readouterr().err


def test_outputs_get_the_usual_folder_mode(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert cli(tmp_path, *run_args(out)) == 0
    umask = os.umask(0o022)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o777 & ~umask


# ----------------------------------------------------------------------------
# Only an unchanged earlier output is replaced (issue 13, defect 1)
# ----------------------------------------------------------------------------


def test_a_folder_holding_earlier_outputs_is_not_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert cli(tmp_path, *run_args(out / "run1")) == 0
    assert cli(tmp_path, *run_args(out / "run2")) == 0
    before = tree(tmp_path)
    capsys.readouterr()
    assert cli(tmp_path, *run_args(out)) == 1
    err = capsys.readouterr().err
    assert "it holds run1/, run2/" in err
    assert "choose another -o" in err
    assert tree(tmp_path) == before


def test_compile_into_a_folder_of_projects_keeps_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gen = tmp_path / "generated"
    for name in ("fa2", "causal"):
        src = str(ROOT / "examples" / f"{name}.py")
        assert cli(tmp_path, "compile", src, "-o", str(gen / name), "--quiet") == 0
    before = tree(tmp_path)
    assert cli(tmp_path, *compile_args(gen)) == 1
    assert "it holds causal/, fa2/" in capsys.readouterr().err
    assert tree(tmp_path) == before


@pytest.mark.parametrize("command", ["run", "sim", "compile"])
def test_a_file_added_to_an_earlier_output_is_kept(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    fake_sim(monkeypatch)
    out = tmp_path / "out"
    argv = {"compile": compile_args, "run": run_args, "sim": sim_args}[command]
    assert cli(tmp_path, *argv(out)) == 0
    (out / "analysis.ipynb").write_text("{}\n")
    (out / "plots").mkdir()
    before = tree(tmp_path)
    capsys.readouterr()
    assert cli(tmp_path, *argv(out)) == 1
    assert "not written by fadsl: analysis.ipynb, plots/" in capsys.readouterr().err
    assert tree(tmp_path) == before


def test_an_edited_output_file_is_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert cli(tmp_path, *run_args(out)) == 0
    with open(out / "meta.json", "a", encoding="utf-8") as f:
        f.write("\n")
    before = tree(tmp_path)
    assert cli(tmp_path, *run_args(out)) == 1
    assert "changed since fadsl wrote them: meta.json" in capsys.readouterr().err
    assert tree(tmp_path) == before


def test_a_file_added_while_the_command_runs_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    assert cli(tmp_path, *run_args(out)) == 0
    real = runio.write_run

    def write_run(*args: Any, **kwargs: Any) -> None:
        (out / "late.txt").write_text("mine\n")  # after the first check
        real(*args, **kwargs)

    monkeypatch.setattr(runio, "write_run", write_run)
    assert cli(tmp_path, *run_args(out, "--seed", "9")) == 1
    assert (out / "late.txt").read_text() == "mine\n"
    assert (out / "meta.json").is_file()
    assert leftovers(tmp_path) == []


def test_each_kernel_folder_of_a_multi_kernel_compile_is_an_output(
    tmp_path: Path,
) -> None:
    src = tmp_path / "two.py"
    src.write_text(
        Path(FA2).read_text(encoding="utf-8")
        + "\n\nfa2_copy = fd.kernel(fa2.fn, name='fa2_copy', dtype='fp16',"
        " default_shape=fa2.default_shape)\n",
        encoding="utf-8",
    )
    out = tmp_path / "both"
    assert cli(tmp_path, "compile", str(src), "-o", str(out), "--quiet") == 0
    one = ["compile", str(src), "--kernel", "fa2", "--quiet", "--set", "block_q=64"]
    assert cli(tmp_path, *one, "-o", str(out / "fa2")) == 0  # its own manifest
    assert cli(tmp_path, "compile", str(src), "-o", str(out), "--quiet") == 1
