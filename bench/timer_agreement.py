"""The cost model against the timer (issue 26, item 3), per kernel: each case runs
``fadsl sim --profile`` (the executed-instruction record timed pipe by pipe with the
cost table) and models the same kernel and shape with ``KernelModel`` (the figure
``fadsl tune`` and ``fadsl timeline`` print), and prints both times, their ratio and,
per KV iteration of one AI core (its cube core and one vector core), the calls the
kernel executed against the calls the model charges (``fadsl/perf/counts.py``).
Every time is MODELLED; the sim's wall time is measured. Exits 1 while a kernel's
model/timer ratio is off by more than 10% (issue 26, item 3).

    python3 bench/timer_agreement.py [--only fa2] [--target ascend910b1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = [  # (label, example (or an absolute path), --set, --shape)
    ("fa2", "fa2.py", [], "B=1,N=2,Sq=1024,Skv=2048,D=128"),
    ("fa2 causal", "fa2.py", ["causal=True"], "B=1,N=2,Sq=1024,Skv=2048,D=128"),
    # 64 tasks on 24 cores: consecutive tasks of a core hand over (perf/task_overlap.py)
    ("fa2, 3 tasks a core", "fa2.py", [], "B=1,N=4,Sq=2048,Skv=1024,D=128"),
    ("alibi (score_mod)", "alibi.py", [], "B=1,N=2,Sq=1024,Skv=2048,D=128"),
    (
        "decode split-KV",
        "decode_paged.py",
        ["kv_splits=3"],
        "B=2,N=32,Nkv=8,Sq=1,D=128,Pages=64,MaxPages=8",
    ),
    (  # V read by the vector cores and handed to the cube with P (issue 27)
        "decode, V on the vector cores",
        "decode_paged.py",
        ["kv_splits=3", "block_kv=256", "v_cores=2"],
        "B=2,N=32,Nkv=8,Sq=1,D=128,Pages=64,MaxPages=8",
    ),
    ("fa2_bwd", "fa2_bwd.py", [], "B=1,N=2,Sq=512,Skv=1024,D=128"),
    # the library backward: GQA (2 query heads per KV head) x Q blocks, a loop nest
    (
        "lib backward GQA",
        os.path.join(ROOT, "bench", "lib_backward.py"),
        [],
        "B=1,N=2,Nkv=1,Sq=512,Skv=1024,D=128",
    ),
]


def modelled_inputs(example: str, sets: list[str], shape: str, folder: str) -> bool:
    """Write the seeded inputs into ``folder`` with the scalars the kernel reads at
    run time set to what the model assumes (``modelled_scalars``: a paged kernel's
    every sequence as long as its block table allows), so the sim executes the
    workload the model charges. False (nothing written) when the model assumes
    nothing."""
    import numpy as np

    from fadsl.commands import common
    from fadsl.io import runio

    args = argparse.Namespace(file=os.path.join(ROOT, "examples", example), kernel=None,
                              sets=list(sets), dtype=None, shape=shape)  # fmt: skip
    b = common.build(args)
    hint = getattr(b.kdef, "modelled_scalars", None)
    values = hint(b.shape) if hint is not None else {}
    if not values:
        return False
    inputs = runio.make_inputs(b, 0)
    for name, value in values.items():
        inputs[name] = np.full_like(inputs[name], value) if not isinstance(
            value, tuple) else np.asarray(value, inputs[name].dtype)  # fmt: skip
    os.makedirs(folder, exist_ok=True)
    for name, array in inputs.items():
        np.ascontiguousarray(array).tofile(os.path.join(folder, f"{name}.bin"))
    return True


def run_case(example: str, sets: list[str], shape: str, target: str) -> dict:
    """Sim with --profile on the inputs the model assumes; the timer's figures, the
    record and the wall time."""
    out = tempfile.mkdtemp(prefix="fadsl-agree-")
    cmd = [sys.executable, "-m", "fadsl", "sim", os.path.join(ROOT, "examples", example),
           "--shape", shape, "--target", target, "--profile", "--no-check",
           "-o", os.path.join(out, "p")]  # fmt: skip
    for s in sets:
        cmd += ["--set", s]
    if modelled_inputs(example, sets, shape, os.path.join(out, "in")):
        cmd += ["--inputs", os.path.join(out, "in")]
    env = dict(
        os.environ,
        PYTHONPATH=ROOT,
        FADSL_SIM_OPT=os.environ.get("FADSL_SIM_OPT", "-O1"),
    )
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    with open(os.path.join(out, "p", "profile.json")) as f:
        prof = json.load(f)
    return {
        "profile": prof,
        "record": os.path.join(out, "p", "record.tsv"),
        "wall": wall,
    }


def model_case(example: str, sets: list[str], shape: str, target: str):  # type: ignore[no-untyped-def]
    from fadsl import target as targets
    from fadsl.commands import common
    from fadsl.perf.kernel import KernelModel

    args = argparse.Namespace(file=os.path.join(ROOT, "examples", example), kernel=None,
                              sets=list(sets), dtype=None, shape=shape)  # fmt: skip
    b = common.build(args)
    model = KernelModel(b.kernel, targets.get(target))
    env = b.model_env()
    return model, env, model.estimate(env)


def main() -> int:
    from fadsl.backends.sim.record import read_record
    from fadsl.perf import counts

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default="", help="run the cases whose label starts so")
    p.add_argument("--target", default="ascend910b1")
    a = p.parse_args()
    print(f"cost model vs timer on {a.target}, both MODELLED (sim wall time measured)")
    print(
        f"{'kernel':18} {'shape':34} {'timer us':>9} {'model us':>9} {'model/timer':>11}"
        "  within 10%  sim s"
    )
    table = []
    missed = 0
    for label, example, sets, shape in CASES:
        if a.only and not label.startswith(a.only):
            continue
        got = run_case(example, sets, shape, a.target)
        model, env, kt = model_case(example, sets, shape, a.target)
        timer_us = got["profile"]["time_us"]
        ratio = kt.time_s * 1e6 / timer_us
        ok = abs(ratio - 1.0) <= 0.10
        missed += not ok
        print(f"{label:18} {shape:34} {timer_us:9.1f} {kt.time_s * 1e6:9.1f} "
              f"{ratio:11.2f}  {'yes' if ok else 'NO':>10}  {got['wall']:5.1f}")  # fmt: skip
        rows = read_record(got["record"]).rows
        table.append(
            (label, counts.executed(rows, kt.iterations), counts.modelled(model, env))
        )
    print("\ncalls per KV iteration of one AI core (cube core + one vector core): "
          "executed / modelled")  # fmt: skip
    print(f"{'kernel':18} " + " ".join(f"{c:>15}" for c in counts.CLASSES))
    for label, ex, mo in table:
        cells = " ".join(f"{ex[c]:7.1f}/{mo[c]:<7.1f}" for c in counts.CLASSES)
        print(f"{label:18} {cells}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
