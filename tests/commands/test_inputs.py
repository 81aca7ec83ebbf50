"""--inputs and fadsl verify: files are checked before any work, with clear messages.

Wrong sizes, missing files, folders, pipes and unreadable files are refused naming the
parameter and the expected size; NaN and Inf in inputs are reported as warnings with
the parameter's name and the counts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from fadsl.io import runio
from fadsl.cli import main

ROOT = Path(__file__).resolve().parents[2]
FA2 = str(ROOT / "examples" / "fa2.py")
SMALL = "B=1,N=1,Sq=16,Skv=16,D=16"
ELEMS = 16 * 16


@pytest.fixture
def run1(tmp_path: Path) -> Path:
    """A run folder of fa2 at SMALL: q/k/v/o.bin (fp16) and meta.json."""
    assert main(["run", FA2, "--shape", SMALL, "-o", str(tmp_path / "run1")]) == 0
    return tmp_path / "run1"


def inputs_from(run: Path, folder: Path) -> Path:
    folder.mkdir()
    for name in ("q", "k", "v"):
        (folder / f"{name}.bin").write_bytes((run / f"{name}.bin").read_bytes())
    return folder


def run_with(inputs: Path, out: Path, *extra: str) -> int:
    return main(
        ["run", FA2, "--shape", SMALL, "--inputs", str(inputs), "-o", str(out), *extra]
    )


def test_inputs_that_fit_reproduce_the_run(run1: Path, tmp_path: Path) -> None:
    inputs = inputs_from(run1, tmp_path / "in")
    assert run_with(inputs, tmp_path / "again") == 0
    assert (tmp_path / "again" / "o.bin").read_bytes() == (run1 / "o.bin").read_bytes()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("delete", "input `v` is missing: no file {v}"),
        (
            "truncate",
            "input {v} is too short: 10 bytes, but `v` is 1x1x16x16 float16 = 512 bytes",
        ),
        (
            "extend",
            "input {v} is too long: 514 bytes, but `v` is 1x1x16x16 float16 = 512 bytes",
        ),
        ("folder", "input `v`: {v} is a folder, not a file"),
        ("fifo", "input `v`: {v} is not a regular file (a pipe or a device?)"),
    ],
)
def test_a_bad_input_file_is_refused_before_any_work(
    run1: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: str,
    message: str,
) -> None:
    inputs = inputs_from(run1, tmp_path / "in")
    v = inputs / "v.bin"
    data = v.read_bytes()
    v.unlink()
    if damage == "truncate":
        v.write_bytes(data[:10])
    elif damage == "extend":
        v.write_bytes(data + b"\0\0")
    elif damage == "folder":
        v.mkdir()
    elif damage == "fifo":
        os.mkfifo(v)  # reading it would block forever
    capsys.readouterr()
    assert run_with(inputs, tmp_path / "out") == 1
    err = capsys.readouterr().err
    assert message.format(v=v) in err
    assert "examples/fa2.py:51:5" in err.replace(os.sep, "/")  # the parameter `v`
    assert not (tmp_path / "out").exists()


def test_a_wrong_dtype_shows_in_the_sizes(
    run1: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = inputs_from(run1, tmp_path / "in")
    assert run_with(inputs, tmp_path / "out", "--dtype", "fp32") == 1
    assert "is too short: 512 bytes, but `q` is 1x1x16x16 float32 = 1,024 bytes" in (
        capsys.readouterr().err
    )


def test_an_unreadable_input_is_a_clean_error(
    run1: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inputs = inputs_from(run1, tmp_path / "in")
    real_open = open

    def no_permission(file: object, *args: object, **kwargs: object) -> object:
        if str(file).endswith("k.bin"):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(runio, "open", no_permission, raising=False)
    assert run_with(inputs, tmp_path / "out") == 1
    assert (
        f"cannot read {inputs / 'k.bin'}: Permission denied" in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("nope", "--inputs {p}: no such folder"),
        ("file", "--inputs {p}: is a file, not a folder"),
    ],
)
def test_inputs_must_name_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], path: str, message: str
) -> None:
    p = tmp_path / path
    if path == "file":
        p.write_text("x")
    assert run_with(p, tmp_path / "out") == 1
    assert message.format(p=p) in capsys.readouterr().err


def test_nan_and_inf_in_inputs_are_reported_with_counts(
    run1: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = inputs_from(run1, tmp_path / "in")
    q = np.fromfile(inputs / "q.bin", dtype=np.float16)
    q[:3] = np.nan
    q[7] = -np.inf
    q.tofile(inputs / "q.bin")
    capsys.readouterr()
    run_with(inputs, tmp_path / "out")
    err = capsys.readouterr().err
    assert "warning: input `q` holds 3 NaN and 1 Inf values" in err
    assert "input `k`" not in err and "input `v`" not in err


# ----------------------------------------------------------------------------
# fadsl verify
# ----------------------------------------------------------------------------


def verify(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["verify", *argv])
    return code, capsys.readouterr().err


def test_verify_passes_a_run_against_itself(
    run1: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert verify(capsys, str(run1), str(run1))[0] == 0
    assert verify(capsys, str(run1 / "o.bin"), str(run1 / "o.bin"))[0] == 0


def test_verify_names_both_files_when_sizes_differ(
    run1: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    short = tmp_path / "short.bin"
    short.write_bytes((run1 / "o.bin").read_bytes()[:100])
    code, err = verify(capsys, str(short), str(run1 / "o.bin"))
    assert code == 1
    assert (
        f"`o`: {short} holds 50 float16 values but {run1 / 'o.bin'} holds {ELEMS}"
        in err
    )


def test_verify_refuses_a_partial_value(
    run1: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    odd = tmp_path / "odd.bin"
    odd.write_bytes(b"\0" * 101)
    code, err = verify(capsys, str(odd), str(run1 / "o.bin"))
    assert code == 1
    assert "101 bytes is not a whole number of float16 values (2 bytes each)" in err


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ("[1]", 'expected an object with a "params" object'),
        ('{"params": 3}', 'expected an object with a "params" object'),
        ('{"params": {"o": 1}}', "params.o is not an object"),
        (
            '{"params": {"o": {"kind": "out", "dtype": "float16", "file": "../o.bin"}}}',
            "params.o.file must be a file name in the run folder",
        ),
        (
            '{"params": {"o": {"kind": "out", "dtype": "float16", "file": "o.bin", '
            '"shape": [-1]}}}',
            "params.o.shape must be a list of sizes",
        ),
        ('{"params": {', "is not valid JSON"),
    ],
)
def test_verify_refuses_a_damaged_meta_json(
    run1: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    meta: str,
    message: str,
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "meta.json").write_text(meta)
    code, err = verify(capsys, str(run1), str(other))
    assert code == 1
    assert message in err and "internal error" not in err


def test_verify_reports_a_missing_output_file(
    run1: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "meta.json").write_text(
        json.dumps(json.loads((run1 / "meta.json").read_text()))
    )
    code, err = verify(capsys, str(run1), str(other))
    assert code == 1
    assert f"expected `o`: no file {other / 'o.bin'}" in err


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        (("missing.bin", "run1/o.bin"), "no such file or folder: {t}/missing.bin"),
        (("run1/o.bin", "run1"), "{t}/run1/o.bin is a file but {t}/run1 is a folder"),
        (("run1", "empty"), "{t}/empty has no meta.json; is it a run folder?"),
    ],
)
def test_verify_explains_bad_paths(
    run1: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    pair: tuple[str, str],
    message: str,
) -> None:
    (tmp_path / "empty").mkdir()
    code, err = verify(capsys, *(str(tmp_path / p) for p in pair))
    assert code == 1
    assert message.format(t=tmp_path) in err
