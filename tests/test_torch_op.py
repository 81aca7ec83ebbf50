"""fadsl.torch (issue 19 item 2): a kernel as a torch.library operator.

Its CPU implementation is the interpreter, so its outputs equal ``fadsl run``'s on the
same inputs bit for bit; its fake implementation lets torch.compile trace it. Every test
here skips, with the reason, where PyTorch is not installed.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="fadsl.torch needs PyTorch (pip install 'fadsl[torch]')"
)

import fadsl.torch as ft  # noqa: E402
from fadsl.errors import FadslError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _example(name: str) -> object:
    spec = importlib.util.spec_from_file_location(
        f"torch_op_{name}", ROOT / "examples" / f"{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fa2() -> object:
    return ft.op(_example("fa2").fa2)


@pytest.fixture(scope="module")
def causal() -> object:
    return ft.op(_example("causal").kernel)


def _fadsl_run(
    tmp: Path, example: str, shape: str, inputs: dict, sets: list[str]
) -> dict:
    folder = tmp / "in"
    folder.mkdir()
    for name, t in inputs.items():
        t.numpy().tofile(folder / f"{name}.bin")
    cmd = [
        sys.executable,
        "-m",
        "fadsl",
        "run",
        str(ROOT / "examples" / f"{example}.py"),
    ]
    cmd += ["--shape", shape, "--inputs", str(folder), "-o", str(tmp / "out")]
    cmd += [a for s in sets for a in ("--set", s)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return {p.stem: p for p in (tmp / "out").glob("*.bin")}


def _inputs(n_q: int, n_kv: int, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    shapes = {"q": (1, 2, n_q, 128), "k": (1, 2, n_kv, 128), "v": (1, 2, n_kv, 128)}
    return {
        name: torch.randn(s, generator=g, dtype=torch.float32).to(torch.float16)
        for name, s in shapes.items()
    }


def test_forward_equals_fadsl_run_on_the_same_inputs(
    fa2: object, tmp_path: Path
) -> None:
    x = _inputs(130, 200, 0)
    got = fa2(x["q"], x["k"], x["v"], scale=0.07)
    files = _fadsl_run(
        tmp_path, "fa2", "B=1,N=2,Sq=130,Skv=200,D=128", x, ["scale=0.07"]
    )
    want = np.fromfile(files["o"], dtype=np.float16).reshape(got.shape)
    assert got.dtype == torch.float16
    assert np.array_equal(got.numpy(), want)


def test_an_attention_variant_returns_every_output_as_fadsl_run(
    causal: object, tmp_path: Path
) -> None:
    x = _inputs(96, 160, 1)
    o, lse = causal(x["q"], x["k"], x["v"])
    shape = "B=1,N=2,Nkv=2,Sq=96,Skv=160,D=128"
    files = _fadsl_run(tmp_path, "causal", shape, x, [])
    assert np.array_equal(
        o.numpy(), np.fromfile(files["o"], np.float16).reshape(o.shape)
    )
    assert lse.dtype == torch.float32 and lse.shape == (1, 2, 96)
    assert np.array_equal(
        lse.numpy(), np.fromfile(files["lse"], np.float32).reshape(lse.shape)
    )


def test_torch_compile_of_a_function_calling_the_op_runs(fa2: object) -> None:
    x = _inputs(64, 64, 2)

    def block(q: object, k: object, v: object) -> object:
        return fa2(q * 0.5, k, v).float() * 2

    compiled = torch.compile(block, fullgraph=True)
    assert torch.equal(compiled(x["q"], x["k"], x["v"]), block(x["q"], x["k"], x["v"]))


def test_the_fake_implementation_gives_the_declared_shapes(causal: object) -> None:
    q = torch.empty(2, 4, 33, 128, dtype=torch.float16, device="meta")
    kv = torch.empty(2, 4, 70, 128, dtype=torch.float16, device="meta")
    o, lse = causal(q, kv, kv)
    assert o.shape == (2, 4, 33, 128) and o.device.type == "meta"
    assert lse.shape == (2, 4, 33) and lse.dtype == torch.float32


def test_shapes_the_kernel_cannot_read_are_a_fadsl_error(fa2: object) -> None:
    q = torch.empty(1, 2, 64, 128, dtype=torch.float16, device="meta")
    with pytest.raises(FadslError, match="shape symbols"):
        fa2(q, q[:, :, :, :64], q)


def test_one_name_one_kernel(fa2: object) -> None:
    import fadsl as fd

    assert ft.op(fa2.kernel) is fa2
    other = fd.attention(name="fa2")
    with pytest.raises(FadslError, match="already registered"):
        ft.op(other)


def _reference_grads(q: object, k: object, v: object, dtype: object) -> list:
    """dq, dk, dv of sum(o**2) by PyTorch's autograd of plain attention in ``dtype``."""
    x = [t.detach().to(dtype).requires_grad_() for t in (q, k, v)]
    s = x[0] @ x[1].transpose(-1, -2) * q.shape[-1] ** -0.5
    (s.softmax(-1) @ x[2]).square().sum().backward()
    return [t.grad.double().numpy() for t in x]


def test_gradients_with_the_backward_kernel_pass_the_tolerance_rule() -> None:
    """Autograd through fd.attention_backward, each gradient checked by the rule of
    fadsl.numerics against float64 autograd (same precision: fp32 autograd)."""
    import fadsl as fd
    from fadsl.ir.types import DType
    from fadsl.numerics import compare

    backward = getattr(fd, "attention_backward", None)
    if backward is None:
        pytest.skip("no backward kernels on main yet (fd.attention_backward)")
    fwd = fd.attention(name="torch_grad_fwd", return_lse=True, dtype="fp32")
    op = ft.op(fwd, backward(name="torch_grad_bwd", dtype="fp32"))
    g = torch.Generator().manual_seed(3)
    shapes = [(1, 2, 24, 32), (1, 2, 40, 32), (1, 2, 40, 32)]
    q, k, v = (
        torch.randn(s, generator=g, dtype=torch.float32).requires_grad_()
        for s in shapes
    )
    o, _ = op(q, k, v)
    o.square().sum().backward()
    ref = _reference_grads(q, k, v, torch.float64)
    same = _reference_grads(q, k, v, torch.float32)
    for name, got, r, s in zip(("dq", "dk", "dv"), (q, k, v), ref, same):
        verdict = compare(name, got.grad.numpy(), r, s, DType.F32)
        assert verdict.passed, verdict.line()


def test_the_readme_example_runs() -> None:
    """README.md's fadsl.torch block (marked run-by this file) runs as written."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    mark = "<!-- run-by: tests/test_torch_op.py -->"
    block = text[text.index(mark) :].split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict = {}
    exec(compile(block, "README.md", "exec"), scope)  # noqa: S102 (our own README)
    assert scope["o"].shape == (1, 2, 128, 128) and scope["lse"].shape == (1, 2, 128)
    assert torch.equal(scope["o"], scope["o2"])


def test_a_mistaken_call_is_a_fadsl_error_at_the_callers_line(fa2: object) -> None:
    """Each mistake is caught before torch's argument parser or the interpreter, and
    the message points at this file's call, not into torch or fadsl."""
    q = torch.zeros(1, 2, 64, 128, dtype=torch.float16)
    calls = {
        "takes 3 tensors": lambda: fa2(q, q),
        "not a torch.Tensor": lambda: fa2(q.numpy(), q, q),
        "no scalar `block_q`": lambda: fa2(q, q, q, block_q=64),
        "expected a number": lambda: fa2(q, q, q, scale="x"),
        "is float32": lambda: fa2(q, q, q.float()),
        "different devices": lambda: fa2(q, q, q.to("meta")),
        "shape symbols": lambda: fa2(q[0], q, q),
    }
    for message, call in calls.items():
        with pytest.raises(FadslError, match=message) as info:
            call()
        assert info.value.loc is not None and info.value.loc.file == __file__


def test_a_mistaken_registration_is_a_fadsl_error_at_the_callers_line() -> None:
    import fadsl as fd

    calls = {
        "no dtype fadsl knows": lambda: ft.op(fd.attention(name="r1"), dtype="fp64"),
        "no constant or scalar `blok_q`": lambda: ft.op(
            fd.attention(name="r2"), consts={"blok_q": 64}
        ),
        "expected a kernel": lambda: ft.op(len),
    }
    for message, call in calls.items():
        with pytest.raises(FadslError, match=message) as info:
            call()
        assert info.value.loc is not None and info.value.loc.file == __file__


def test_backward_without_a_backward_kernel_is_an_error_not_a_none_grad() -> None:
    """Issue 28: an operator registered without a backward kernel used to record no
    autograd node, so `.backward()` left `q.grad` None with only PyTorch's warning.
    Now `.backward()` raises a FadslError at the caller's line naming the fix, and
    attaching the backward later makes the same operator differentiable."""
    import fadsl as fd

    fwd = fd.attention(name="torch_no_bwd", return_lse=True, dtype="fp32")
    op = ft.op(fwd)
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(1, 2, 16, 32, generator=g) for _ in range(3))
    q.requires_grad_()
    o, _ = op(q, k, v)
    assert o.requires_grad
    with pytest.raises(FadslError, match="without a backward kernel") as info:
        o.sum().backward()
    assert info.value.loc.file == __file__
    assert "backward=fd.attention_backward" in info.value.render()
    assert q.grad is None
    ft.op(fwd, fd.attention_backward(name="torch_no_bwd_bwd", dtype="fp32"))
    o, _ = op(q, k, v)
    o.sum().backward()
    assert q.grad is not None and q.grad.shape == q.shape
