"""``plan/search/vec_memo.py``: inside ``sharing_plans`` a vector plan made at other
sizes is reused only where its planner's comparisons come out the same, so every
buffer plan ``fadsl tune`` checks is the one planning afresh gives.

fa2 is planned at a grid of block sizes that fit and that overflow UB (row chunks),
once with the memos and once without, and the plans' buffers (name, memory, bytes at
the configuration) must be the same; the memo must also have answered some of them
(else this would test nothing)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fadsl.commands import common
from fadsl.driver.lower import lower
from fadsl.driver.source import load_source, select
from fadsl.plan.resources.footprint_eval import exact
from fadsl.plan.search import vec_memo
from fadsl.plan.search.memo import sharing_plans
from fadsl.target import resolve

FA2 = str(Path(__file__).resolve().parents[2] / "examples" / "fa2.py")
BLOCKS = (16, 48, 64, 128, 176, 256, 384, 512)


def _buffers(low: Any, env: dict[str, int]) -> tuple[Any, ...]:
    """The plan's buffers (name, memory, slot bytes at ``env``) and what the resource
    check makes of it."""
    bp = low.plan_at(env)
    bufs = sorted((b.name, b.space, exact(b.slot_bytes(), env)) for b in bp.buffers)
    report = low.check_at(env)
    return bufs, report.ok, [(s.space, s.used) for s in report.spaces]


def test_shared_vector_plans_are_the_fresh_ones(monkeypatch: Any) -> None:
    target = resolve("ascend910b1", None)
    args = argparse.Namespace(
        file=FA2,
        kernel=None,
        sets=[],
        dtype=None,
        target="ascend910b1",
        target_file=None,
        shape="B=1,N=8,Sq=4096,Skv=4096,D=128",
    )
    low = lower(
        common.bind(select(load_source(FA2), None), args, target=target), plan=False
    )
    base = {**low.binding.model_env()}
    envs = [{**base, "block_q": q, "block_kv": kv} for q in BLOCKS for kv in BLOCKS]
    fresh = [_buffers(low, env) for env in envs]
    hits = []
    real = vec_memo.order

    def counted(values: list[float]) -> tuple[int, ...]:
        hits.append(1)
        return real(values)

    monkeypatch.setattr(vec_memo, "order", counted)
    with sharing_plans():
        shared = [_buffers(low, env) for env in envs]
        kept = sum(len(v) for v in (vec_memo._STORE.get() or {}).values())
    assert shared == fresh
    planned = kept
    assert planned < len(hits), "the memo answered no plan: the test checks nothing"
