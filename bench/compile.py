"""Compile speed: cold ``fadsl compile examples/fa2.py`` (a new process each time).

Runs alternately, in one run: the compile with fadsl's on-disk cache warm (compiled
Jinja templates and clang-format output, fadsl/io/cache.py; warmed by one untimed run),
the compile with the cache off (FADSL_NO_CACHE=1: every template compiled and
clang-format run), and two floors: ``python -c pass`` and ``python -c "import sympy"``
(the IR's expressions are sympy, so every command that reads a kernel pays for it).
Prints median wall and CPU times. Target (issue 6): median <= 1.0 s.

Python writes bytecode (.pyc) as in a normal install; ``--no-pyc`` sets
PYTHONDONTWRITEBYTECODE=1 for the children (then every fadsl module is compiled from
source at each start).

    python3 bench/compile.py [--rounds 9] [--no-pyc]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from timing import Samples, footer, header, timed

KERNEL = "examples/fa2.py"


def environments(tmp: str, no_pyc: bool) -> tuple[dict[str, str], dict[str, str]]:
    base = dict(os.environ)
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    if no_pyc:
        base["PYTHONDONTWRITEBYTECODE"] = "1"
    warm = dict(base, FADSL_CACHE_DIR=os.path.join(tmp, "cache"))
    cold = dict(base, FADSL_NO_CACHE="1")
    return warm, cold


def measure(rounds: int, tmp: str, no_pyc: bool) -> list[Samples]:
    warm, cold = environments(tmp, no_pyc)
    out = os.path.join(tmp, "project")
    compile_cmd = [
        sys.executable,
        "-m",
        "fadsl",
        "compile",
        KERNEL,
        "--quiet",
        "-o",
        out,
    ]
    runs = [
        (Samples("fadsl compile, cache warm"), compile_cmd, warm),
        (Samples("fadsl compile, FADSL_NO_CACHE=1"), compile_cmd, cold),
        (Samples("python -c pass"), [sys.executable, "-c", "pass"], warm),
        (
            Samples("python -c 'import sympy'"),
            [sys.executable, "-c", "import sympy"],
            warm,
        ),
    ]
    timed(compile_cmd, Samples("warm-up"), env=warm)
    for r in range(rounds):
        for samples, cmd, env in runs if r % 2 == 0 else runs[::-1]:
            timed(cmd, samples, env=env)
    return [s for s, _, _ in runs]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--no-pyc", action="store_true")
    args = parser.parse_args()
    pyc = "off (PYTHONDONTWRITEBYTECODE=1)" if args.no_pyc else "on"
    header(
        f"compile: fadsl compile {KERNEL}, {args.rounds} alternating rounds, "
        f"Python bytecode caching {pyc}"
    )
    with tempfile.TemporaryDirectory(prefix="fadsl-bench-") as tmp:
        results = measure(args.rounds, tmp, args.no_pyc)
    for s in results:
        print("   " + s.line())
    best = results[0]
    print(
        f"   COMPILE median wall {best.wall_median:.3f} s with the cache warm, "
        f"{results[1].wall_median:.3f} s without it (target <= 1.0 s)"
    )
    footer()
    return 0


if __name__ == "__main__":
    sys.exit(main())
