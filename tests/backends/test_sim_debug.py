"""``fadsl sim --debug`` / ``fd.sim(debug=True)``: fd.debug_print and fd.device_assert
lowered to AscendC::printf / ascendc_assert (``backends/ascendc/vector_debug.py``)
print the values the interpreter prints, and a failed assert stops the run."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import fadsl as fd
from fadsl.errors import ExecutionError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "errors"))
from catalogue import BASE  # noqa: E402

PRINTING = BASE.replace(
    "            m = m_new\n",
    "            m = m_new\n" '            fd.debug_print("j={} m={}", j, m)\n',
).replace(
    "        fd.store(o[b, h, rows, :]",
    '        fd.device_assert(l < 100, "the row sums stay below 100")\n'
    "        fd.store(o[b, h, rows, :]",
)
SHAPE = dict(B=1, N=1, Sq=128, Skv=128, D=64)
LINE = re.compile(r"^(?:\[AI[VC] Block \d+/\d+\] )?(\S+ \[[^]]*\]) j=(\d+) m=(.*)$")


def _kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    (tmp_path / "dbg_attn.py").write_text(PRINTING)
    monkeypatch.syspath_prepend(str(tmp_path))
    import dbg_attn  # type: ignore[import-not-found]

    return dbg_attn.attn


def _rows(text: str) -> dict[tuple[str, int], np.ndarray]:
    """(line and task, j) -> m, from the interpreter's lines or the device's parts."""
    parts: dict[tuple[str, int], dict[int, list[float]]] = {}
    for line in text.splitlines():
        hit = LINE.match(line)
        if hit is None:
            continue
        key = (hit.group(1), int(hit.group(2)))
        body = hit.group(3)
        start = re.match(r"rows (\d+)-\d+ ", body)
        first = int(start.group(1)) if start else 0
        numbers = re.findall(
            r"[-+0-9.eE]+|nan|inf", body[start.end() if start else 0 :]
        )
        parts.setdefault(key, {})[first] = [float(x) for x in numbers]
    return {
        k: np.concatenate([np.array(v[r]) for r in sorted(v)]) for k, v in parts.items()
    }


def test_sim_debug_prints_what_the_interpreter_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    attn = _kernel(tmp_path, monkeypatch)
    rng = np.random.default_rng(0)
    q, k, v = (
        rng.standard_normal((1, 1, 128, 64)).astype(np.float16) for _ in range(3)
    )
    fd.interpret(attn, q=q, k=k, v=v)
    interp = _rows(capsys.readouterr().out)
    fd.sim(attn, q=q, k=k, v=v, debug=True, progress=False)
    device = _rows(capsys.readouterr().out)
    # 2 tasks (block_q 64) x 2 KV blocks, each task's m split over the two AIVs
    assert len(interp) == 4 and sorted(device) == sorted(interp)
    for key, want in interp.items():
        assert device[key].shape == (64,), key
        np.testing.assert_allclose(device[key], want, rtol=1e-3, err_msg=str(key))
    # without --debug the generated code prints nothing
    fd.sim(attn, q=q, k=k, v=v, progress=False)
    assert _rows(capsys.readouterr().out) == {}
    # the same build stops at the assert when every key scores the same (l = 128)
    zero = np.zeros_like(q)
    with pytest.raises(ExecutionError, match="ascendc_assert"):
        fd.sim(attn, q=zero, k=k, v=v, debug=True, progress=False)
    assert (
        "device_assert failed: the row sums stay below 100" in capsys.readouterr().out
    )


def test_a_mask_is_refused_by_a_debug_build_and_left_out_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """E108: a mask is a bit mask in UB, which the scalar unit does not print; a build
    without debug=True leaves the print out and compiles."""
    source = BASE.replace(
        "            m = m_new\n",
        "            m = m_new\n" '            fd.debug_print("positive {}", m > 0)\n',
    )
    (tmp_path / "dbg_mask.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    import dbg_mask  # type: ignore[import-not-found]

    fd.compile(dbg_mask.attn, out_dir=tmp_path / "plain")
    kernel = (tmp_path / "plain" / "attn_kernel.cpp").read_text()
    assert "AscendC::printf" not in kernel
    with pytest.raises(fd.FadslError) as err:
        fd.compile(dbg_mask.attn, out_dir=tmp_path / "debug", debug=True)
    assert (
        err.value.code == "debug_operand_not_printable" and "mask" in err.value.message
    )
    assert err.value.loc is not None and err.value.loc.file.endswith("dbg_mask.py")
