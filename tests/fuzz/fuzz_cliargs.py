"""Random command lines: --shape / --set / --dtype / --target strings and combinations.

``command_lines(paths)`` draws a command, a kernel file (the FA2 example, an IR
sample, a missing file, a folder, an empty or non-kernel file) and a subset of the
options that command takes, each with a plausible, malformed or hostile value.
Values stay small enough that a well-formed ``run`` finishes in well under a second.
``timeline`` draws to ``-o PICTURE`` (a file). ``sim`` is left out (a well-formed one
builds C++ for a minute); its options are the ones ``run`` shares, and its own checks
have tests of their own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
FA2 = str(ROOT / "examples" / "fa2.py")
SAMPLE = str(ROOT / "tests" / "ir_samples" / "masks.fir")

SHAPE_NAMES = ("B", "N", "Nkv", "Sq", "Skv", "D", "b", "X", "", " B", "Sq ", "B.x")
SET_NAMES = ("block_q", "block_kv", "causal", "stages", "scale", "nope", "", "1x")
VALUES = (
    "1",
    "2",
    "16",
    "17",
    "32",
    "0",
    "-1",
    "-16",
    "",
    " 4 ",
    "1e3",
    "1.5",
    "abc",
    "true",
    "False",
    "none",
    "nan",
    "inf",
    "-inf",
    "99999999999999999999",
    "\u0661",
    "1_6",
    "0x10",
    "16,",
    "=",
    "D**-0.5",
    "cdiv(D,2)",
    "'16'",
)
DTYPES = (
    "fp16",
    "bf16",
    "fp32",
    "f16",
    "f32",
    "float16",
    "fp8",
    "int32",
    "",
    "FP16",
    "i1",
    "bool",
    "bf16 ",
)
TARGETS = (
    "ascend910b1",
    "ascend910b4",
    "ascend910_9392",
    "ascend910a",
    "ascend310p3",
    "ascend910B1",
    "nope",
    "",
    "../../etc/passwd",
    "ascend910b1\n",
    "a" * 300,
)
PASSES = ("infer_types", "pipeline", "plan_buffers", "check_resources", "nope", "")
COMMANDS = (
    "run",
    "run",
    "run",
    "check",
    "check",
    "ir",
    "ir",
    "compile",
    "tune",
    "verify",
    "timeline",
)


def _assignments(names: tuple[str, ...]) -> st.SearchStrategy[str]:
    item = st.tuples(
        st.sampled_from(names),
        st.sampled_from(("=", "=", ":", "==", " = ")),
        st.sampled_from(VALUES),
    ).map("".join)
    joined = st.tuples(
        st.lists(item, max_size=7), st.sampled_from((",", ",", ";", " ", ",,"))
    ).map(lambda t: t[1].join(t[0]))
    return st.one_of(joined, st.text(max_size=40))


def shapes() -> st.SearchStrategy[str]:
    """--shape values: mostly NAME=VALUE lists, some arbitrary text."""
    good = st.just("B=1,N=2,Sq=20,Skv=24,D=16")
    return st.one_of(good, _assignments(SHAPE_NAMES))


def sets() -> st.SearchStrategy[str]:
    return _assignments(SET_NAMES)


def _text_or(choices: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(choices), st.text(max_size=20))


def prepare(workdir: str) -> dict[str, str]:
    """Files the command lines may name, created in ``workdir``."""
    paths = {
        "fa2": FA2,
        "fir": SAMPLE,
        "missing": os.path.join(workdir, "missing.py"),
        "folder": os.path.join(workdir, "folder"),
        "empty": os.path.join(workdir, "empty.py"),
        "text": os.path.join(workdir, "notes.txt"),
        "bad_target": os.path.join(workdir, "chip.json"),
        "a_file": os.path.join(workdir, "a_file"),
        "inputs": os.path.join(workdir, "inputs"),
    }
    os.makedirs(paths["folder"], exist_ok=True)
    os.makedirs(paths["inputs"], exist_ok=True)
    Path(paths["empty"]).write_text("x = 1\n")
    Path(paths["text"]).write_text("not a kernel\n")
    Path(paths["a_file"]).write_text("occupied\n")
    Path(paths["bad_target"]).write_text(json.dumps({"name": "mychip", "ub_bytes": -1}))
    Path(paths["inputs"], "q.bin").write_bytes(b"\0" * 10)
    return paths


def _option(name: str, paths: dict[str, str]) -> st.SearchStrategy[list[str]]:
    own = sorted(v for k, v in paths.items() if k not in ("fa2", "fir"))
    files = st.sampled_from(
        own + ["out", "out/sub", ""]
    )  # never the repository's files
    values: dict[str, st.SearchStrategy[str]] = {
        "--shape": shapes(),
        "--set": sets(),
        "--dtype": _text_or(DTYPES),
        "--target": _text_or(TARGETS),
        "--target-file": files,
        "-o": files,
        "--inputs": files,
        "--kernel": _text_or(("fa2", "masks", "nope", "../x")),
        "--after": _text_or(PASSES),
        "--seed": _text_or(("0", "-1", "1e9", "x")),
        "--block-dim": _text_or(("1", "0", "-3", "4000")),
        "--top": _text_or(("1", "0")),
        "--iterations": _text_or(("1", "0", "-2", "100000")),
        "--picture": st.sampled_from(
            ("t.svg", "t.png", "t.pdf", "folder", "nope/t.svg")
        ),
    }
    if name not in values:  # a flag without a value
        return st.just([name])
    flag = "-o" if name == "--picture" else name  # timeline's -o names a picture file
    return values[name].map(lambda v: [flag, v])


OPTIONS: dict[str, tuple[str, ...]] = {
    "run": (
        "--shape",
        "--set",
        "--dtype",
        "--inputs",
        "-o",
        "--seed",
        "--kernel",
        "--no-check",
    ),
    "check": (
        "--shape",
        "--set",
        "--dtype",
        "--target",
        "--target-file",
        "--json",
        "--block-dim",
        "--kernel",
    ),
    "ir": ("--set", "--dtype", "--after", "--target", "--kernel"),
    "compile": (
        "--set",
        "--dtype",
        "--target",
        "-o",
        "--quiet",
        "--skip-resource-proof",
        "--kernel",
    ),
    "tune": ("--shape", "--set", "--target", "--top", "--json"),
    "timeline": ("--shape", "--set", "--target", "--iterations", "--picture"),
    "verify": ("--dtype",),
}


@st.composite
def command_lines(draw: Callable, paths: dict[str, str]) -> list[str]:  # type: ignore[type-arg]
    """One argv for ``fadsl``: a command, its positional files and some options."""
    cmd = draw(st.sampled_from(COMMANDS))
    keys = ("fa2", "fa2", "fa2", "fir", "missing", "folder", "empty", "text")
    if cmd == "verify":
        argv = [
            cmd,
            paths[draw(st.sampled_from(keys))],
            paths[draw(st.sampled_from(keys))],
        ]
    else:
        argv = [cmd, paths[draw(st.sampled_from(keys))]]
    if cmd in ("run", "check", "tune", "timeline"):
        argv += ["--shape", draw(shapes())]
    if cmd == "run":
        argv += ["-o", draw(st.sampled_from(("out", paths["a_file"], "out/sub/deep")))]
    if cmd == "compile":
        argv += ["-o", "out"]
    names = draw(st.lists(st.sampled_from(OPTIONS[cmd]), max_size=4))
    for name in names:
        argv += draw(_option(name, paths))
    return argv
