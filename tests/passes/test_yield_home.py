"""Where the vector plan puts a loop-carried value made in place (plan/memory/vector_plan.py).

A yielded value lives to the end of its loop. When ``acc = fd.dot(p, v) + acc * alpha``
is written with the dot first, the add's first operand is the P @ V result in the VECIN
staging queue, and the plan used to put the new ``acc`` there in place: its FreeTensor
then followed the loop, out of the tile's scope, and the generated C++ did not compile.
"""

from __future__ import annotations

import os

from fadsl import target as targets
from fadsl.driver.source import load_source, select
from fadsl.passes import run_pipeline
from fadsl.plan.memory.plan_buffers import kernel_env, lower

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
EARLY = "acc = acc * alpha[:, None] + fd.dot(fd.cast(p, v.dtype), vt)"
LATE = "acc = fd.dot(fd.cast(p, v.dtype), vt) + acc * alpha[:, None]"


def test_a_yield_made_in_place_never_lives_in_a_queue_tile(tmp_path) -> None:  # type: ignore[no-untyped-def]
    src = open(os.path.join(ROOT, "examples", "fa2.py")).read()
    path = tmp_path / "fa2_late.py"
    path.write_text(src.replace(EARLY, LATE))  # the dot first, whichever fa2.py has
    kernel = select(load_source(str(path)), None).build({})
    t = targets.get("ascend910b1")
    env = {**kernel_env(kernel), "B": 1, "N": 1, "Sq": 256, "Skv": 256, "D": 128}
    low = lower(run_pipeline(kernel, t), t, env)
    home = low.vec.homes["acc_2"]
    kind = next(b.kind for b in low.plan.buffers if b.name == home)
    assert kind == "tbuf", f"%acc_2 lives in {home}, a {kind}"
    assert home == low.vec.homes["acc"]  # in place in the state: no copy at the end
