"""The fuzzed properties, one function each, shared by the tests and scripts/fuzz.py.

Each property takes a Workspace (a scratch folder the commands run in) and one drawn
example, and raises FuzzFailure when fadsl misbehaves. ``PROPERTIES`` lists them with
their strategies and the number of examples CI runs.
"""

from __future__ import annotations

import itertools
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fuzz_cliargs import command_lines, prepare
from fuzz_hostile import (
    file_argv,
    folder_argv,
    hostile_files,
    hostile_folders,
    make_folder,
)
from fuzz_irtext import mutated_ir, random_ir
from fuzz_mods import SHAPE_ARG as MOD_SHAPE
from fuzz_mods import broken_variants, variants
from fuzz_names import STATS as NAME_STATS
from fuzz_names import hostile_names_typecheck, named_programs
from fuzz_programs import SHAPE_ARG, broken_programs, valid_programs
from fuzzkit import FuzzFailure, check_api, check_clean, must, run_cli
from hypothesis import strategies as st

from fadsl.ir.text.parser import parse_kernel
from fadsl.ir.text.printer import print_kernel


class Workspace:
    """A scratch folder: commands run in it and kernel files are written to it."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.paths = prepare(root)
        self._counter = itertools.count()

    def write(self, text: str, suffix: str) -> str:
        path = os.path.join(self.root, f"fuzzed_{next(self._counter)}{suffix}")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def cli(self, argv: list[str]) -> Any:
        return run_cli(argv, self.root)

    def check_clean(self, argv: list[str], text: str) -> None:
        """check_clean of ``fadsl ARGV``; a failure report includes ``text`` (the file)."""
        try:
            check_clean(self.cli(argv))
        except FuzzFailure as exc:
            raise FuzzFailure(f"{exc}\n--- the file:\n{text}") from None


def _program_argv(cmd: str, path: str) -> list[str]:
    if cmd == "run":
        return ["run", path, "--shape", SHAPE_ARG, "-o", "out"]
    if cmd == "check":
        return ["check", path, "--shape", SHAPE_ARG]
    return ["ir", path]


def valid_program_prints_ir(ws: Workspace, src: str) -> None:
    """A valid program's `fadsl ir` succeeds and its IR round-trips through text."""
    out = ws.cli(_program_argv("ir", ws.write(src, ".py")))
    if out.code != 0:
        raise FuzzFailure(f"valid program refused:\n{src}\n{out.stderr}{out.escaped}")
    printed = must(lambda: print_kernel(parse_kernel(out.stdout)), out.stdout)
    if printed != out.stdout:
        raise FuzzFailure(f"printed IR does not round-trip:\n{out.stdout}")


def valid_program_runs(ws: Workspace, example: tuple[str, str]) -> None:
    """A valid program runs in the interpreter; `check` proves it fits, or says cleanly
    that the backend has no instruction form for it (e.g. `&` of masks not feeding
    fd.where)."""
    src, cmd = example
    out = ws.cli(_program_argv(cmd, ws.write(src, ".py")))
    if (
        cmd == "check"
        and out.code == 1
        and re.match(r"fadsl: backend error(\[E\d+\])?:", out.stderr)
    ):
        return
    if out.code != 0:
        raise FuzzFailure(
            f"`{cmd}` failed on a valid program:\n{src}\n{out.stderr}" f"{out.escaped}"
        )


def broken_program_fails_cleanly(
    ws: Workspace, example: tuple[tuple[str, str], str]
) -> None:
    """A program with one mistake ends in a clean error under ir, check or run."""
    (_, src), cmd = example
    ws.check_clean(_program_argv(cmd, ws.write(src, ".py")), src)


def ir_parses_or_fails_cleanly(ws: Workspace, text: str) -> None:
    """parse_kernel returns a kernel that round-trips, or raises a clean FadslError."""
    kernel = check_api(lambda: parse_kernel(text, "fuzz.fir"), f"parse_kernel:\n{text}")
    if kernel is None:
        return
    printed = must(lambda: print_kernel(kernel), f"print_kernel of:\n{text}")
    again = must(lambda: parse_kernel(printed, "printed.fir"), f"reparse:\n{printed}")
    if again != kernel or print_kernel(again) != printed:
        raise FuzzFailure(f"print/parse round trip differs for:\n{text}")


def _small_shape(text: str) -> str:
    """Every shape symbol of the kernel at 20 (a dummy when the text does not parse)."""
    try:
        symbols = parse_kernel(text).shape_syms
    except Exception:  # noqa: BLE001 - the command itself reports the problem
        symbols = ()
    return ",".join(f"{s}=20" for s in symbols) or "N=20"


def ir_file_through_cli(ws: Workspace, example: tuple[str, str]) -> None:
    """A mutated .fir file under run, check or ir --after ends cleanly."""
    text, cmd = example
    path = ws.write(text, ".fir")
    shape = _small_shape(text)
    argv = {
        "run": ["run", path, "--shape", shape, "-o", "out"],
        "check": ["check", path, "--shape", shape],
        "ir": ["ir", path, "--after", "plan_buffers"],
    }[cmd]
    ws.check_clean(argv, text)


def command_line_ends_cleanly(ws: Workspace, argv: list[str]) -> None:
    """Any command line succeeds or ends in a clean error."""
    check_clean(ws.cli(argv))


def _variant_argv(cmd: str, path: str) -> list[str]:
    if cmd == "run":
        return ["run", path, "--shape", MOD_SHAPE, "-o", "out"]
    return ["ir", path]


def valid_variant_runs(ws: Workspace, example: tuple[str, str]) -> None:
    """An fd.attention variant with valid mods builds (ir) and runs in the interpreter."""
    src, cmd = example
    out = ws.cli(_variant_argv(cmd, ws.write(src, ".py")))
    if out.code != 0:
        raise FuzzFailure(
            f"`{cmd}` failed on a valid variant:\n{src}\n{out.stdout}"
            f"{out.stderr}{out.escaped}"
        )


def broken_variant_fails_cleanly(ws: Workspace, example: tuple[str, str]) -> None:
    """A variant with one mistake in its mods or keywords ends in a clean error."""
    src, cmd = example
    ws.check_clean(_variant_argv(cmd, ws.write(src, ".py")), src)


def hostile_file_fails_cleanly(ws: Workspace, example: tuple[str, bytes, str]) -> None:
    """A file of hostile bytes (not UTF-8, NULs, escapes, deep JSON) ends cleanly."""
    kind, data, cmd = example
    n = next(ws._counter)
    if kind == "meta":
        folder = os.path.join(ws.root, f"hostile_run_{n}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "meta.json")
    else:
        suffix = {"fir": ".fir", "py": ".py", "target": ".json"}[kind]
        path = os.path.join(ws.root, f"hostile_{n}{suffix}")
    with open(path, "wb") as f:
        f.write(data)
    ws.check_clean(file_argv(kind, path, cmd), repr(data[:300]))


def hostile_folder_fails_cleanly(
    ws: Workspace, example: tuple[list[tuple[str, str, bytes]], str]
) -> None:
    """A folder of FIFOs, links, deep or huge JSON and random bytes, used as -o,
    --inputs or a verify run folder, ends cleanly and leaves the folder it links to
    untouched."""
    entries, cmd = example
    n = next(ws._counter)
    folder = os.path.join(ws.root, f"hostile_dir_{n}")
    victim = os.path.join(ws.root, f"victim_{n}")
    os.makedirs(victim, exist_ok=True)
    with open(os.path.join(victim, "keep.txt"), "w") as f:
        f.write("keep")
    make_folder(folder, victim, entries)
    ws.check_clean(folder_argv(cmd, folder), repr(entries))
    if not os.path.isfile(os.path.join(victim, "keep.txt")):
        raise FuzzFailure(f"fadsl {cmd} on {entries!r} removed a file outside -o")


@dataclass(frozen=True)
class Property:
    name: str
    strategy: Callable[[Workspace], st.SearchStrategy[Any]]
    check: Callable[[Workspace, Any], None]
    ci_examples: int
    """How many examples the test suite runs (scripts/fuzz.py scales these up)."""
    marks: tuple[str, ...] = ()
    """pytest marks of its test (e.g. cpu_runtime: it runs g++)"""
    stats: Counter[str] | None = None
    """Figures the property counts beyond examples and failures (scripts/fuzz.py)."""


PROPERTIES: tuple[Property, ...] = (
    Property(
        "valid programs: ir round-trips",
        lambda ws: valid_programs(),
        valid_program_prints_ir,
        40,
    ),
    Property(
        "valid programs: run and check succeed",
        lambda ws: st.tuples(valid_programs(), st.sampled_from(("run", "check"))),
        valid_program_runs,
        30,
    ),
    Property(
        "broken programs fail cleanly",
        lambda ws: st.tuples(
            broken_programs(), st.sampled_from(("ir", "check", "run"))
        ),
        broken_program_fails_cleanly,
        200,
    ),
    Property(
        "valid fd.attention variants build and run",
        lambda ws: st.tuples(variants(), st.sampled_from(("ir", "run"))),
        valid_variant_runs,
        30,
    ),
    Property(
        "broken fd.attention variants fail cleanly",
        lambda ws: st.tuples(broken_variants(), st.sampled_from(("ir", "run"))),
        broken_variant_fails_cleanly,
        100,
    ),
    Property(
        "mutated IR parses or fails cleanly",
        lambda ws: mutated_ir(),
        ir_parses_or_fails_cleanly,
        300,
    ),
    Property(
        "random IR fails cleanly",
        lambda ws: random_ir(),
        ir_parses_or_fails_cleanly,
        80,
    ),
    Property(
        "mutated IR files through the CLI",
        lambda ws: st.tuples(
            mutated_ir(huge=False), st.sampled_from(("run", "check", "ir"))
        ),
        ir_file_through_cli,
        100,
    ),
    Property(
        "hostile bytes in files fail cleanly",
        lambda ws: hostile_files(),
        hostile_file_fails_cleanly,
        60,
    ),
    Property(
        "hostile folders fail cleanly",
        lambda ws: hostile_folders(),
        hostile_folder_fails_cleanly,
        60,
    ),
    Property(
        "command lines end cleanly",
        lambda ws: command_lines(ws.paths),
        command_line_ends_cleanly,
        250,
    ),
    Property(
        "hostile names compile and type-check",
        lambda ws: named_programs(),
        hostile_names_typecheck,
        3,
        marks=("cpu_runtime",),
        stats=NAME_STATS,
    ),
)


def by_name(name: str) -> Property:
    return next(p for p in PROPERTIES if p.name == name)
