"""The deferred output update (plan/schedule/defer.py): which loops defer it, what the plan, the
checker, the textual IR and the model say about it, and E85."""

from __future__ import annotations

import os

import pytest

from fadsl import target as targets
from fadsl.driver.source import load_source, select
from fadsl.errors import ScheduleError
from fadsl.ir.expr import evaluate
from fadsl.ir.text.parser import parse_kernel
from fadsl.ir.text.printer import print_kernel
from fadsl.passes import run_pipeline
from fadsl.plan.schedule import ring
from fadsl.plan.memory.plan_buffers import Lowering, kernel_env, lower

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SHAPE = dict(B=1, N=2, Sq=512, Skv=512, D=128)
EARLY = "acc = acc * alpha[:, None] + fd.dot(fd.cast(p, v.dtype), vt)"
LATE = "acc = fd.dot(fd.cast(p, v.dtype), vt) + acc * alpha[:, None]"
HEAD = "pipelined(stages = 2, ring = 3, defer_update = true)"


def _kernel(path: str, **consts: object):  # type: ignore[no-untyped-def]
    return select(load_source(path), None).build(consts)


def _lower(kernel, tname: str = "ascend910b1") -> Lowering:  # type: ignore[no-untyped-def]
    t = targets.get(tname)
    env = {**kernel_env(kernel), **SHAPE, "Nkv": 2}
    return lower(run_pipeline(kernel, t), t, env)


def _fa2() -> str:
    return os.path.join(ROOT, "examples", "fa2.py")


def _early(tmp_path) -> str:  # type: ignore[no-untyped-def]
    src = open(_fa2()).read()
    assert LATE in src
    path = tmp_path / "fa2_early.py"
    path.write_text(src.replace(LATE, EARLY))
    return str(path)


def test_fa2_defers_the_update_and_keeps_alpha_for_one_iteration() -> None:
    low = _lower(_kernel(_fa2()))
    (r,) = low.rings.values()
    d = r.deferral
    assert d is not None
    deferred = [op.result.name for op in r.loop.body if id(op) in d.ops]
    assert deferred == ["t_14", "acc_2"]
    assert [v.name for v in d.saved] == ["alpha"] and d.values == ("dot_1", "p_1")
    (prev,) = [b for b in low.plan.buffers if b.name == "alphaPrevBuf"]
    assert (prev.space, prev.kind, prev.values) == ("UB", "tbuf", ("alpha",))
    # two slots of the 64 f32 rows of this vector core, each a 256-byte repeat
    assert evaluate(prev.slot_bytes(), {"block_q": 128}) == 512


def test_the_checker_counts_the_saved_alpha(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from fadsl.plan.resources.check_resources import check

    def ub(path: str) -> int:
        low = _lower(_kernel(path))
        return check(low.plan, low.target, low.env).space("UB").used

    assert ub(_fa2()) - ub(_early(tmp_path)) == 512


def test_acc_rescaled_before_p_leaves_is_not_deferred(tmp_path) -> None:  # type: ignore[no-untyped-def]
    kernel = _kernel(_early(tmp_path))
    (r,) = _lower(kernel).rings.values()
    assert r.deferral is None and r.slot_values == ("dot",)
    text = print_kernel(ring.annotate(kernel, _lower(kernel).rings))
    assert "pipelined(stages = 2, ring = 3, defer_update = false)" in text
    forced = text.replace("defer_update = false", "defer_update = true")
    with pytest.raises(ScheduleError) as exc:  # E85
        _lower(parse_kernel(forced))
    assert "defer_update = true cannot be honoured" in exc.value.message
    assert "follows the update of the output" in exc.value.message


def test_the_textual_ir_turns_the_deferral_off() -> None:
    kernel = _kernel(_fa2())
    text = print_kernel(ring.annotate(kernel, _lower(kernel).rings))
    assert HEAD in text
    low = _lower(
        parse_kernel(text.replace("defer_update = true", "defer_update = false"))
    )
    (r,) = low.rings.values()
    assert r.deferral is None and r.slot_values == ("dot",)
    assert {w.name: w.slots for w in low.plan.workspaces}["p1Ws"] == 1


def test_a_deferral_needs_a_ring() -> None:
    kernel = _kernel(_fa2())
    text = print_kernel(ring.annotate(kernel, _lower(kernel).rings))
    with pytest.raises(ScheduleError) as exc:
        _lower(parse_kernel(text.replace("ring = 3", "ring = 1")))
    assert "the loop has no ring" in exc.value.message


def test_the_model_reads_the_deferral_from_the_plan(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from fadsl.perf.kernel import KernelModel

    t = targets.get("ascend910b2")
    assert KernelModel(_kernel(_fa2()), t).kv_schedule.defer_update is True
    assert KernelModel(_kernel(_early(tmp_path)), t).kv_schedule.defer_update is False
