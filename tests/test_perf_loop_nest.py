"""The model reads a perfect loop nest as one KV loop (fadsl/perf/loop_nest.py): the
library backward loops over query batches, the heads of a KV head's group and the Q
blocks (issue 26: it was modelled as "1 KV iterations")."""

from __future__ import annotations

import dataclasses

import pytest
import sympy

import fadsl as fd
from fadsl import target as targets
from fadsl.ir import nodes as ir
from fadsl.perf.kernel import KernelModel
from fadsl.perf.loop_nest import flatten

BWD = fd.attention_backward(name="nest_bwd")
CAUSAL = fd.attention_backward(name="nest_bwd_causal", causal=True)
SHAPE = dict(B=1, N=8, Nkv=2, Sq=1024, Skv=1024, D=128)


def _model(kdef: object) -> tuple[KernelModel, dict]:
    k = kdef.build({})  # type: ignore[attr-defined]
    env = {**SHAPE, **{n: v for n, v in k.consts if isinstance(v, int)}}
    return KernelModel(k, targets.get("ascend910b2")), env


@pytest.mark.parametrize("kdef", [BWD, CAUSAL], ids=["plain", "causal"])
def test_every_head_and_q_block_is_an_iteration(kdef: object) -> None:
    model, env = _model(kdef)
    kt = model.estimate(env)
    bq, bkv = env["block_q"], env["block_kv"]
    heads = SHAPE["N"] // SHAPE["Nkv"]
    n_q, n_kv = SHAPE["Sq"] // bq, SHAPE["Skv"] // bkv
    if kdef is BWD:
        blocks = n_q * n_kv
    else:  # KV block j is seen by the Q blocks from the one holding row j * bkv
        blocks = sum(n_q - (j * bkv) // bq for j in range(n_kv))
    assert kt.iterations == SHAPE["B"] * SHAPE["Nkv"] * heads * blocks
    # the cube does its five matmuls for every iteration: never faster than that
    t = targets.get("ascend910b2")
    flops = 5 * 2 * bq * bkv * SHAPE["D"] * kt.iterations
    assert kt.cube_flops == flops
    peak = t.rate("cube_flops_per_cycle") * t.rate("clock_hz")
    cube_s = flops / (peak * kt.block_dim)
    assert kt.time_s > cube_s


def test_an_inner_bound_that_reads_the_outer_variable_is_not_flattened() -> None:
    k = BWD.build({})
    grid = next(op for op in k.body if isinstance(op, ir.Grid))
    outer = next(op for op in grid.body if isinstance(op, ir.For))
    nest = flatten(outer)
    assert nest.inner is not outer and nest.loop.inits == outer.inits
    assert nest.loop.loop_results == outer.loop_results
    g_loop = outer.body[0]
    assert isinstance(g_loop, ir.For)
    i_loop = g_loop.body[0]
    assert isinstance(i_loop, ir.For)
    # a triangle: the Q loop starts at the head index, so its trips vary by head
    tri = dataclasses.replace(i_loop, start=sympy.Symbol(g_loop.var))
    bent = dataclasses.replace(g_loop, body=(tri,))
    assert flatten(bent).loop is bent and flatten(bent).outer_trips == 1
    # around it, the one-trip batch loop still flattens (down to the head loop)
    assert flatten(dataclasses.replace(outer, body=(bent,))).inner is bent
