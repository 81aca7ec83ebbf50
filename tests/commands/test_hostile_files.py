"""Hostile files and environments end in a clear error or a fallback (issue 13, item 3).

A .fir that is not UTF-8, a meta.json nested 100,000 deep, a --target-file that is a
device, an oversized file, a 10 MB line and an unusable sim cache folder each used to
end in "internal error, this is a fadsl bug" (or never return).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import time
from pathlib import Path

import pytest

from fadsl.cli import main
from fadsl.backends.sim import run as sim_run
from fadsl.io.files import IR_LIMIT, JSON_LIMIT

ROOT = Path(__file__).resolve().parents[2]
FA2 = str(ROOT / "examples" / "fa2.py")
SAMPLE = ROOT / "tests" / "ir_samples" / "varlen.fir"
SMALL = "B=1,N=1,Sq=16,Skv=16,D=16"


def cli(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    return code, err.getvalue()


def refused(*argv: str) -> str:
    code, err = cli(*argv)
    assert code == 1 and re.match(r"fadsl: usage error(\[E\d+\])?: ", err), err
    assert "internal error" not in err
    return err


def test_fir_of_random_bytes_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "k.fir"
    path.write_bytes(bytes(range(256)) * 4)
    err = refused("ir", str(path))
    assert f"textual IR {path} is not UTF-8 text: byte 0x80 on line 2" in err


def test_fir_with_a_latin1_name_points_at_the_byte(tmp_path: Path) -> None:
    text = SAMPLE.read_text(encoding="utf-8").replace("%mx =", "%m\xe9x =")
    path = tmp_path / "k.fir"
    path.write_bytes(text.encode("latin-1"))
    err = refused("run", str(path), "--shape", "B=1,N=1,T=8,Sq=8,Skv=8,D=16", "-o", "o")
    line = text.splitlines().index(
        next(ln for ln in text.splitlines() if "%m\xe9x" in ln)
    )
    assert f"byte 0xe9 on line {line + 1}" in err
    assert f"--> {path}:{line + 1}:" in err and "%m\\xe9x = row_max" in err


def test_meta_json_nested_100000_deep(tmp_path: Path) -> None:
    folder = tmp_path / "deep"
    folder.mkdir()
    (folder / "meta.json").write_text("[" * 100_000 + "]" * 100_000)
    refused("run", FA2, "--shape", SMALL, "-o", str(folder))
    err = refused("verify", str(folder), str(folder))
    assert "meta.json nests arrays or objects too deeply to read" in err


def test_oversized_meta_json_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "meta.json").write_text('{"params": {}, "x": "' + "a" * JSON_LIMIT + '"}')
    err = refused("verify", str(folder), str(folder))
    assert "is larger than 1 MiB, the most fadsl reads" in err


def test_target_file_dev_zero_returns_at_once() -> None:
    t0 = time.process_time()  # CPU time: load does not trip it
    err = refused("check", FA2, "--shape", SMALL, "--target-file", "/dev/zero")
    assert time.process_time() - t0 < 20
    assert "--target-file /dev/zero is not a regular file" in err


def test_target_file_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "chip.json"
    path.write_bytes(b'{"name": "caf\xe9"}')
    err = refused("check", FA2, "--shape", SMALL, "--target-file", str(path))
    assert "is not UTF-8 text: byte 0xe9 on line 1" in err


def test_a_10mb_line_gives_a_short_error_quickly(tmp_path: Path) -> None:
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    lines.insert(3, "%x = " + "a" * 10_000_000)
    path = tmp_path / "huge.fir"
    path.write_text("\n".join(lines), encoding="utf-8")
    t0 = time.process_time()  # CPU time: load does not trip it
    err = refused("ir", str(path))
    assert time.process_time() - t0 < 20
    assert len(err) < 1000 and f"larger than {IR_LIMIT >> 20} MiB" in err


def test_a_long_line_within_the_limit_is_shown_cut(tmp_path: Path) -> None:
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    lines[3] += " " * 1_000_000 + "\x1b[31m @"
    lines.insert(5, "%" + "a" * 1_000_000)
    for n, text in enumerate(("\n".join(lines), "\n".join(lines[:3] + lines[4:]))):
        path = tmp_path / f"long{n}.fir"
        path.write_text(text, encoding="utf-8")
        code, err = cli("ir", str(path))
        assert code == 1 and err.startswith("fadsl: IR parse error: "), err
        assert len(err) < 2000 and "\x1b" not in err
        assert max(len(ln) for ln in err.splitlines()) < 1100


@pytest.mark.parametrize("how", ["cache_dir_is_a_file", "home_is_a_file"])
def test_sim_cache_falls_back_to_a_temporary_folder(
    how: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    if how == "cache_dir_is_a_file":
        monkeypatch.setenv("FADSL_CACHE_DIR", str(blocker))
    else:
        monkeypatch.delenv("FADSL_CACHE_DIR", raising=False)
        monkeypatch.setenv("HOME", str(blocker))
    root = sim_run.cache_root()
    assert os.path.isdir(root) and os.access(root, os.W_OK)
    assert sim_run.cache_root() == root
    assert f"{blocker} is a file); building in a temporary folder" in (
        capsys.readouterr().err
    )
    sim_run.drop_temporary_cache()
    assert not os.path.exists(root) and blocker.read_text() == "not a folder"


def test_output_folder_with_a_fifo_for_a_manifest_does_not_hang(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    os.mkfifo(folder / "fadsl-manifest.json")
    t0 = time.process_time()  # CPU time: load does not trip it
    err = refused("run", FA2, "--shape", SMALL, "-o", str(folder))
    assert time.process_time() - t0 < 20 and "will not replace it" in err


def test_kernel_files_are_size_limited_regular_files(tmp_path: Path) -> None:
    big = tmp_path / "big.py"
    big.write_text("import fadsl as fd\n" + "#" * (5 << 20) + "\n")
    err = refused("ir", str(big))
    assert f"kernel file {big} is larger than 4 MiB" in err
    assert "/dev/zero is not a regular file" in refused("ir", "/dev/zero")
