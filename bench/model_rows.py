"""What the decode benches share (bench/decode_model.py, mla_model.py, prefill_model.py):
one kernel file modelled at one shape, MODELLED (fadsl/perf/kernel.py; no NPU here),
and a table of rows printed under a header.

``estimate`` is the step each bench repeated: build the kernel as ``fadsl check`` would
(``--set`` constants and ``--shape``), refuse a configuration whose plan does not fit
the chip, and model it at the lengths ``Binding.model_env`` gives.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from fadsl import target as targets  # noqa: E402

TARGET = "ascend910b2"


@dataclass(frozen=True)
class Modelled:
    """One modelled launch: the kernel time and the chip it was modelled on."""

    kt: Any
    """fadsl.perf.kernel's estimate (time_s, tasks, block_dim, post_s, ...)."""
    target: Any

    def hbm_fraction(self, nbytes: float) -> float:
        """``nbytes`` over the modelled time, as a fraction of the chip's HBM rate."""
        return nbytes / self.kt.time_s / self.target.rate("hbm_bytes_per_s")


def estimate(
    file: str, shape: str, sets: Sequence[str] = (), target: str = TARGET
) -> Modelled | None:
    """``file``'s kernel with ``--set sets`` at ``--shape shape``, MODELLED on
    ``target``; None when that configuration does not fit the chip (``fadsl check``'s
    plan at its own sizes)."""
    from fadsl.commands import common
    from fadsl.driver.lower import lower
    from fadsl.perf.kernel import KernelModel

    t = targets.get(target)
    args = argparse.Namespace(
        file=file, kernel=None, sets=list(sets), dtype=None, shape=shape
    )
    binding = common.build(args, target=t)
    env = binding.model_env()
    if not lower(binding, plan=False).check_at(env).ok:
        return None
    return Modelled(KernelModel(binding.kernel, t).estimate(env), t)


def print_table(
    columns: Sequence[tuple[str, int]], rows: Sequence[Sequence[str]], indent: str = ""
) -> None:
    """``rows`` (already formatted cells) right-aligned under ``columns`` (title,
    width)."""
    print(indent + " ".join(f"{title:>{width}}" for title, width in columns))
    for row in rows:
        print(
            indent
            + " ".join(f"{cell:>{width}}" for cell, (_, width) in zip(row, columns))
        )


__all__ = ["Modelled", "TARGET", "estimate", "print_table"]
