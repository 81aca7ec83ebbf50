"""The Python API (docs/api.md): the same numbers and errors as the command line.

``fd.interpret`` with no inputs equals ``fadsl run`` bit for bit; given inputs are
used as they are and the missing ones are seeded as ``run`` seeds them (a block mask
derived from the given ones). Bad arguments raise a UsageError at the caller's line
whose traceback holds no frame of fadsl's but the API's own entry.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import fadsl as fd
from fadsl.cli import main
from fadsl.driver.source import load_source, select
from fadsl.errors import FadslError, ResourceError, UsageError

ROOT = Path(__file__).resolve().parents[2]
FA2 = select(load_source(str(ROOT / "examples" / "fa2.py")), None)
DOC = select(load_source(str(ROOT / "examples" / "document_mask.py")), None)
SMALL = dict(B=1, N=2, Sq=96, Skv=80, D=32)
SMALL_TEXT = ",".join(f"{k}={v}" for k, v in SMALL.items())


def _cli_run(
    tmp_path: Path, example: str, *extra: str, shape: str = SMALL_TEXT
) -> Path:
    out = tmp_path / "run"
    argv = ["run", str(ROOT / "examples" / example), "--shape", shape]
    assert main([*argv, *extra, "-o", str(out)]) == 0
    return out


def _read(folder: Path, name: str, like: np.ndarray | None = None) -> np.ndarray:
    """``name``.bin of a run folder, with the dtype and shape its meta.json records."""
    entry = json.loads((folder / "meta.json").read_text())["params"][name]
    data = np.fromfile(folder / f"{name}.bin", dtype=np.dtype(entry["dtype"]))
    return data.reshape(entry["shape"])


def _qkv(dtype: Any = np.float16, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((1, 2, 96, 32)).astype(dtype)
    kv = [rng.standard_normal((1, 2, 80, 32)).astype(dtype) for _ in range(2)]
    return {"q": q, "k": kv[0], "v": kv[1]}


def _raises(call: Callable[[], Any], *words: str) -> FadslError:
    """The FadslError ``call`` raises: located here, its text holding ``words``, and
    a traceback with no fadsl frame but the API's entry."""
    with pytest.raises(FadslError) as info:
        call()
    err = info.value
    for w in words:
        assert w in err.message, err.message
    assert err.loc is not None and err.loc.file == __file__, err.loc
    frames = [f.filename for f in traceback.extract_tb(info.tb)]
    inside = [f for f in frames if os.sep + "fadsl" + os.sep in f]
    assert inside == [str(ROOT / "fadsl" / "api" / "calls.py")], frames
    return err


# ----------------------------------------------------------------------------
# fd.interpret
# ----------------------------------------------------------------------------


@pytest.mark.smoke
def test_interpret_without_inputs_equals_fadsl_run(tmp_path: Path) -> None:
    out = fd.interpret(FA2, shape=SMALL, consts={"causal": True}, seed=3)
    folder = _cli_run(tmp_path, "fa2.py", "--set", "causal=true", "--seed", "3")
    assert list(out) == ["o"] and out["o"].dtype == np.float16
    assert np.array_equal(out["o"], _read(folder, "o", out["o"]), equal_nan=True)


def test_missing_inputs_are_seeded_as_run_seeds_them(tmp_path: Path) -> None:
    """The run's own q, k, v given back; its doc ids seeded again from the same seed,
    and the block mask derived from them: the same outputs."""
    shape = "B=1,N=2,Sq=96,Skv=96,D=32"  # a query's document is read at its position
    folder = _cli_run(tmp_path, "document_mask.py", "--seed", "5", shape=shape)
    given = {n: _read(folder, n) for n in ("q", "k", "v")}
    out = fd.interpret(DOC, seed=5, **given)
    assert np.array_equal(out["o"], _read(folder, "o", out["o"]), equal_nan=True)


def test_interpret_reads_the_shape_and_dtype_from_the_arrays() -> None:
    inputs = _qkv(np.float32)
    out = fd.interpret(FA2, **inputs)
    assert out["o"].shape == (1, 2, 96, 32) and out["o"].dtype == np.float32
    consts = {"scale": 32**-0.5}
    ref = FA2.reference(inputs, SMALL, consts)["o"]
    same = FA2.reference(inputs, SMALL, consts, fd.f32)["o"]
    assert fd.verify(out["o"], ref, same_precision=same).passed


def test_interpret_takes_anything_with_dlpack() -> None:
    class Tensor:  # stands for a framework tensor: only the DLPack protocol
        def __init__(self, a: np.ndarray) -> None:
            self.a = a

        def __dlpack__(self, **kwargs: Any) -> Any:
            return self.a.__dlpack__(**kwargs)

        def __dlpack_device__(self) -> Any:
            return self.a.__dlpack_device__()

    inputs = _qkv()
    want = fd.interpret(FA2, **inputs)["o"]
    got = fd.interpret(FA2, **{n: Tensor(a) for n, a in inputs.items()})["o"]
    assert np.array_equal(want, got, equal_nan=True)


def test_interpret_takes_torch_tensors() -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed")
    inputs = _qkv()
    want = fd.interpret(FA2, **inputs)["o"]
    tensors = {n: torch.from_numpy(a).requires_grad_(False) for n, a in inputs.items()}
    assert np.array_equal(want, fd.interpret(FA2, **tensors)["o"], equal_nan=True)


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: fd.interpret(FA2, x=np.zeros(3)), ["`x` is not a parameter"]),
        (lambda: fd.interpret(FA2, o=np.zeros(3)), ["`o` is an output"]),
        (lambda: fd.interpret(FA2, q=[1.0, 2.0]), ["`q` is a list, not an array"]),
        (
            lambda: fd.interpret(FA2, **{**_qkv(), "q": _qkv()["q"][0]}),
            ["`q` has 3 dimensions", "[B, N, Sq, D]"],
        ),
        (
            lambda: fd.interpret(FA2, **{**_qkv(), "v": _qkv()["v"][:, :, :40]}),
            ["`v` has the shape [1, 2, 40, 32]", "[B, N, Skv, D] = [1, 2, 80, 32]"],
        ),
        (
            lambda: fd.interpret(FA2, **{**_qkv(), "k": _qkv(np.float32)["k"]}),
            ["`k` is float32", "in one dtype, here float16 (as `q`, `v`)"],
        ),
        (
            lambda: fd.interpret(FA2, **_qkv(), dtype="fp64"),
            ["dtype='fp64': expected one of"],
        ),
        (
            lambda: fd.interpret(FA2, **_qkv(), consts={"block_q": 0}),
            ["consts['block_q']=0: `block_q` must be a positive integer"],
        ),
        (
            lambda: fd.interpret(FA2, **_qkv(), consts={"blk": 1}),
            ["kernel `fa2` has no constant or scalar `blk`"],
        ),
        (
            lambda: fd.interpret(FA2, shape={**SMALL, "H": 2}),
            ["no shape symbol 'H'"],
        ),
        (
            lambda: fd.interpret(FA2, shape={**SMALL, "D": 0}),
            ["sizes must be positive"],
        ),
        (
            lambda: fd.interpret(FA2, q=_qkv()["q"]),
            ["no value for the shape symbol Skv"],
        ),
        (lambda: fd.interpret(FA2, shape=SMALL, seed=-1), ["seed=-1"]),
        (lambda: fd.interpret("fa2"), ["expected a kernel, got str"]),
    ],
    ids=[
        "unknown_name",
        "output_name",
        "not_an_array",
        "wrong_rank",
        "wrong_shape",
        "wrong_dtype",
        "bad_dtype",
        "bad_const",
        "unknown_const",
        "unknown_symbol",
        "bad_size",
        "missing_symbol",
        "bad_seed",
        "not_a_kernel",
    ],
)
def test_bad_arguments_raise_a_usage_error_at_the_callers_line(
    call: Callable[[], Any], words: list[str]
) -> None:
    assert isinstance(_raises(call, *words), UsageError)


def test_calling_a_kernel_names_the_api() -> None:
    with pytest.raises(FadslError) as info:
        FA2(1, 2, 3)
    assert "fd.interpret(fa2, q=..., k=..., v=...)" in (info.value.hint or "")


# ----------------------------------------------------------------------------
# fd.check, fd.compile
# ----------------------------------------------------------------------------


def test_check_reports_what_fadsl_check_prints(capsys: pytest.CaptureFixture) -> None:
    report = fd.check(FA2, target="ascend910b1", shape=SMALL)
    assert report.fits and report.explanation == "" and report.error is None
    assert {m.space for m in report.memories} >= {"UB", "L1", "L0A", "L0B", "L0C"}
    assert all(m.fits for m in report.memories)
    assert (
        main(["check", str(ROOT / "examples" / "fa2.py"), "--shape", SMALL_TEXT]) == 0
    )
    assert capsys.readouterr().out == report.table + "\n"


def test_check_explains_an_overflow_without_raising() -> None:
    report = fd.check(FA2, shape=SMALL, consts={"block_q": 512, "block_kv": 512})
    assert not report.fits and isinstance(report.error, ResourceError)
    assert "overflow in kernel `fa2`" in report.explanation
    assert "DOES NOT FIT" in report.table and report.explanation in str(report)


def test_check_refuses_an_unknown_target() -> None:
    _raises(lambda: fd.check(FA2, target="ascend910x"), "target='ascend910x'")


def test_compile_writes_the_project_fadsl_compile_writes(tmp_path: Path) -> None:
    project = fd.compile(FA2, out_dir=tmp_path / "api")
    assert (
        main(["compile", str(FA2.loc.file), "--quiet", "-o", str(tmp_path / "cli")])
        == 0
    )
    cli = sorted(
        str(p.relative_to(tmp_path / "cli"))
        for p in (tmp_path / "cli").rglob("*")
        if p.is_file()
    )
    assert list(project.files) == [f for f in cli if f != "fadsl-manifest.json"]
    for name in ("fa2_kernel.cpp", "resources.json"):
        assert (
            Path(project.path(name)).read_bytes()
            == (tmp_path / "cli" / name).read_bytes()
        )
    assert project.report.fits


def test_compile_of_an_overflow_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "p"
    with pytest.raises(ResourceError):
        fd.compile(FA2, out_dir=out, consts={"block_q": 512, "block_kv": 512})
    assert not out.exists()


def test_compile_refuses_a_folder_that_is_not_a_fadsl_output(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    _raises(lambda: fd.compile(FA2, out_dir=tmp_path), "out_dir=")
    assert (tmp_path / "mine.txt").read_text() == "keep me"


# ----------------------------------------------------------------------------
# fd.sim, fd.verify, import cost
# ----------------------------------------------------------------------------


@pytest.mark.cpu_runtime
def test_sim_agrees_with_the_interpreter_and_logs_its_phases(caplog) -> None:  # type: ignore[no-untyped-def]
    inputs = _qkv()
    caplog.set_level(logging.INFO, logger="fadsl")
    shown = io.StringIO()  # not a terminal: one line per phase
    got = fd.sim(FA2, progress=shown, **inputs)["o"].astype(np.float64)
    want = fd.interpret(FA2, **inputs)["o"].astype(np.float64)
    assert np.abs(got - want).max() < 1e-3
    logged = [r.getMessage() for r in caplog.records if r.name == "fadsl.sim"]
    assert logged[0].startswith("lowering fa2 for ascend910b1")
    assert any(m.startswith(("building fa2", "using the cached build")) for m in logged)
    assert any(m.startswith("running fa2 [B=1,N=2,") for m in logged)
    assert logged[-1].startswith("ran in ")
    assert shown.getvalue().splitlines() == [f"fadsl sim: {m}" for m in logged]


def test_sim_refuses_a_bad_progress_argument() -> None:
    _raises(lambda: fd.sim(FA2, progress="yes"), "progress='yes'")


def test_verify_applies_the_tolerance_rule() -> None:
    ref = np.linspace(-1, 1, 64).reshape(8, 8)
    same = ref.astype(np.float16)
    assert fd.verify(same, ref).passed
    assert fd.verify(same, ref, "fp16", same_precision=same).bound > 0
    off = (ref + 0.1).astype(np.float16)
    result = fd.verify(off, ref, fd.f16)
    assert not result.passed and "FAIL" in result.line()
    nan = same.copy()
    nan[0, 0] = np.nan
    assert not fd.verify(nan, ref).passed


def test_verify_refuses_mismatched_arrays() -> None:
    ref = np.zeros((4, 4))
    _raises(
        lambda: fd.verify(np.zeros((4, 3), np.float16), ref), "`actual` has the shape"
    )
    _raises(
        lambda: fd.verify(np.zeros((4, 4), np.int32), ref), "give the output's dtype"
    )


def test_import_fadsl_stays_light() -> None:
    """The API's functions load with first use, and neither `import fadsl` nor
    looking one up pulls in numpy (compile and check never need it)."""
    code = (
        "import sys, fadsl; light = 'numpy' not in sys.modules; "
        "print(light, callable(fadsl.interpret), 'numpy' not in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["True", "True", "True"]


def test_the_docs_show_the_golden_test_as_it_is() -> None:
    """docs/api.md's golden test is examples/test_golden_api.py, which pytest runs."""
    doc = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    mark = "<!-- run-by: examples/test_golden_api.py -->\n```python\n"
    shown = doc[doc.index(mark) + len(mark) :].split("\n```\n", 1)[0] + "\n"
    assert shown == (ROOT / "examples" / "test_golden_api.py").read_text()


def test_a_symbol_in_a_linear_dim_is_read_from_it(tmp_path: Path) -> None:
    """varlen's B appears only as cu_seqlens' B + 1: given every input of a run, no
    shape is needed and the outputs are the run's."""
    varlen = select(load_source(str(ROOT / "examples" / "varlen.py")), None)
    folder = _cli_run(tmp_path, "varlen.py", shape="B=3,N=2,Sq=96,Skv=80,D=32")
    meta = json.loads((folder / "meta.json").read_text())
    given = {
        n: _read(folder, n) for n, e in meta["params"].items() if e["kind"] == "in"
    }
    assert "cu_seqlens_q" in given and given["cu_seqlens_q"].shape == (4,)
    out = fd.interpret(varlen, **given)
    assert np.array_equal(out["o"], _read(folder, "o"), equal_nan=True)
