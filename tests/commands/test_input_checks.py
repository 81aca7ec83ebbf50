"""Inputs that would give wrong numbers with exit 0 are refused or handled (issue 12).

0-d extra tensors, run folders of another dtype, index inputs out of range, and
non-finite scalars.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fadsl.cli import main

SMALL = "B=1,N=1,Sq=32,Skv=32,D=64"

ZERO_D = """\
import fadsl as fd

s = fd.tensor("s", dtype="fp32")


def mod(score, b, h, q_idx, kv_idx):
    return score * s[()]


kernel = fd.attention(name="zerod", score_mod=mod)
"""


def write(folder: Path, name: str, text: str) -> str:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_0d_extra_tensor_runs_with_its_seeded_inputs(tmp_path: Path) -> None:
    kernel = write(tmp_path, "zerod.py", ZERO_D)
    out = tmp_path / "out"
    assert main(["run", kernel, "--shape", SMALL, "-o", str(out)]) == 0
    assert (out / "s.bin").stat().st_size == 4
    again = tmp_path / "again"
    assert (
        main(["run", kernel, "--shape", SMALL, "--inputs", str(out), "-o", str(again)])
        == 0
    )
    assert (again / "o.bin").read_bytes() == (out / "o.bin").read_bytes()


FA2 = str(Path(__file__).resolve().parents[2] / "examples" / "fa2.py")
TINY = "B=1,N=1,Sq=16,Skv=16,D=16"


def test_inputs_of_another_dtype_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bf16 = tmp_path / "bf16"
    assert main(["run", FA2, "--shape", TINY, "--dtype", "bf16", "-o", str(bf16)]) == 0
    capsys.readouterr()
    out = tmp_path / "fp16"
    assert (
        main(["run", FA2, "--shape", TINY, "--inputs", str(bf16), "-o", str(out)]) == 1
    )
    err = capsys.readouterr().err
    assert "records q.bin as bfloat16, but this kernel reads `q` as float16" in err
    assert "--dtype bf16" in err
    assert not out.exists()
    # in the data's dtype the same folder is read
    assert (
        main(
            ["run", FA2, "--shape", TINY, "--dtype", "bf16", "--inputs", str(bf16)]
            + ["-o", str(out)]
        )
        == 0
    )


def test_inputs_recorded_with_another_shape_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    assert main(["run", FA2, "--shape", TINY, "-o", str(run)]) == 0
    capsys.readouterr()
    other = "B=1,N=2,Sq=8,Skv=8,D=16"  # the same bytes in every file
    out = tmp_path / "out"
    assert (
        main(["run", FA2, "--shape", other, "--inputs", str(run), "-o", str(out)]) == 1
    )
    err = capsys.readouterr().err
    assert (
        "records q.bin with the shape [1, 1, 16, 16], but at this --shape `q` is [1, 2, 8, 16]"
        in err
    )
    assert "written with --shape" in err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e39"])
@pytest.mark.parametrize("command", ["run", "sim"])
def test_a_non_finite_scalar_is_refused_naming_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, command: str
) -> None:
    out = tmp_path / "out"
    argv = [command, FA2, "--shape", TINY, "--set", f"scale={value}", "-o", str(out)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"fadsl: usage error: --set scale={float(value)}: ")
    assert "the scalar `scale` is not" in err
    assert not out.exists()


@pytest.mark.parametrize("keyword", ["scale", "softcap"])
def test_fd_attention_refuses_an_infinite_scale_or_softcap(keyword: str) -> None:
    import fadsl as fd

    with pytest.raises(fd.FadslError, match=f"{keyword} must be a positive finite"):
        fd.attention(name="inf", **{keyword: float("inf")})
