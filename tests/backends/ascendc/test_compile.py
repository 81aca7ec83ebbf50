"""fadsl compile: every example's checked-in generated/<kernel>/ equals a fresh compile;
output is deterministic."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FA2 = ROOT / "examples" / "fa2.py"
EXAMPLES = sorted(
    p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("test_")
)  # examples/test_*.py are the examples' pytest tests, not kernel files


def _compile(out: Path, *extra: str, env: dict | None = None, src: Path = FA2) -> None:
    cmd = [
        sys.executable,
        "-m",
        "fadsl",
        "compile",
        str(src),
        "-o",
        str(out),
        "--quiet",
        *extra,
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr


def _files(folder: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            out[str(path.relative_to(folder))] = path.read_bytes()
    return out


def _kernels(folder: Path) -> dict[str, Path]:
    """kernel name -> its project folder in a compile output (one or several kernels)."""
    found = {p.name[: -len("_kernel.cpp")]: folder for p in folder.glob("*_kernel.cpp")}
    if found:
        return found
    return {sub.name: sub for sub in sorted(folder.iterdir()) if sub.is_dir()}


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_checked_in_snapshot_matches_a_fresh_compile(example: Path) -> None:
    # Compiled beside generated/ so the relative source path in gen_data.py is the same.
    out = ROOT / "generated" / f".test-fresh-{example.stem}"
    try:
        _compile(out, src=example)
        fresh = {name: _files(folder) for name, folder in _kernels(out).items()}
    finally:
        subprocess.run(["rm", "-rf", str(out)])
    assert fresh, f"{example.name} compiled to nothing"
    for name, files in fresh.items():
        kept = _files(ROOT / "generated" / name)
        stale = sorted(k for k in set(files) | set(kept) if files.get(k) != kept.get(k))
        assert not stale, (
            f"generated/{name} differs from a fresh compile in {stale}; run "
            f"`fadsl compile examples/{example.name}` and review the diff"
        )


def test_output_is_identical_across_runs_and_hash_seeds(tmp_path: Path) -> None:
    outs = []
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = tmp_path / f"seed{seed}"
        _compile(out, "--set", "causal=true", "--dtype", "bf16", env=env)
        outs.append(_files(out))
    assert outs[0] == outs[1]


@pytest.mark.smoke
def test_every_statement_group_names_a_source_line() -> None:
    kernel = (ROOT / "generated" / "fa2" / "fa2_kernel.cpp").read_text()
    assert "// fa2.py:" in kernel
    body = kernel[kernel.index("__aicore__ inline void Process()") :]
    calls = [ln for ln in body.splitlines() if "AscendC::" in ln and "(" in ln]
    assert calls, "no calls found"


# SetFlag / WaitFlag with an event ID written into the code (EVENT_ID1, 2, ...).
FIXED_EVENT_ID = re.compile(r"(?:Set|Wait)Flag<[^>]*>\(\s*(?:EVENT_ID\d|\d+)\s*\)")


def test_no_hard_coded_event_ids_in_generated_code() -> None:
    """Regression (issue 12): inside the TPipe/TQue paradigm the queues take event IDs from the
    TPipe's pool, so an ID the kernel picks itself can collide with one a freed buffer holds (fa1
    set V_MTE2 ID 1 twice). Every SetFlag/WaitFlag in generated code must use a pool ID.
    """
    found = []
    for path in sorted((ROOT / "generated").rglob("*")):
        if path.suffix in (".cpp", ".h") and path.is_file():
            for no, line in enumerate(path.read_text().splitlines(), 1):
                if FIXED_EVENT_ID.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{no}: {line.strip()}")
    assert not found, "hard-coded event IDs:\n" + "\n".join(found[:20])


def test_entry_takes_no_sync_address_the_build_flow_adds_it() -> None:
    """Regression (issue 12, defect 13): the entry took an extra `GM_ADDR ffts` and called
    SetSyncBaseAddr, although for a MIX kernel CANN's ascendc_library stub already adds that
    parameter and sets the address (extract_host_stub.py), as CANN's own FA kernel relies on.
    """
    for kernel in sorted((ROOT / "generated").glob("*/*_kernel.cpp")):
        text = kernel.read_text()
        entry = text[text.index('extern "C" __global__ __aicore__ void') :]
        signature = entry[: entry.index(")")]
        assert "ffts" not in signature, f"{kernel.name}: {signature}"
        assert "SetSyncBaseAddr" not in text, kernel.name
        main = (kernel.parent / "main.cpp").read_text()
        assert "ffts" not in main and "aclrtGetHardwareSyncAddr" not in main


def test_generated_python_scripts_are_black_formatted() -> None:
    black = pytest.importorskip("black")
    for name in ("gen_data.py", "verify_result.py"):
        text = (ROOT / "generated" / "fa2" / "scripts" / name).read_text()
        assert black.format_str(text, mode=black.Mode()) == text, name


def test_coupled_chip_is_refused_clearly(tmp_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "fadsl",
        "compile",
        str(FA2),
        "--target",
        "ascend910a",
        "-o",
        str(tmp_path / "x"),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1
    assert "code generation for ascend910a is not supported yet" in proc.stderr
    assert not (tmp_path / "x").exists()
