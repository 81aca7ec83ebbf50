"""The deferred output update (plan/schedule/defer.py) in the generated kernel, run by the CPU
runtime against the interpreter; and a deferral whose hand-overs of stage B keep one
workspace slot, which the CPU runtime must stop (the slots are what makes it safe)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from fadsl import cli
from fadsl.plan.schedule import ring

ROOT = Path(__file__).resolve().parents[3]

pytestmark = [
    pytest.mark.cpu_runtime,
    pytest.mark.skipif(
        shutil.which("g++") is None or shutil.which("cmake") is None,
        reason="needs g++ and cmake",
    ),
]


def _sim(tmp_path: Path, example: str, shape: str, *sets: str) -> int:
    args = ["sim", str(ROOT / "examples" / f"{example}.py"), "--shape", shape]
    for s in sets:
        args += ["--set", s]
    return cli.main(args + ["-o", str(tmp_path / "sim")])


@pytest.mark.parametrize(
    "example, shape, sets",
    [
        ("fa2", "B=1,N=1,Sq=200,Skv=300,D=64", ()),  # tails
        ("fa2", "B=1,N=2,Sq=1,Skv=129,D=128", ()),  # Sq = 1
        ("fa2", "B=1,N=1,Sq=300,Skv=200,D=64", ("causal=True",)),  # rows see nothing
        ("fa2", "B=1,N=1,Sq=64,Skv=100,D=64", ()),  # one KV iteration: the drain only
        ("gqa", "B=1,N=4,Nkv=2,Sq=130,Skv=260,D=64", ()),
    ],
)
def test_the_deferred_update_agrees_with_the_interpreter(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
    example: str,
    shape: str,
    sets: tuple[str, ...],
) -> None:
    chosen = ring.choose

    def deferred(*args, **kwargs):  # type: ignore[no-untyped-def]
        rings = chosen(*args, **kwargs)
        assert rings and all(r.deferral is not None for r in rings.values())
        return rings

    monkeypatch.setattr(ring, "choose", deferred)
    code = _sim(tmp_path, example, shape, *sets)
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "PASS" in out.out


def test_a_deferral_with_one_slot_for_p_fails_in_the_cpu_runtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    chosen = ring.choose

    def one_slot_p(*args, **kwargs):  # type: ignore[no-untyped-def]
        rings = chosen(*args, **kwargs)
        out = {}
        for k, r in rings.items():
            d = r.deferral
            assert d is not None and d.values == ("dot_1", "p_1")
            out[k] = dataclasses.replace(
                r, deferral=dataclasses.replace(d, values=("dot_1",))
            )
        return out

    monkeypatch.setattr(ring, "choose", one_slot_p)
    # four KV iterations of 128 keys (the default 512 would make one)
    code = _sim(tmp_path, "fa2", "B=1,N=1,Sq=128,Skv=512,D=64", "block_kv=128")
    err = capsys.readouterr().err
    assert code != 0, err
    assert "a workspace slot overwritten before its consumer released it" in err, err
