"""Long fuzzing run, not part of the test suite: python3 scripts/fuzz.py [--examples N].

Runs every property of tests/fuzz/fuzz_properties.py with a fresh seed (printed, and
reusable with --seed), sharing ``--examples`` (default 10,000) between them in the
proportions CI uses. Unlike a test it does not stop at the first failure: it counts
every example, collects the failures (one of each kind, with the input that caused
it) and prints them at the end. Exit status 1 if anything failed.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests", "fuzz")]  # fadsl from this checkout

from fuzz_properties import PROPERTIES, Property, Workspace  # noqa: E402
from fuzzkit import FuzzFailure  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402


@dataclass
class Tally:
    """Examples run and failures seen for one property."""

    name: str
    examples: int = 0
    failures: dict[str, str] = field(default_factory=dict)
    """First line of each distinct failure -> its full report."""
    count: int = 0
    seconds: float = 0.0

    def record(self, report: str) -> None:
        self.count += 1
        self.failures.setdefault(_kind(report), report)


def run_property(prop: Property, ws: Workspace, examples: int, rng_seed: int) -> Tally:
    tally = Tally(prop.name)

    @seed(rng_seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(example=prop.strategy(ws))
    def one(example: Any) -> None:
        tally.examples += 1
        try:
            prop.check(ws, example)
        except FuzzFailure as exc:
            tally.record(str(exc))
        except Exception:  # noqa: BLE001 - the property itself broke: report, go on
            tally.record(f"{example!r}\n{traceback.format_exc()}")

    t0 = time.perf_counter()
    one()
    tally.seconds = time.perf_counter() - t0
    return tally


def _kind(report: str) -> str:
    """A short key grouping failures of the same kind: the error's headline."""
    lines = [ln.strip() for ln in report.strip().splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("fadsl: internal error:") or ln.startswith("hang:"):
            return ln[:160]
    errors = [
        ln for ln in lines if "Error" in ln.split(":")[0] or ln.startswith("fadsl: ")
    ]
    return (errors[-1] if errors else lines[-1] if lines else "?")[:160]


def shares(total: int, props: tuple[Property, ...] = PROPERTIES) -> list[int]:
    """At least ``total`` examples, split in CI's proportions (rounded up)."""
    ci = sum(p.ci_examples for p in props)
    return [max(1, math.ceil(total * p.ci_examples / ci)) for p in props]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--examples", type=int, default=10_000, help="total (default 10000)"
    )
    parser.add_argument("--seed", type=int, default=None, help="seed (default: random)")
    parser.add_argument(
        "--only",
        help="run only the properties whose name contains this (they share --examples)",
    )
    args = parser.parse_args(argv)
    rng_seed = args.seed if args.seed is not None else random.randrange(2**32)
    print(f"fuzzing with seed {rng_seed}: {args.examples} examples", flush=True)
    tallies = []
    with tempfile.TemporaryDirectory(prefix="fadsl-fuzz-") as root:
        ws = Workspace(root)
        chosen = tuple(p for p in PROPERTIES if not args.only or args.only in p.name)
        for prop, n in zip(chosen, shares(args.examples, chosen)):
            tally = run_property(prop, ws, n, rng_seed)
            tallies.append(tally)
            print(
                f"  {tally.examples:6d} examples  {tally.count:4d} failures  "
                f"{tally.seconds:7.1f} s  {prop.name}",
                flush=True,
            )
            if prop.stats:
                figures = ", ".join(f"{v} {k}" for k, v in prop.stats.items())
                print(f"{'':10s}{figures}", flush=True)
    return report(tallies)


def report(tallies: list[Tally]) -> int:
    total = sum(t.examples for t in tallies)
    failed = sum(t.count for t in tallies)
    print(f"{total} examples, {failed} failures")
    for t in tallies:
        for key, full in t.failures.items():
            print(f"\n=== {t.name}: {key}\n{full}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
