"""``fadsl sim --profile`` end to end on fa2: the runtime's record is timed, the trace
keeps the trace-event format, and the calls the cost model charges per KV iteration
equal the executed ones in the classes it counts one for one (Mmad, Fixpipe,
cross-core flags) and come within 10% of them in the classes it counts from the
backend's rules and helpers (vector calls, PipeBarrier, LoadData: perf/step_calls.py;
the record's figure also holds the task's own setup and finish, spread over its
iterations). bench/timer_agreement.py reports all five kernels (docs/cost-model.md,
"Counts")."""

from __future__ import annotations

import argparse
import json
from functools import lru_cache
from pathlib import Path

import pytest

from fadsl import target as targets
from fadsl.cli import main
from fadsl.perf import counts
from fadsl.perf.kernel import KernelModel

from tests.perf_timer.test_timer_rules import validate_trace

ROOT = Path(__file__).resolve().parents[2]
SHAPE = "B=1,N=1,Sq=256,Skv=4096,D=128"
"""8 KV iterations a task: the record spreads the task's own setup and finish over them
(the model charges neither), 1.25 vector calls and 1.4 barriers an iteration here."""

pytestmark = pytest.mark.cpu_runtime


@lru_cache(maxsize=None)
def _profiled(tmp: str, causal: bool) -> Path:
    out = Path(tmp) / f"p{int(causal)}"
    argv = ["sim", str(ROOT / "examples/fa2.py"), "--shape", SHAPE, "--profile",
            "--no-check", "-o", str(out), "--set", f"causal={causal}"]  # fmt: skip
    assert main(argv) == 0
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("profile"))


def test_profile_writes_a_valid_trace_and_a_summary(folder: str, capsys) -> None:  # type: ignore[no-untyped-def]
    out = _profiled(folder, False)
    for name in (
        "trace.json",
        "profile.txt",
        "profile.json",
        "profile.svg",
        "record.tsv",
    ):
        assert (out / name).is_file(), name
    doc = json.loads((out / "trace.json").read_text())
    validate_trace(doc)
    names = {
        e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"
    }
    assert {"AIC0", "AIV0", "AIV1"} <= names
    prof = json.loads((out / "profile.json").read_text())
    assert prof["modelled"] and prof["time_us"] > prof["launch_us"] > 0
    pipes = {(p["core"], p["pipe"]) for p in prof["pipes"]}
    assert {("AIC", "M"), ("AIC", "MTE1"), ("AIV", "V"), ("AIV", "MTE3")} <= pipes
    assert "MODELLED" in (out / "profile.txt").read_text()


@pytest.mark.parametrize("causal", [False, True])
def test_the_model_charges_the_executed_matmuls_fixpipes_and_flags(
    folder: str, causal: bool
) -> None:
    from fadsl.backends.sim.record import read_record
    from fadsl.commands import common

    out = _profiled(folder, causal)
    args = argparse.Namespace(file=str(ROOT / "examples/fa2.py"), kernel=None,
                              sets=[f"causal={causal}"], dtype=None, shape=SHAPE)  # fmt: skip
    b = common.build(args)
    model = KernelModel(b.kernel, targets.get("ascend910b1"))
    env = b.model_env()
    iterations = model.estimate(env).iterations
    ex = counts.executed(read_record(str(out / "record.tsv")).rows, iterations)
    mo = counts.modelled(model, env)
    for c in ("Mmad", "Fixpipe", "cross-core flag"):
        assert ex[c] == pytest.approx(mo[c]), (c, ex, mo)


def _counts(folder: str, causal: bool) -> tuple[dict[str, float], dict[str, float]]:
    from fadsl.backends.sim.record import read_record
    from fadsl.commands import common

    out = _profiled(folder, causal)
    args = argparse.Namespace(file=str(ROOT / "examples/fa2.py"), kernel=None,
                              sets=[f"causal={causal}"], dtype=None, shape=SHAPE)  # fmt: skip
    b = common.build(args)
    model = KernelModel(b.kernel, targets.get("ascend910b1"))
    env = b.model_env()
    iterations = model.estimate(env).iterations
    ex = counts.executed(read_record(str(out / "record.tsv")).rows, iterations)
    return ex, counts.modelled(model, env)


@pytest.mark.parametrize("causal", [False, True])
def test_the_model_charges_the_executed_vector_calls_barriers_and_loads(
    folder: str, causal: bool
) -> None:
    """fa2 at SHAPE (the build the tests above share): per KV iteration of one AI
    core, the vector calls, PipeBarrier<PIPE_V> and LoadData the model charges are
    within 10% of the ones the kernel executed (the model used to charge one call and
    one barrier per IR op and one LoadData per 4 KB: 34, 34 and 96 against 109.5,
    56.2 and 130 at the bench's shape). Causal: the select of the blocks crossing
    the diagonal (a GetValue, CompareScalar, Select and two barriers per row) is
    charged to those blocks, averaged over every task as the record is (the model
    charged it the KV-tail select's share, none, and counted at one grid point
    without its row chunks: 110 and 55 against 152.6 and 96.9 at the bench's
    shape)."""
    ex, mo = _counts(folder, causal)
    for c in ("vector", "PipeBarrier", "LoadData"):
        assert mo[c] == pytest.approx(ex[c], rel=0.10), (c, ex, mo)


def test_the_api_writes_the_same_profile(tmp_path: Path) -> None:
    import fadsl as fd
    from fadsl.driver.source import load_source, select

    kernel = select(load_source(str(ROOT / "examples/fa2.py")), "fa2")
    shape = dict(B=1, N=1, Sq=256, Skv=1024, D=128)
    out = fd.sim(kernel, shape=shape, consts={"causal": False}, profile=tmp_path / "p")
    assert set(out) == {"o"}
    validate_trace(json.loads((tmp_path / "p" / "trace.json").read_text()))
    assert json.loads((tmp_path / "p" / "profile.json").read_text())["time_us"] > 0
