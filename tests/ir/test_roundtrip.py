"""Round trip: parse(print(k)) == k and print(parse(print(k))) == print(k).

Over the FA2 example (causal on and off, every dtype), the IR after every pass of
the pipeline, and the hand-written corpus tests/ir_samples/*.fir, which together
must use every op class.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from irutil import build_fa2, sample_paths

from fadsl.ir.nodes import Kernel, Op, all_op_classes
from fadsl.ir.text.parser import parse_kernel
from fadsl.ir.text.printer import print_kernel
from fadsl.passes import pass_names, run_pipeline
from fadsl.target import get as get_target


def assert_round_trip(kernel: Kernel) -> None:
    text = print_kernel(kernel)
    again = parse_kernel(text, "<round trip>")
    assert again == kernel
    assert print_kernel(again) == text


@pytest.mark.smoke
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
@pytest.mark.parametrize("causal", [True, False])
def test_fa2(causal: bool, dtype: str) -> None:
    assert_round_trip(build_fa2(causal, dtype))


@pytest.mark.parametrize("after", pass_names())
def test_fa2_after_each_pass(after: str) -> None:
    kernel = run_pipeline(build_fa2(True), get_target("ascend910b1"), until=after)
    assert_round_trip(kernel)


@pytest.mark.parametrize("path", sample_paths(), ids=lambda p: p.stem)
def test_sample(path) -> None:  # type: ignore[no-untyped-def]
    kernel = parse_kernel(path.read_text(encoding="utf-8"), str(path))
    assert_round_trip(kernel)


def _op_classes(ops: tuple[Op, ...]) -> set[type]:
    found: set[type] = set()
    for op in ops:
        found.add(type(op))
        found |= _op_classes(getattr(op, "body", ()))
    return found


def test_samples_use_every_op_class() -> None:
    found: set[type] = set()
    for path in sample_paths():
        found |= _op_classes(parse_kernel(path.read_text(encoding="utf-8")).body)
    missing = sorted(c.__name__ for c in all_op_classes() if c not in found)
    assert not missing, f"no tests/ir_samples/*.fir uses: {', '.join(missing)}"


GENERATED = Path(__file__).resolve().parents[2] / "generated"


@pytest.mark.parametrize(
    "path", sorted(GENERATED.glob("*/*.fir")), ids=lambda p: p.parent.name
)
def test_the_fir_that_compile_writes_parses_back(path: Path) -> None:
    """`fadsl compile` writes `<kernel>.fir` for the user to read, edit and compile
    again: every one in generated/ must parse and round-trip (a paged kernel's
    `mod(x, cdiv(floordiv(N, Nkv), block_q))` block start used not to parse)."""
    kernel = parse_kernel(path.read_text(encoding="utf-8"), str(path))
    assert_round_trip(kernel)
