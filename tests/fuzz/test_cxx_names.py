"""Names that broke the generated C++ (issue 12, defect 3), and the Mangler's rules.

Each program once compiled with exit 0 to C++ that g++ rejects (or, for `main` in a
.fir file, was accepted where the .py path refuses it); each must now type-check
against the CPU runtime, or be refused before anything is written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cxxcheck import compile_kernel, have_gxx, typecheck
from fuzzkit import run_cli, time_limit

from fadsl.backends.ascendc.mangle import Mangler

ROOT = Path(__file__).resolve().parents[2]
SHAPE = "B=1,N=2,Sq=40,Skv=24,D=16"
needs_gxx = pytest.mark.skipif(not have_gxx(), reason="needs g++")

EXTRA = """\
import fadsl as fd

extra = fd.tensor({name!r}, "N", dtype="fp32")


def bias(score, b, h, q_idx, kv_idx):
    return score + extra[h]


kernel = fd.attention(name="named", score_mod=bias)
"""


def _compiles_and_typechecks(tmp_path: Path, text: str, shape: str = SHAPE) -> Path:
    src = tmp_path / "kern.py"
    src.write_text(text, encoding="utf-8")
    out = compile_kernel(src, tmp_path / "out", shape)
    assert out.code == 0, out.stderr + out.escaped
    assert typecheck(tmp_path / "out") is None, typecheck(tmp_path / "out")
    return tmp_path / "out"


@pytest.mark.cpu_runtime
@needs_gxx
@pytest.mark.parametrize("name", ["t", "this", "workspace"])
def test_an_extra_tensor_with_a_runtime_name_typechecks(
    tmp_path: Path, name: str
) -> None:
    out = _compiles_and_typechecks(tmp_path, EXTRA.format(name=name))
    main = (out / "main.cpp").read_text()
    assert f'"/input/{name}.bin"' in main  # the file keeps the user's name


@pytest.mark.cpu_runtime
@needs_gxx
def test_values_s_1_and_s1_get_distinct_cxx_names(tmp_path: Path) -> None:
    fa2 = (ROOT / "examples" / "fa2.py").read_text()
    line = "            s = fd.where(keep, s, -fd.inf)\n"
    assert fa2.count(line) == 1
    text = fa2.replace(
        line, "            s1 = s * 1.0\n" + line.replace("keep, s,", "keep, s1,")
    )
    shape = "B=1,N=2,Sq=256,Skv=256,D=64"
    out = _compiles_and_typechecks(tmp_path, text, shape)
    kernel = (out / "fa2_kernel.cpp").read_text()
    assert "LocalTensor<float> s1 =" in kernel and "LocalTensor<float> s1_ =" in kernel


def test_a_kernel_named_like_the_ascendc_namespace_is_refused(tmp_path: Path) -> None:
    (tmp_path / "kern.py").write_text(
        'import fadsl as fd\nkernel = fd.attention(name="AscendC")\n'
    )
    out = compile_kernel(tmp_path / "kern.py", tmp_path / "out", SHAPE)
    assert out.code == 1
    assert "kernel name 'AscendC' cannot be the symbol" in out.stderr
    assert "kern.py:2" in out.stderr
    assert not (tmp_path / "out").exists()


def test_a_fir_kernel_named_main_is_refused_like_a_py_one(tmp_path: Path) -> None:
    fir = run_cli(["ir", str(ROOT / "examples" / "fa2.py")], str(tmp_path)).stdout
    (tmp_path / "k.fir").write_text(fir.replace("kernel fa2(", "kernel main(", 1))
    py = (ROOT / "examples" / "fa2.py").read_text()
    (tmp_path / "k.py").write_text(
        py.replace('dtype="fp16",', 'dtype="fp16", name="main",')
    )
    for path in ("k.fir", "k.py"):
        out = run_cli(["ir", path], str(tmp_path))
        assert out.code == 1, path
        assert "kernel name 'main' is the entry point" in out.stderr, out.stderr


def test_the_mangler_keeps_common_names_and_separates_clashes() -> None:
    m = Mangler("fa2")
    kernel = ("kernel",)
    assert m.claim("ir", "qt", "qt", kernel) == "qt"
    assert m.claim("ir", "s1", "s1", kernel) == "s1"
    assert m.claim("ir", "s_1", "s1", kernel) == "s1_"
    assert m.claim("ir", "x", "s1", kernel) == "s1_2"
    assert m.claim("ir", "s_1", "ignored", kernel) == "s1_"  # one name per key
    assert m.claim("ir", "this", "this", kernel) == "this_"
    assert m.claim("ir", "mask", "mask", kernel) == "mask_"  # a vector temporary
    assert m.claim("ir", "linux", "linux", kernel) == "linux_"  # a GNU macro
    assert m.claim("ir", "fa2", "fa2", kernel) == "fa2_"  # the kernel symbol
    # a parameter is also a host local: `t` is main()'s tiling there
    forms = ("{}", "{}Gm", "{}Bytes")
    assert m.claim("param", "t", "t", ("kernel", "entry", "host"), forms) == "t_"
    assert m.claim("ir", "t", "t", kernel) == "t"  # no `t` in the kernel's classes
    # a taken name ending in `_` never gets a `__` (C++ reserves those): was a hang
    with time_limit(20):
        param = m.claim("param", "pipe_", "pipe_", ("kernel", "entry", "host"), forms)
        const = m.claim("const", "pipe_", "PIPE_", kernel)  # a macro family, too
    assert (param, const) == ("pipe_2", "PIPE_2")
