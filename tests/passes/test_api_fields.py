"""The API field proof: every integer passed to an Ascend C parameter is bounded.

Issue 12, defect 5: gqa in the BSND layout with N=520, D=128 has a GM row stride N*D =
66,560, which the ND->NZ copy's ``uint16_t srcDValue`` cannot hold; ``fadsl check`` said
it fits and ``fadsl sim`` gave wrong numbers with exit 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fadsl.cli import main
from fadsl.errors import Loc
from fadsl.ir.expr import isym
from fadsl.plan.resources.api_fields import FIELDS, FieldUse
from fadsl.plan.resources.field_check import TYPE_MAX, FieldValue, _consequence, evaluate

ROOT = Path(__file__).resolve().parents[2]
GQA = str(ROOT / "examples" / "gqa.py")
EXAMPLES = sorted(
    p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("test_")
)  # examples/test_*.py are the examples' pytest tests, not kernel files


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["check", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_gqa_bsnd_row_stride_over_uint16_is_refused(capsys) -> None:  # type: ignore[no-untyped-def]
    """The regression of issue 12 defect 5 (this case passed ``fadsl check`` before)."""
    shape = "B=1,N=520,Nkv=8,Sq=32,Skv=32,D=128"
    rc, out, err = _check(capsys, GQA, "--shape", shape)
    assert rc == 1
    assert "DOES NOT FIT" in out
    assert "Nd2NzParams.srcDValue = 66,560 not in [1, 65,535] (uint16_t)" in out
    assert "Ascend C field overflow in kernel `gqa` (gqa.py)" in err
    assert "would be 66,560, the GM row stride of `q` [B, Sq, N, D]" in err
    assert "srcDValue = D*N = 66,560 elements at D=128, N=520" in err
    assert "66,560 mod 65,536 = 1,024" in err
    assert "flash.py:65" in err  # the load of q
    assert "N <= 511 keeps it in range" in err
    assert 'layout="BNSD"' in err
    assert "D <=" not in err  # the head dim is a tile dimension, not a fix


@pytest.mark.parametrize(
    "shape, fits",
    [
        ("B=1,N=511,Nkv=7,Sq=32,Skv=32,D=128", True),  # N*D = 65,408
        ("B=1,N=512,Nkv=8,Sq=32,Skv=32,D=128", False),  # N*D = 65,536
    ],
)
def test_gqa_row_stride_boundary(capsys, shape: str, fits: bool) -> None:  # type: ignore[no-untyped-def]
    rc, out, err = _check(capsys, GQA, "--shape", shape)
    assert rc == (0 if fits else 1), err
    assert ("srcDValue" in err) is not fits


def test_bnsd_layout_takes_the_shape_bsnd_refuses(capsys, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The fix the hint names works: in BNSD the row stride is D."""
    src = tmp_path / "gqa_bnsd.py"
    src.write_text(
        "import fadsl as fd\n\n"
        'kernel = fd.attention(name="gqa_bnsd", layout="BNSD")\n',
        encoding="utf-8",
    )
    rc, out, err = _check(capsys, str(src), "--shape", "B=1,N=520,Sq=32,Skv=32,D=128")
    assert rc == 0, err
    assert "all in range" in out


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_at_their_default_shapes_stay_in_range(capsys, path: Path) -> None:  # type: ignore[no-untyped-def]
    rc, out, err = _check(capsys, str(path))
    assert rc == 0, err
    assert "; all in range" in out


COMPUTED = [f for f in FIELDS.values() if not f.constant]


@pytest.mark.parametrize("field", COMPUTED, ids=lambda f: f.title)
def test_every_field_family_just_fits_and_just_overflows(field) -> None:  # type: ignore[no-untyped-def]
    """Unit boundary of each field: its documented maximum fits, one more does not."""
    use = FieldUse(field, 2 * isym("x"), "a test value", Loc("k.py", 1))
    (top,) = evaluate([use], {"x": field.hi // 2})
    assert top.ok == (field.hi // 2 * 2 >= field.lo)
    over = FieldValue(use, field.hi + 1)
    assert not over.ok
    text = _consequence(over)
    if field.hi == TYPE_MAX[field.ctype]:
        assert f"mod {field.hi + 1:,}" in text  # the C type would wrap it
    else:
        assert "outside the documented range" in text


def test_every_computed_field_of_the_examples_is_in_the_table() -> None:
    """Field uses only name fields of the table (which docs/backend.md prints)."""
    doc = (ROOT / "docs" / "backend.md").read_text(encoding="utf-8")
    for f in FIELDS.values():
        assert f"| {f.call} | {f.name} | {f.ctype} |" in doc, f.title


HELPER_FIELDS = {
    "fadsl::CopyNdToNz": (
        "Nd2NzParams.nValue",
        "Nd2NzParams.dValue",
        "Nd2NzParams.srcDValue",
        "Nd2NzParams.dstNzC0Stride",
    ),
    "fadsl::ZeroTailRows": (
        "InitConstValueParams.repeatTimes",
        "InitConstValueParams.blockNum",
        "InitConstValueParams.dstGap",
    ),
    "fadsl::LoadA": ("LoadData2DParams.repeatTimes", "LoadData2DParams.srcStride"),
    "fadsl::LoadB": ("LoadData2DParams.repeatTimes", "LoadData2DParams.srcStride"),
    "fadsl::RowBroadcast": ("BinaryRepeatParams.*RepStride", "Brcb.repeatTime"),
    "fadsl::Outer": ("BinaryRepeatParams.*RepStride", "Brcb.repeatTime"),
    "fadsl::ColBroadcast": ("BinaryRepeatParams.*RepStride",),
    "fadsl::RowMax": ("WholeReduceMax/Sum.srcRepStride",),
    "fadsl::RowSum": ("WholeReduceMax/Sum.srcRepStride",),
}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_field_the_checked_in_kernel_passes_is_proved(path: Path) -> None:
    """What is generated is what is proved: each fadsl::Field<T>(value, "name") of the
    checked-in kernel, and each fadsl_tile.h helper's fields, are among the plan's uses.
    """
    import argparse
    import re

    from fadsl.commands import common
    from fadsl.driver.lower import lower
    from fadsl.target import resolve

    p = argparse.ArgumentParser()
    common.add_kernel_args(p)
    common.add_target_arg(p)
    binding = common.build(p.parse_args([str(path)]), target=resolve(None, None))
    plan = lower(binding).plan
    proved = {u.field.title for u in plan.fields}
    cpp = ROOT / "generated" / binding.kernel.name / f"{binding.kernel.name}_kernel.cpp"
    text = cpp.read_text(encoding="utf-8")
    emitted = set(re.findall(r'fadsl::Field<\w+>\([^;]*?, "([^"]+)"\)', text))
    assert emitted, "the kernel passes no checked field"
    for helper, titles in HELPER_FIELDS.items():
        if re.search(re.escape(helper) + r"\b(<[^>]*>)?\(", text):
            emitted.update(titles)
    if re.search(r"AscendC::DataCopy\([^;]*, ROWS \* \w+\);|DataCopy\(\w+WsGm", text):
        emitted.add("DataCopy(count).DataCopyParams.blockLen")
    assert emitted <= proved, sorted(emitted - proved)
