"""Part 1's ranges and parts 3-4's notes of ``bench/kernel_model.py`` (issue 26):
which cost-table entries move the held-out errors most, and the statement that the
decode and the backward have no published native figure to hold out."""

from __future__ import annotations

from typing import Any


def print_moves(held: list[Any]) -> None:
    """The entries that move the held-out errors most (percentage points of any
    held-out point's error, down / up)."""
    by: dict[str, tuple[float, float]] = {}
    for sp in held:
        for label, v in sp.moves.items():
            name = label.rsplit(" x", 1)[0]
            lo, hi = by.get(name, (0.0, 0.0))
            by[name] = (min(lo, v - sp.central), max(hi, v - sp.central))
    top = sorted(by.items(), key=lambda kv: -max(-kv[1][0], kv[1][1]))[:6]
    print("   what moves the held-out errors most (points, down / up): " + "; ".join(
        f"{name} {lo:+.1f}/{hi:+.1f}" for name, (lo, hi) in top))  # fmt: skip


NO_DECODE_POINT = (
    "   held-out points for part 3 (decode): none. No measured speed of CANN's "
    "IncreFlashAttention or of a\n   paged decode was found (the published figures "
    "collected in docs/cost-model.md are prefill\n   forwards), and fadsl has no "
    "native decode reference: the figures above are the model's alone."
)
NO_BACKWARD_POINT = (
    "   held-out points for the backward: none. No measured speed of CANN's "
    "FlashAttentionScoreGrad\n   was found, so the native backward "
    "(fadsl/perf/native_bwd.py) is charged from the table\n   fitted on the forward "
    "and checked against nothing measured."
)


def part4(spread: bool) -> None:
    """The backward against CANN's FlashAttentionScoreGrad as coded, with ranges
    (bench/backward_model.py; its own exit status is issue 27's, not gated here)."""
    import backward_model  # bench/backward_model.py (issues 17, 27)

    print("4. the backward, MODELLED: generated fa2_bwd against the native backward")
    print(NO_BACKWARD_POINT)
    backward_model.main([] if spread else ["--no-ranges"])
