"""Regression tests for the crashes fuzzing found, one per root cause.

Each input once ended in an internal error or an escaped exception; each must now end
in a clean FadslError that names the mistake.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzzkit import check_clean, run_cli, time_limit

from fadsl.errors import IRParseError
from fadsl.ir.text.parser import parse_kernel

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "ir_samples"
FA2 = str(ROOT / "examples" / "fa2.py")
SMALL = "B=1,N=1,Sq=16,Skv=16,D=16"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("literal", ['"a\\q"', '"tab\there"', '"\\u12"'])
def test_a_string_constant_with_a_bad_escape_is_a_parse_error(literal: str) -> None:
    # was: json.JSONDecodeError from the constant's reader
    text = sample("scratch_consts.fir").replace('"fa2 \\"v1\\""', literal)
    with pytest.raises(IRParseError):
        parse_kernel(text, "bad.fir")


def test_json_escapes_in_string_constants_still_parse() -> None:
    text = sample("scratch_consts.fir").replace('"fa2 \\"v1\\""', '"\\u00e9\\n\\"x\\""')
    assert dict(parse_kernel(text).consts)["label"] == 'é\n"x"'


def test_an_index_out_of_range_at_every_point_names_the_first(tmp_path: Path) -> None:
    # was: TypeError while describing where an out-of-bounds load_scalar happened
    fir = tmp_path / "varlen.fir"
    fir.write_text(sample("varlen.fir"), encoding="utf-8")
    out = run_cli(
        ["run", str(fir), "--shape", "T=3,N=16,D=16,Bp1=1,B=1", "-o", "o"],
        str(tmp_path),
    )
    check_clean(out)
    assert "out-of-bounds read of `cu_seqlens`: index 1" in out.stderr
    assert "at b=0, h=0, i=0" in out.stderr


def test_a_load_into_a_value_that_is_not_a_queue_slot_is_refused() -> None:
    # was: AttributeError in the vector planner ('Load' object has no attribute 'queue')
    text = sample("varlen.fir").replace(
        "%kt = load() {src = k", "%kt = load(%qt) {src = k"
    )
    with pytest.raises(
        IRParseError, match="writes into `%qt`, which is not a queue slot"
    ):
        parse_kernel(text, "bad.fir")


def test_loads_into_queue_slots_still_parse() -> None:
    assert parse_kernel(sample("queues.fir")).name == "queues"


@pytest.mark.parametrize(
    "shape",
    ["B=4294967296,N=1,Sq=16,Skv=16,D=16", "B=9999,N=64,Sq=8192,Skv=8192,D=128"],
)
def test_tensors_too_large_for_memory_are_refused_before_any_work(
    tmp_path: Path, shape: str
) -> None:
    # was: ValueError "Maximum allowed dimension exceeded" from numpy (or a MemoryError)
    out = run_cli(["run", FA2, "--shape", shape, "-o", "o"], str(tmp_path))
    check_clean(out)
    assert "usage error: the tensors of `fa2` take" in out.stderr
    assert "choose a smaller --shape" in out.stderr
    assert not (tmp_path / "o").exists()


def test_a_tensor_of_negative_size_is_refused(tmp_path: Path) -> None:
    fir = tmp_path / "neg.fir"
    fir.write_text(
        sample("elementwise.fir").replace("in x: f16[N, D]", "in x: f16[N - 100, D]")
    )
    out = run_cli(["run", str(fir), "--shape", "N=16,D=16", "-o", "o"], str(tmp_path))
    check_clean(out)
    assert "would have the negative shape [-84, 16]" in out.stderr


KERNEL_WITH_BOUND = """\
import fadsl as fd


@fd.kernel
def k(x: fd.In("S", "D"), o: fd.Out("S", "D"), bq: int = 16):
    S, D = x.shape
    for i in fd.grid(fd.cdiv(S, bq)):
        xt = fd.load(x[fd.ds(i * bq, bq), :])
        for j in BOUND:
            pass
        fd.store(o[fd.ds(i * bq, bq), :], xt)
"""


@pytest.mark.parametrize(
    ("bound", "message"),
    [
        ("range(xt)", "a loop bound must be a scalar, but this is the tile %xt"),
        ('fd.pipelined(0, "a")', "a loop bound must be a scalar expression, got str"),
    ],
)
def test_a_loop_bound_that_is_not_a_scalar_is_a_kernel_error(
    tmp_path: Path, bound: str, message: str
) -> None:
    # was: TypeError "not an expression: Tile(...)" from as_expr
    src = tmp_path / "k.py"
    src.write_text(KERNEL_WITH_BOUND.replace("BOUND", bound))
    out = run_cli(["ir", str(src)], str(tmp_path))
    check_clean(out)
    assert message in out.stderr
    assert f"{src}:9:" in out.stderr


def test_a_grid_extent_that_is_not_a_scalar_is_a_kernel_error(tmp_path: Path) -> None:
    src = tmp_path / "k.py"
    src.write_text(
        KERNEL_WITH_BOUND.replace("fd.grid(fd.cdiv(S, bq))", "fd.grid(x)").replace(
            "BOUND", "range(2)"
        )
    )
    out = run_cli(["ir", str(src)], str(tmp_path))
    check_clean(out)
    assert "a grid extent must be a scalar expression, got TensorRef" in out.stderr


def test_an_empty_shape_is_refused_rather_than_running_the_default(
    tmp_path: Path,
) -> None:
    # was: `--shape ''` silently ran the 4096 x 4096 default shape (a hang to the fuzzer)
    out = run_cli(["run", FA2, "--shape", "", "-o", "o"], str(tmp_path))
    check_clean(out)
    assert "usage error: --shape is empty" in out.stderr


@pytest.mark.parametrize(
    ("default", "message"),
    [
        ("0**(-0.5)", "`0**(-0.5)` is undefined: it evaluates to zoo"),
        ("inf - inf", "`inf - inf` is undefined: it evaluates to nan"),
        ("sqrt(-1)", "`sqrt(-1)` is undefined: it evaluates to I"),
        ("9**9**9", "9**387420489 does not fit in 64 bits"),
        ("1" * 5000, "the integer 111111111111111111111111... does not fit in 64 bits"),
    ],
)
def test_constant_expressions_sympy_cannot_hold_are_parse_errors(
    default: str, message: str
) -> None:
    # was: a ValueError from the printer (zoo), int() past 4300 digits, or a hang (9**9**9)
    text = sample("elementwise.fir").replace(
        "alpha: f32 = 0.5", f"alpha: f32 = {default}"
    )
    with time_limit(10), pytest.raises(IRParseError) as info:
        parse_kernel(text, "bad.fir")
    assert info.value.message == message


def test_an_undefined_scalar_default_in_python_is_a_kernel_error(
    tmp_path: Path,
) -> None:
    src = tmp_path / "k.py"
    src.write_text(
        KERNEL_WITH_BOUND.replace("BOUND", "range(2)").replace(
            "bq: int = 16):", 'bq: int = 16, s: fd.Scalar = "0 ** -0.5"):'
        )
    )
    out = run_cli(["ir", str(src)], str(tmp_path))
    check_clean(out)
    assert "default of scalar `s`: `0 ** -0.5` is undefined" in out.stderr


@pytest.mark.parametrize("dim", ["Bp1-inf", "Bp1/2", "2.0", "sqrt(Bp1)"])
def test_a_dimension_that_is_not_an_integer_is_a_parse_error(dim: str) -> None:
    # was: OverflowError (cannot convert float infinity to integer) when run sized it
    text = sample("varlen.fir").replace("i32[Bp1]", f"i32[{dim}]")
    with pytest.raises(IRParseError, match="a dimension is an integer expression"):
        parse_kernel(text, "bad.fir")


def test_a_target_file_that_is_a_folder_is_a_usage_error(tmp_path: Path) -> None:
    # was: IsADirectoryError
    (tmp_path / "chip").mkdir()
    out = run_cli(
        ["check", FA2, "--shape", SMALL, "--target-file", "chip"], str(tmp_path)
    )
    check_clean(out)
    assert "--target-file chip is a folder; it takes a JSON file" in out.stderr


def test_a_target_file_with_dtypes_of_the_wrong_kind_is_a_usage_error(
    tmp_path: Path,
) -> None:
    # was: TypeError ('int' object is not iterable)
    import json

    data = json.loads((ROOT / "fadsl" / "targets" / "ascend910b1.json").read_text())
    data["cube_dtypes"] = 3
    (tmp_path / "chip.json").write_text(json.dumps(data))
    out = run_cli(
        ["check", FA2, "--shape", SMALL, "--target-file", "chip.json"], str(tmp_path)
    )
    check_clean(out)
    assert "cube_dtypes must be a list of dtype names, got 3" in out.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--shape", "B=99999999999999999999,N=1,Sq=16,Skv=16,D=16"],
            "--shape B=99999999999999999999: does not fit in 64 bits",
        ),
        (
            ["--shape", SMALL, "--set", "block_q=99999999999999999999"],
            "--set block_q=99999999999999999999: does not fit in 64 bits",
        ),
    ],
)
def test_sizes_beyond_64_bits_are_refused_on_the_command_line(
    tmp_path: Path, argv: list[str], message: str
) -> None:
    out = run_cli(["check", FA2, *argv], str(tmp_path))
    check_clean(out)
    assert message in out.stderr


@pytest.mark.parametrize(
    ("expr", "shown"),
    [("99999999999999999999", "99999999999999999999"), ("2**70", "2 ** 70")],
)
def test_an_integer_beyond_64_bits_in_a_kernel_is_refused(
    tmp_path: Path, expr: str, shown: str
) -> None:
    # was: accepted, printed as IR that the IR parser then refuses (no round trip)
    src = tmp_path / "k.py"
    src.write_text(KERNEL_WITH_BOUND.replace("BOUND", f"range({expr})"))
    out = run_cli(["ir", str(src)], str(tmp_path))
    check_clean(out)
    assert f"the integer `{shown}` does not fit in 64 bits" in out.stderr


def test_a_negative_seed_is_a_usage_error(tmp_path: Path) -> None:
    # was: numpy's ValueError "expected non-negative integer" as an internal error
    out = run_cli(
        ["run", FA2, "--shape", SMALL, "-o", "o", "--seed", "-1"], str(tmp_path)
    )
    check_clean(out)
    assert out.code == 2
    assert "argument --seed: expected a non-negative integer, got -1" in out.stderr


@pytest.mark.parametrize("value", ["1e308*2 + 1", "1e-320/1e10"])
def test_a_constant_beyond_a_64_bit_float_is_a_parse_error(value: str) -> None:
    # was: parsed as an mpmath float that printed as 2.0e+308 and read back as inf
    text = sample("elementwise.fir").replace("alpha*2 + 1", value)
    with pytest.raises(IRParseError, match="does not fit a 64-bit float"):
        parse_kernel(text, "bad.fir")


OVERFLOWING_MOD = """\
import fadsl as fd


def smod(score, b, h, q_idx, kv_idx):
    return fd.exp(score * 256)


kernel = fd.attention(name="variant", score_mod=smod, causal=True, dtype="fp32")
"""


def test_a_mod_that_overflows_fails_by_verdict_without_numpy_warnings(
    tmp_path: Path,
) -> None:
    # was: exit 1 with numpy RuntimeWarnings from fadsl's own files on stderr
    import subprocess
    import sys

    (tmp_path / "v.py").write_text(OVERFLOWING_MOD)
    shape = "B=1,N=2,Sq=40,Skv=24,D=16"
    argv = [sys.executable, "-m", "fadsl", "run", "v.py", "--shape", shape, "-o", "o"]
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stdout.rstrip().endswith("FAIL")
    assert proc.stderr == ""


@pytest.mark.parametrize(
    ("old", "new", "what"),
    [
        ("grid (i) in (cdiv(N, bn))", "grid (i) in (cdiv(inf, bn))", "a grid extent"),
        (
            "index = [bn*i +: bn, 0 +: D], pad",
            "index = [bn*i +: bn/2, 0 +: D], pad",
            "a block size",
        ),
    ],
)
def test_grid_extents_and_blocks_must_be_integer_expressions(
    old: str, new: str, what: str
) -> None:
    # was: ValueError "cannot evaluate oo exactly" in check
    text = sample("elementwise.fir").replace(old, new)
    with pytest.raises(IRParseError, match=f"{what} is an integer expression"):
        parse_kernel(text, "bad.fir")
