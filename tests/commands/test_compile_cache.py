"""``fadsl compile`` answers a repeated compile from its cache (fadsl/io/compile_cache.py)
without lowering (so without sympy), and a change to anything the kernel file used --
the file, a module it imports, a file it reads -- is compiled again."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import sys
from fadsl.cli import main
status = main(sys.argv[1:])
print("sympy imported:", "sympy" in sys.modules)
sys.exit(status)
"""


def _compile(kernel: Path, out: Path, cache: Path, *extra: str) -> tuple[bool, str]:
    """(whether the compile lowered the kernel, i.e. imported sympy; its stdout)."""
    env = dict(os.environ, FADSL_CACHE_DIR=str(cache))
    env.pop("FADSL_NO_CACHE", None)
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, "compile", str(kernel), "-o", str(out), *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    lowered = "sympy imported: True" in proc.stdout
    return lowered, proc.stdout.replace("sympy imported: True", "").replace(
        "sympy imported: False", ""
    )


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _kernel(tmp: Path, header: str) -> Path:
    """examples/fa2.py with block_q's default taken from BLOCK, which ``header`` sets."""
    text = (ROOT / "examples" / "fa2.py").read_text()
    text = text.replace("import fadsl as fd\n", "import fadsl as fd\n" + header, 1)
    assert "    block_q: int = 128,\n" in text
    text = text.replace("    block_q: int = 128,\n", "    block_q: int = BLOCK,\n")
    path = tmp / "kern.py"
    path.write_text(text)
    return path


def test_a_repeated_compile_comes_from_the_cache(tmp_path: Path) -> None:
    kernel, cache = ROOT / "examples" / "fa2.py", tmp_path / "cache"
    first = _compile(kernel, tmp_path / "p", cache)
    again = _compile(kernel, tmp_path / "p", cache)
    quiet = _compile(kernel, tmp_path / "p", cache, "--quiet")
    assert first[0] and not again[0] and not quiet[0]
    assert first[1] == again[1] and "fits on ascend910b1" in again[1]
    assert quiet[1].strip() == f"wrote 25 files to {tmp_path / 'p'}/"
    other = _compile(kernel, tmp_path / "p", cache, "--set", "block_kv=256")
    assert other[0]  # another constant is another compile


def test_a_changed_module_of_the_kernel_is_compiled_again(tmp_path: Path) -> None:
    kernel = _kernel(tmp_path, "from kern_helper import BLOCK\n")
    helper, cache, out = tmp_path / "kern_helper.py", tmp_path / "cache", tmp_path / "o"
    helper.write_text("BLOCK = 128\n")
    assert _compile(kernel, out, cache)[0]
    wide = _files(out)
    assert not _compile(kernel, out, cache)[0]
    helper.write_text("BLOCK = 64\n")
    assert _compile(kernel, out, cache)[0]
    assert _files(out) != wide and b"block_q=64" in b"".join(_files(out).values())


def test_a_changed_file_the_kernel_reads_is_compiled_again(tmp_path: Path) -> None:
    header = (
        "import os\n"
        "with open(os.path.join(os.path.dirname(__file__), 'block.txt')) as f:\n"
        "    BLOCK = int(f.read())\n"
    )
    kernel = _kernel(tmp_path, header)
    data, cache, out = tmp_path / "block.txt", tmp_path / "cache", tmp_path / "o"
    data.write_text("128")
    assert _compile(kernel, out, cache)[0]
    assert not _compile(kernel, out, cache)[0]
    data.write_text("64")
    assert _compile(kernel, out, cache)[0]
    assert b"block_q=64" in b"".join(_files(out).values())
    kernel.write_text(kernel.read_text() + "\n# an edit\n")
    assert _compile(kernel, out, cache)[0]


def test_what_building_printed_is_printed_again(tmp_path: Path) -> None:
    """A ``print`` in a kernel's body runs while the kernel is read: a compile from
    the cache prints what that compile printed."""
    kernel = _kernel(tmp_path, "BLOCK = 64\n")
    text = kernel.read_text()
    at = "    B, N, Sq, D = q.shape\n"
    kernel.write_text(text.replace(at, at + '    print("reading fa2")\n', 1))
    cache, out = tmp_path / "cache", tmp_path / "o"
    first = _compile(kernel, out, cache)
    again = _compile(kernel, out, cache)
    assert first[0] and not again[0]
    assert "reading fa2" in first[1] and first[1] == again[1]
