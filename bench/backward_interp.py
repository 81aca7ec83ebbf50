"""Interpreter speed of a backward pass against a plain numpy fp32 backward.

Times ``interpret`` of ``fd.attention_backward`` (plain, BNSD, fp16) on seeded inputs,
and a dense numpy float32 backward of the same inputs with whole-tensor calls (P, dP and
dS of every head at once: ``P = exp(S - lse)``, ``dV = P^T dO``, ``dS = P (dP - Delta)``,
``dQ = dS K scale``, ``dK = dS^T Q scale``), alternately in one process, and prints the
medians, their ratio and the load average before and after (bench/timing.py says why).
There is no modelled TFLOPS of a generated backward: the Ascend C backend does not lower
the backward yet (docs/backward.md).

    python3 bench/backward_interp.py [--rounds 3] [--shape B=1,N=8,Sq=4096,Skv=4096,D=128]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import fadsl as fd  # noqa: E402
from fadsl.backends.interp import interpret  # noqa: E402
from fadsl.driver.binding import Binding  # noqa: E402
from fadsl.io import runio  # noqa: E402
from fadsl.passes import run_pipeline  # noqa: E402

SHAPE = "B=1,N=8,Sq=4096,Skv=4096,D=128"


def numpy_backward(x: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The same gradients, dense, in float32 (inputs BNSD, N == Nkv)."""
    q, k, v, o, do = (x[n].astype(np.float32) for n in ("q", "k", "v", "o", "do"))
    scale = np.float32(q.shape[-1] ** -0.5)
    s = q @ k.swapaxes(-1, -2)
    s *= scale
    s -= x["lse"][..., None]
    p = np.exp(s, out=s)
    dv = p.swapaxes(-1, -2) @ do
    dp = do @ v.swapaxes(-1, -2)
    dp -= np.sum(do * o, axis=-1, keepdims=True)
    ds = np.multiply(p, dp, out=dp)
    dq = (ds @ k) * scale
    dk = (ds.swapaxes(-1, -2) @ q) * scale
    return {"dq": dq, "dk": dk, "dv": dv}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--shape", default=SHAPE)
    args = ap.parse_args()
    shape = {k: int(v) for k, v in (p.split("=") for p in args.shape.split(","))}
    shape.setdefault("Nkv", shape["N"])
    kdef = fd.attention_backward(name="bwd_bench")
    kernel = kdef.build()
    binding = Binding(kernel, {s: shape[s] for s in kernel.shape_syms}, {}, kdef)
    inputs = runio.make_inputs(binding, 0)
    lowered = run_pipeline(kernel)
    print(f"load average before: {os.getloadavg()}")
    times: dict[str, list[float]] = {"interpreter": [], "numpy fp32": []}
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        interpret(lowered, binding.env(), inputs)
        times["interpreter"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        numpy_backward(inputs)
        times["numpy fp32"].append(time.perf_counter() - t0)
    for name, ts in times.items():
        walls = " ".join(f"{t:.2f}" for t in ts)
        print(f"{name}: median {statistics.median(ts):.3f} s  (rounds: {walls})")
    ratio = statistics.median(times["interpreter"]) / statistics.median(
        times["numpy fp32"]
    )
    print(f"interpreter / numpy: {ratio:.2f}  [{args.shape}, fp16, non-causal]")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
