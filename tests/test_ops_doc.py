"""docs/ops.md, the reference of what a kernel author writes with, made from docstrings.

Every name ``fadsl`` exports is either in ``SECTIONS`` (and so on the page, with its
signature and docstring) or in ``ELSEWHERE`` (documented on another page); a new
export in neither fails ``test_every_export_is_on_the_page``, and an edited docstring
fails ``test_docs_ops_md_is_current`` until the page is rendered again with
``python3 -m pytest tests/test_ops_doc.py --update-golden``.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

import fadsl as fd
from fadsl.frontend.ops import Tile, TensorRef
from fadsl.ir.types import DType

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ops.md"

SECTIONS: dict[str, tuple[str, ...]] = {
    "Kernels and their parameters": ("kernel", "In", "Out", "Scratch", "Scalar"),
    "Loops": ("grid", "pipelined", "serial"),
    "Blocks of tensors": ("ds", "pages"),
    "Global memory": ("load", "store", "atomic_add", "load_scalar"),
    "The cube unit": ("dot",),
    "Elementwise (the vector unit)": (
        "exp",
        "exp2",
        "log",
        "log2",
        "tanh",
        "sigmoid",
        "sqrt",
        "floor",
        "abs",
        "maximum",
        "minimum",
        "where",
        "cast",
        "sin",
        "cos",
    ),
    "Row reductions": ("row_max", "row_sum"),
    "Making tiles": ("full", "zeros", "arange", "random_uniform"),
    "Scalar arithmetic": ("cdiv", "floordiv"),
    "Debugging": ("debug_print", "device_assert"),
    "Variants (FlexAttention level)": (
        "attention",
        "attention_backward",
        "tensor",
        "create_block_mask",
        "and_masks",
        "or_masks",
    ),
}
"""The page's sections, in order, and the exported functions in each."""

CONSTANTS = (
    "f16",
    "bf16",
    "f32",
    "i32",
    "i8",
    "bool_",
    "float8_e4m3",
    "float8_e5m2",
    "inf",
)
"""Exported values (no docstring): listed in one table."""

ELSEWHERE: dict[str, str] = {
    "interpret": "docs/api.md",
    "check": "docs/api.md",
    "compile": "docs/api.md",
    "sim": "docs/api.md",
    "verify": "docs/api.md",
    "numerics": "docs/api.md",
    "FadslError": "docs/errors.md",
    "KernelDef": "docs/api.md (what @fd.kernel returns)",
    "__version__": "README.md",
    "shape": "docs/variants.md (shape symbols inside a mod)",
    "BlockMask": "docs/variants.md (what fd.create_block_mask returns)",
}
"""Exports that are not ops, and the page that documents each."""

SHORT = ("attention", "attention_backward")
"""Long docstrings shown up to their Args (docs/variants.md, docs/backward.md have
the rest)."""

HEADER = """\
# Tile ops: the reference

Everything a kernel author writes with, `import fadsl as fd`: each entry is the
function's signature and docstring (this page is made from them by
`tests/test_ops_doc.py`; `python3 -m pytest tests/test_ops_doc.py --update-golden`
renders it again). Start with [tutorial.md](tutorial.md); the Python API that runs
kernels (`fd.interpret`, `fd.check`, `fd.compile`, `fd.sim`) is in [api.md](api.md).

## Shape rules

- Tensor parameters (`fd.In`, `fd.Out`, `fd.Scratch`) live in global memory. Index
  one to name a block: one subscript per dimension, each an integer expression (a
  point: the dimension goes away), `:` (the whole dimension) or `fd.ds(start, size)`
  (a block; positions past the extent are a tail that loads pad and stores skip).
- Tiles are what `fd.load`, `fd.dot` and the elementwise ops return: 1-D or 2-D,
  their sizes expressions of shape symbols and tile constants (`[block_q, D]`).
  Elementwise ops and Python operators (`+ - * / // %`, unary `-`, comparisons
  giving bool masks, `& | ~` on masks) broadcast as numpy does; `x[:, None]` and
  `x[None, :]` make a 1-D tile a column or a row. Operand dtypes must match: cast
  with `fd.cast` (nothing converts silently).
- `fd.dot` runs on the cube unit and accumulates in f32; everything else runs on
  the vector unit. Reductions are per row of a 2-D tile.
- Names rebound inside a loop (`m = m_new`) are loop-carried values; an `if` must be
  decided at compile time (on tile constants, not on tile values).
- Scalars: shape symbols, tile constants, loop variables, `fd.load_scalar` values and
  `fd.Scalar` parameters, combined with `+ - * //`, `fd.cdiv`, `fd.maximum`.

One kernel that uses most of them (`fadsl run ops_tour.py -o out/tour` runs it):

<!-- file: ops_tour.py -->
```python
import fadsl as fd


@fd.kernel(default_shape=dict(B=1, N=2, Sq=64, Skv=80, D=32))
def ops_tour(
    q: fd.In("B", "N", "Sq", "D"),
    k: fd.In("B", "N", "Skv", "D"),
    v: fd.In("B", "N", "Skv", "D"),
    o: fd.Out("B", "N", "Sq", "D"),
    lse: fd.Out("B", "N", "Sq", dtype=fd.f32),
    scale: fd.Scalar = "D ** -0.5",
    block_q: int = 32,
    block_kv: int = 32,
):
    B, N, Sq, D = q.shape
    Skv = k.shape[2]
    for b, h, i in fd.grid(B, N, fd.cdiv(Sq, block_q)):
        rows = fd.ds(i * block_q, block_q)
        qt = fd.load(q[b, h, rows, :], pad=0)
        m = fd.full((block_q,), -fd.inf, fd.f32)
        l = fd.zeros((block_q,), fd.f32)
        acc = fd.zeros((block_q, D), fd.f32)
        for j in fd.pipelined(fd.cdiv(Skv, block_kv), stages=2):
            cols = fd.ds(j * block_kv, block_kv)
            kt = fd.load(k[b, h, cols, :], pad=0)
            vt = fd.load(v[b, h, cols, :], pad=0)
            s = fd.dot(qt, kt, transpose_b=True) * scale
            s = 30.0 * fd.tanh(s / 30.0)  # a softcap
            kv_idx = fd.arange(j * block_kv, block_kv)
            s = fd.where(kv_idx[None, :] < Skv, s, -fd.inf)
            m_new = fd.maximum(m, fd.row_max(s))
            p = fd.exp(s - m_new[:, None])
            alpha = fd.exp(m - m_new)
            l = l * alpha + fd.row_sum(p)
            acc = acc * alpha[:, None] + fd.dot(fd.cast(p, v.dtype), vt)
            m = m_new
        fd.store(o[b, h, rows, :], fd.cast(acc / l[:, None], o.dtype))
        fd.store(lse[b, h, rows], m + fd.log(l))
```

```shell
fadsl run ops_tour.py -o out/tour
```
"""


def _params(fn: Any) -> str:
    """``block, pad=None``: the signature without annotations."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return "..."
    parts: list[str] = []
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not any(x.startswith("*") for x in parts):
            parts.append("*")
        star = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        default = "" if p.default is p.empty else f"={_default(p.default)}"
        parts.append(f"{star}{p.name}{default}")
    return ", ".join(parts)


def _default(value: Any) -> str:
    if isinstance(value, DType):
        return f"fd.{ {'f32': 'f32', 'f16': 'f16', 'bf16': 'bf16'}.get(value.value, value.value)}"
    return repr(value)


def _doc(name: str, obj: Any) -> str:
    text = inspect.getdoc(obj) or ""
    assert text, f"fd.{name} has no docstring"
    if name in SHORT:
        text = text.split("\nArgs:", 1)[0].rstrip()
    return text


def _entry(name: str) -> str:
    obj = getattr(fd, name)
    target = obj.__init__ if inspect.isclass(obj) else obj
    params = _params(target)
    if inspect.isclass(obj):
        params = params.removeprefix("self, ").removeprefix("self")
    return f"### `fd.{name}({params})`\n\n```text\n{_doc(name, obj)}\n```\n"


def _members() -> str:
    """What tiles and tensor parameters offer besides operators."""
    out = ["## Tiles and tensor parameters\n"]
    for cls, what in ((Tile, "a tile"), (TensorRef, "a tensor parameter")):
        out.append(f"`{cls.__name__}`, {what}: {inspect.getdoc(cls)}\n")
        for name, member in vars(cls).items():
            if name.startswith("_"):
                continue
            doc = inspect.getdoc(
                member.fget if isinstance(member, property) else member
            )
            if isinstance(member, property):
                out.append(f"- `.{name}`: {doc or 'the ' + name}")
            elif callable(member):
                out.append(
                    f"- `.{name}({_params(member).removeprefix('self, ')})`: {doc}"
                )
        out.append("")
    return "\n".join(out) + "\n"


def _constants() -> str:
    rows = ["## Dtypes and constants\n", "| name | value |", "|---|---|"]
    for name in CONSTANTS:
        value = getattr(fd, name)
        shown = value.value if isinstance(value, DType) else repr(value)
        rows.append(f"| `fd.{name}` | `{shown}` |")
    return "\n".join(rows) + "\n"


def render() -> str:
    parts = [HEADER]
    index = [
        f"- {title}: " + ", ".join(f"`fd.{n}`" for n in names)
        for title, names in SECTIONS.items()
    ]
    parts.append("## Contents\n\n" + "\n".join(index) + "\n")
    for title, names in SECTIONS.items():
        parts.append(f"## {title}\n")
        parts += [_entry(n) for n in names]
    parts.append(_members())
    parts.append(_constants())
    return "\n".join(parts)


def test_every_export_is_on_the_page() -> None:
    placed = [n for names in SECTIONS.values() for n in names]
    placed += list(CONSTANTS) + list(ELSEWHERE)
    missing = [n for n in fd.__all__ if n not in placed]
    assert not missing, (
        f"exported but not in docs/ops.md: {missing}; add each to SECTIONS in "
        "tests/test_ops_doc.py (or to ELSEWHERE with the page that documents it), "
        "then `python3 -m pytest tests/test_ops_doc.py --update-golden`"
    )
    stale = [n for n in placed if n not in fd.__all__]
    assert not stale, f"on the page but not exported: {stale}"
    assert len(placed) == len(set(placed))


def test_docs_ops_md_is_current(request: pytest.FixtureRequest) -> None:
    text = render()
    if request.config.getoption("--update-golden"):
        DOC.write_text(text, encoding="utf-8")
        return
    assert DOC.exists() and DOC.read_text(encoding="utf-8") == text, (
        "docs/ops.md is out of date with the docstrings: run `python3 -m pytest "
        "tests/test_ops_doc.py --update-golden` and review the diff"
    )
