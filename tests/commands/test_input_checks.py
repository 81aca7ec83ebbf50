"""Inputs that would give wrong numbers with exit 0 are refused or handled (issue 12).

0-d extra tensors, run folders of another dtype, index inputs out of range, and
non-finite scalars.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

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


def test_a_0d_extra_tensor_is_a_value_in_a_mod(tmp_path: Path) -> None:
    # FlexAttention users write a captured 0-d tensor as a value: score * s
    kernel = write(tmp_path, "zerod.py", ZERO_D.replace("s[()]", "s + s"))
    out = tmp_path / "out"
    assert main(["run", kernel, "--shape", SMALL, "-o", str(out)]) == 0


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
    assert err.startswith(f"fadsl: usage error[E27]: --set scale={float(value)}: ")
    assert "the scalar `scale` is not" in err
    assert not out.exists()


@pytest.mark.parametrize("keyword", ["scale", "softcap"])
def test_fd_attention_refuses_an_infinite_scale_or_softcap(keyword: str) -> None:
    import fadsl as fd

    with pytest.raises(fd.FadslError, match=f"{keyword} must be a positive finite"):
        fd.attention(name="inf", **{keyword: float("inf")})


ROOT = Path(__file__).resolve().parents[2]
VARLEN = str(ROOT / "examples" / "varlen.py")
DOCS = str(ROOT / "examples" / "document_mask.py")
VARLEN_SHAPE = "B=2,N=1,Sq=64,Skv=64,D=64"
DOC_RUN = ["--shape", "B=1,N=2,Sq=256,Skv=256,D=64"]
DOC_RUN += ["--set", "block_q=64", "--set", "block_kv=64"]

sys.path.insert(0, str(ROOT / "tests" / "errors"))
from catalogue import GATHER  # noqa: E402  (a mod reading tab[ids[h]])


def edited_run(
    tmp_path: Path, argv: list[str], edits: dict[str, tuple[int, int]]
) -> Path:
    """A run folder of ``argv`` whose i32 inputs get ``name: (flat index, value)``."""
    run = tmp_path / "run"
    assert main(argv + ["-o", str(run)]) == 0
    for name, (at, value) in edits.items():
        data = np.fromfile(run / f"{name}.bin", np.int32)
        data[at] = value
        data.tofile(run / f"{name}.bin")
    return run


def refused(argv: list[str], run: Path, tmp_path: Path, capsys: Any) -> str:
    capsys.readouterr()
    out = tmp_path / "again"
    assert main(argv + ["--inputs", str(run), "-o", str(out)]) == 1
    assert not out.exists()
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            [0, 100, 64],
            "cu_seqlens_q[1] = 100 is past the end of the packed q (Sq = 64)",
        ),
        (
            [0, 40, 30],
            "cu_seqlens_q[2] = 30 is less than cu_seqlens_q[1] = 40",
        ),
        ([0, 10, 50], "cu_seqlens_q[2] = 50, but the last sequence ends at Sq = 64"),
        ([5, 10, 64], "cu_seqlens_q[0] = 5, but the first sequence starts at 0"),
    ],
)
@pytest.mark.parametrize("command", ["run", "sim"])
def test_invalid_cu_seqlens_are_refused_naming_the_element(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    values: list[int],
    message: str,
    command: str,
) -> None:
    run = tmp_path / "run"
    assert main(["run", VARLEN, "--shape", VARLEN_SHAPE, "-o", str(run)]) == 0
    np.array(values, np.int32).tofile(run / "cu_seqlens_q.bin")
    err = refused([command, VARLEN, "--shape", VARLEN_SHAPE], run, tmp_path, capsys)
    assert "input `cu_seqlens_q` is not a list of sequence offsets: " + message in err
    assert f"cu_seqlens_q = {values}" in err


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        (
            {"kv_indices": (4, 7)},
            "input `kv_indices` is not a valid block mask: kv_indices[0, 0, 1, 0] = 7, "
            "but there are cdiv(Skv, block_kv) = 4 KV blocks: indices are in [0, 4)",
        ),
        (
            {"kv_num_blocks": (0, 9)},
            "kv_num_blocks[0, 0, 0] = 9, but a row has cdiv(Skv, block_kv) = 4 KV "
            "blocks: counts are in [0, 4]",
        ),
        (
            {"full_kv_num_blocks": (2, 2), "full_kv_indices": (9, 0)},
            "full_kv_indices[0, 0, 2, :] lists KV block 0 2 times",
        ),
        (
            {"kv_indices": (4, 2)},
            "KV block 1 of Q block 1 (batch 0, head 0) has positions the masks keep, "
            "but neither kv_indices nor full_kv_indices lists it",
        ),
        (
            {"full_kv_num_blocks": (3, 1), "full_kv_indices": (12, 3)},
            "KV block 3 of Q block 3 (batch 0, head 0) is in both kv_indices and "
            "full_kv_indices",
        ),
        (
            {"kv_num_blocks": (3, 3), "full_kv_num_blocks": (3, 1)}
            | {"full_kv_indices": (12, 3)},
            "KV block 3 of Q block 3 (batch 0, head 0) is listed in full_kv_indices, "
            "but the masks drop some of its positions",
        ),
    ],
)
def test_an_invalid_block_mask_is_refused_naming_the_element(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edits: dict[str, tuple[int, int]],
    message: str,
) -> None:
    run = edited_run(tmp_path, ["run", DOCS] + DOC_RUN, edits)
    err = refused(["run", DOCS] + DOC_RUN, run, tmp_path, capsys)
    assert message in err


@pytest.mark.parametrize("command", ["run", "sim"])
def test_an_i32_tensor_a_mod_uses_as_an_index_is_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    kernel = write(tmp_path, "gather.py", GATHER)
    argv = ["run", kernel, "--shape", "B=1,N=4,Sq=32,Skv=32,D=64"]
    run = edited_run(tmp_path, argv, {"ids": (2, 9)})
    err = refused([command] + argv[1:], run, tmp_path, capsys)
    assert (
        "input `ids` holds an index out of range: ids[2] = 9, but it indexes "
        "dimension 0 of `tab`, of size N = 4" in err
    )
    assert "gather.py:8:" in err
