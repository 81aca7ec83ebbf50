"""Command-line entry point: argument parsing and the error boundary.

Each command lives in ``fadsl.commands.<name>`` with ``add_arguments(parser)`` and
``main(args) -> int``; only the chosen command's module is imported, so ``fadsl
compile`` does not pay for numpy and ``fadsl run`` does not pay for jinja2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from typing import NoReturn

COMMANDS: dict[str, str] = {
    "compile": "generate the Ascend C kernel project (default generated/<kernel>/)",
    "check": "prove that the kernel's on-chip buffers fit the target",
    "tune": "search feasible tile sizes and rank them with the cost model",
    "run": "run the numpy interpreter: golden outputs and error vs float64",
    "verify": "compare outputs against expected outputs by the tolerance rule",
    "sim": "build the generated Ascend C with the CPU runtime, run it, compare",
    "ir": "print the textual IR (optionally after a pass)",
    "timeline": "print and draw the modelled pipeline schedule",
    "explain": "print the error catalogue's entry for a code (fadsl explain E21)",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fadsl",
        description="FlashAttention-family kernels for Ascend NPUs from Python tile programs.",
    )
    parser.add_argument("--version", action="store_true", help="print the version")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        module = _command_module(name)
        if module is not None:
            module.add_arguments(p)
    return parser


def _command_module(name: str):  # type: ignore[no-untyped-def]
    try:
        return importlib.import_module(f"fadsl.commands.{name}_cmd")
    except ModuleNotFoundError as exc:
        if exc.name == f"fadsl.commands.{name}_cmd":
            return None
        raise


def _selected(argv: list[str]) -> str | None:
    for arg in argv:
        if arg in COMMANDS:
            return arg
        if not arg.startswith("-"):
            return None
    return None


def main(argv: list[str] | None = None) -> int:
    """Run ``fadsl ARGV``; the exit status (0 ok, 1 a user error, 2 usage, 70 a bug)."""
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except BrokenPipeError:
        return _stdout_closed()


def console() -> NoReturn:
    """The ``fadsl`` console script and ``python -m fadsl``: ``main``, then a quick exit.

    Everything a command writes is closed (and renamed into place) before ``main``
    returns, so the process ends with ``os._exit`` once stdout and stderr are flushed:
    Python's own teardown would free every object of sympy and numpy one by one, about
    0.1 s of every command here (docs/performance.md). Under a profiler or a tracer
    (cProfile, coverage) the usual exit runs, so that they write their reports.
    """
    code = main()
    if sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = _stdout_closed()
    try:
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        pass
    os._exit(code)


def _main(argv: list[str]) -> int:
    parser = _lazy_parser(argv)
    args = parser.parse_args(argv)
    if args.version:
        from fadsl.version import __version__

        print(f"fadsl {__version__}")
        return 0
    if not args.command:
        parser.print_help()
        return 2
    module = _command_module(args.command)
    if module is None:
        print(
            f"fadsl: `{args.command}` is not available in this build", file=sys.stderr
        )
        return 2
    return _run(module, args)


def _lazy_parser(argv: list[str]) -> argparse.ArgumentParser:
    """Import only the selected command's module when building the parser."""
    chosen = _selected(argv)
    if chosen is None:
        return build_parser()
    parser = argparse.ArgumentParser(prog="fadsl")
    parser.add_argument("--version", action="store_true")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser(chosen, help=COMMANDS[chosen], description=COMMANDS[chosen])
    module = _command_module(chosen)
    if module is not None:
        module.add_arguments(p)
    return parser


def _run(module, args: argparse.Namespace) -> int:  # type: ignore[no-untyped-def]
    from fadsl.errors import ExecutionError, FadslError, InternalError

    try:
        return int(module.main(args) or 0)
    except FadslError as err:
        if os.environ.get("FADSL_DEBUG") == "1":
            traceback.print_exc()
        print(err.render(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fadsl: interrupted; no output was changed", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _stdout_closed()
    except MemoryError:
        err = ExecutionError(
            "out of memory",
            hint="run and sim hold every tensor and tile in memory: "
            "choose a smaller --shape",
        )
        print(err.render(), file=sys.stderr)
        return 1
    except Exception as exc:  # a bug in fadsl: say so, keep the trace for the report
        if os.environ.get("FADSL_DEBUG") == "1":
            raise
        err = InternalError(f"{type(exc).__name__}: {exc}")
        print(err.render(), file=sys.stderr)
        print("(set FADSL_DEBUG=1 for the Python traceback)", file=sys.stderr)
        return 70


def _stdout_closed() -> int:
    """The reader of stdout went away (``fadsl ir k.py | head -1``): stop quietly.

    Later writes (and the flush at exit) go to /dev/null, so Python prints no second
    error; the status is 141 = 128 + SIGPIPE, what a shell shows for such a writer.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a file (tests capture it)
        pass
    return 141
