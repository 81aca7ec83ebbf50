"""The error catalogue: typical user mistakes, how to provoke each, and how to fix it.

Each Mistake is run through the CLI by ``test_error_catalogue.py``, whose golden files
(``tests/golden/test_error_catalogue/``) hold the full rendered messages, and
``docs/errors.md`` is rendered from this list plus those goldens.

Kernel mistakes edit one line of BASE (a small FlashAttention kernel); command-line
mistakes use BASE or ``examples/``. Paths in messages are shown relative to the
folder the command runs in (and to the repository for ``examples/``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

BASE = """\
import fadsl as fd


@fd.kernel(default_shape=dict(B=1, N=2, Sq=64, Skv=64, D=64))
def attn(
    q: fd.In("B", "N", "Sq", "D"),
    k: fd.In("B", "N", "Skv", "D"),
    v: fd.In("B", "N", "Skv", "D"),
    o: fd.Out("B", "N", "Sq", "D"),
    block_q: int = 64,
    block_kv: int = 64,
):
    B, N, Sq, D = q.shape
    Skv = k.shape[2]
    for b, h, i in fd.grid(B, N, fd.cdiv(Sq, block_q)):
        rows = fd.ds(i * block_q, block_q)
        qt = fd.load(q[b, h, rows, :], pad=0)
        m = fd.full((block_q,), -fd.inf, fd.f32)
        l = fd.zeros((block_q,), fd.f32)
        acc = fd.zeros((block_q, D), fd.f32)
        for j in fd.pipelined(fd.cdiv(Skv, block_kv)):
            cols = fd.ds(j * block_kv, block_kv)
            kt = fd.load(k[b, h, cols, :], pad=0)
            vt = fd.load(v[b, h, cols, :], pad=0)
            s = fd.dot(qt, kt, transpose_b=True) * D**-0.5
            s = fd.where(fd.arange(j * block_kv, block_kv)[None, :] < Skv, s, -fd.inf)
            m_new = fd.maximum(m, fd.row_max(s))
            p = fd.exp(s - m_new[:, None])
            alpha = fd.exp(m - m_new)
            l = l * alpha + fd.row_sum(p)
            acc = acc * alpha[:, None] + fd.dot(fd.cast(p, v.dtype), vt)
            m = m_new
        fd.store(o[b, h, rows, :], fd.cast(acc / l[:, None], o.dtype))
"""
RING_FIR = """\
kernel ringed(
    in x: f32[M, K],
    out y: f32[M, K],
) consts(bm = 16) {
  grid (i) in (cdiv(M, bm)) {
    for j in 0 .. cdiv(K, 16) serial(ring = 2) {
      %xt = load() {src = x, index = [bm*i +: bm, 16*j +: 16]} : f32[bm, 16]
      store(%xt) {dst = y, index = [bm*i +: bm, 16*j +: 16]}
    }
  }
}
"""
"""A .fir whose loop asks for a workspace ring it cannot have (``ir_ring_impossible``)."""
DEFER_FIR = RING_FIR.replace("serial(ring = 2)", "serial(defer_update = true)")
"""A .fir whose loop asks for a deferred update it cannot have (``ir_defer_impossible``)."""

SHAPE = "B=1,N=2,Sq=64,Skv=64,D=64"
RUN = ("run", "attn.py", "--shape", SHAPE, "-o", "out")
MOD = """\
import numpy as np

import fadsl as fd


def {name}({params}):
    {body}


kernel = fd.attention(name="modded", {kind}={name})
"""


BF16_META = (
    '{"params": {'
    + ", ".join(
        f'"{n}": {{"kind": "in", "dtype": "bfloat16", "shape": [1, 2, 64, 64], '
        f'"file": "{n}.bin"}}'
        for n in "qkv"
    )
    + "}}\n"
)
"""meta.json of a bf16 run of BASE (its inputs), for ``inputs_dtype_mismatch``."""


GATHER = """\
import fadsl as fd

ids = fd.tensor("ids", "N", dtype="i32")
tab = fd.tensor("tab", "N", dtype="fp32")


def bias(score, b, h, q_idx, kv_idx):
    return score + tab[ids[h]]


kernel = fd.attention(name="gather", score_mod=bias)
"""
"""A mod that indexes one extra tensor with another, for ``index_input_out_of_range``."""


PAGED_SHAPE = "B=2,N=2,Nkv=1,Sq=1,D=64,Pages=4,MaxPages=2"
PAGED_FILES = {
    "decode.py": 'import fadsl as fd\n\nkernel = fd.attention(name="decode", '
    "paged_kv=True, page_size=16)\n",
    "inputs/q.bin": "zeros:512",
    "inputs/k_cache.bin": "zeros:8192",
    "inputs/v_cache.bin": "zeros:8192",
    "inputs/block_table.bin": "i32:0,1,2,3",
    "inputs/seqlens_kv.bin": "i32:20,30",
}
"""A paged decode kernel's inputs (pages of 16 rows), for the ``paged_`` mistakes."""
PREFILL_SHAPE = "B=2,N=2,Nkv=1,Sq=40,D=64,Pages=4,MaxPages=2"
PREFILL_FILES = {
    "prefill.py": 'import fadsl as fd\n\nkernel = fd.attention(name="prefill", '
    'paged_kv=True, page_size=16, layout="TND", causal=True)\n',
    "inputs/q.bin": "zeros:10240",
    "inputs/k_cache.bin": "zeros:8192",
    "inputs/v_cache.bin": "zeros:8192",
    "inputs/block_table.bin": "i32:0,1,2,3",
    "inputs/seqlens_kv.bin": "i32:20,30",
    "inputs/cu_seqlens_q.bin": "i32:0,30,40",
}
"""A chunked prefill's inputs: chunk 0 has 30 rows but its sequence 20 keys."""


def out_meta(shape: list[int], same_error: float | None = None) -> str:
    """meta.json of a run folder holding one fp16 output `o` (and its check)."""
    entry = {"kind": "out", "dtype": "float16", "shape": shape, "file": "o.bin"}
    meta: dict = {"params": {"o": entry}}
    if same_error is not None:
        meta["check"] = {"o": {"same_precision_error": same_error}}
    return json.dumps(meta) + "\n"


@dataclass(frozen=True)
class Mistake:
    """One user mistake: its files, the command that shows it, and the fix."""

    id: str
    title: str
    fix: str
    argv: tuple[str, ...] = ("ir", "attn.py")
    edits: tuple[tuple[str, str], ...] = ()
    """(text of BASE, what the user wrote instead) pairs; the last one is shown."""
    files: dict[str, str] = field(default_factory=dict)
    """Other files to create (name -> text; a name ending in / is a folder)."""
    shown: str = ""
    """What the user wrote, for the docs (default: the edited line, or the command)."""
    script: str = ""
    """Python run as ``golden.py`` beside attn.py instead of a command (an API call)."""
    needs: str = ""
    """A module the script imports that may not be installed (its test then skips)."""

    def kernel_text(self) -> str:
        """attn.py as the user wrote it."""
        text = BASE
        for old, new in self.edits:
            assert text.count(old) == 1, old
            text = text.replace(old, new)
        return text

    def snippet(self) -> str:
        if self.shown:
            return self.shown
        if self.script:
            return self.script.strip("\n")
        if self.edits:
            return self.edits[-1][1].strip("\n")
        return "fadsl " + " ".join(self.argv)


def kernel(
    id: str,
    title: str,
    old: str,
    new: str,
    fix: str,
    argv: tuple[str, ...] = ("ir", "attn.py"),
    first: tuple[tuple[str, str], ...] = (),
) -> Mistake:
    """A mistake on one line of BASE (after the ``first`` edits, which are not shown)."""
    return Mistake(id, title, fix, argv, first + ((old, new),))


API_CALL = """\
import numpy as np

import fadsl as fd
from attn import attn

q = np.zeros((1, 2, 64, 64), np.float16)
{call}
"""
"""A golden test's call of the Python API on BASE (``q`` has BASE's default shape)."""


def api(id: str, title: str, call: str, fix: str) -> Mistake:
    """A mistake in a call of the Python API (docs/api.md)."""
    return Mistake(id, title, fix, (), script=API_CALL.format(call=call))


TORCH_CALL = """\
import torch

import fadsl as fd
import fadsl.torch as ft

q = torch.zeros(1, 2, 64, 64, dtype=torch.float16)
{call}
"""
"""A golden test's call of fadsl.torch (docs/pytorch.md); needs PyTorch. Each names its
kernel apart: torch keeps one operator per name for the whole process."""


def torch_api(id: str, title: str, call: str, fix: str) -> Mistake:
    """A mistake in a call of a fadsl.torch operator (skipped without PyTorch)."""
    script = TORCH_CALL.format(call=call)
    return Mistake(id, title, fix, (), script=script, needs="torch")


def mod(id: str, title: str, kind: str, body: str, fix: str) -> Mistake:
    params = (
        "score, b, h, q_idx, kv_idx" if kind == "score_mod" else "b, h, q_idx, kv_idx"
    )
    name = "bias" if kind == "score_mod" else "local"
    text = MOD.format(name=name, params=params, body=body, kind=kind)
    return Mistake(
        id,
        title,
        fix,
        ("ir", "mods.py"),
        files={"mods.py": text},
        shown=f"def {name}({params}):\n    {body}",
    )


CATALOGUE: tuple[Mistake, ...] = (
    # --- the kernel's Python ------------------------------------------------------
    kernel(
        "unknown_op",
        "An op that does not exist",
        "m_new = fd.maximum(m, fd.row_max(s))",
        "m_new = fd.maximum(m, fd.rowmax(s))",
        "Use the op the hint names; `fadsl/frontend/ops.py` lists every op.",
    ),
    kernel(
        "unknown_keyword",
        "A keyword an op does not take",
        "kt = fd.load(k[b, h, cols, :], pad=0)",
        "kt = fd.load(k[b, h, cols, :], padding=0)",
        "Use the keyword the op documents (`fd.load(block, pad=...)`).",
    ),
    kernel(
        "dot_contraction",
        "`dot` operands whose inner sizes differ",
        "s = fd.dot(qt, kt, transpose_b=True) * D**-0.5",
        "s = fd.dot(qt, kt) * D**-0.5",
        "For `q @ k^T` pass `transpose_b=True`.",
    ),
    kernel(
        "dot_rank",
        "`dot` of a 1-D tile",
        "s = fd.dot(qt, kt, transpose_b=True) * D**-0.5",
        "s = fd.dot(m, kt, transpose_b=True) * D**-0.5",
        "`dot` multiplies 2-D tiles; broadcast a row vector with `m[:, None]` and use "
        "elementwise `*` instead.",
    ),
    kernel(
        "dtype_mismatch",
        "Operands of different dtypes",
        "l = l * alpha + fd.row_sum(p)",
        "l = l * alpha + fd.row_sum(fd.cast(p, fd.f16))",
        "Cast one side explicitly, e.g. `fd.cast(x, fd.f32)`; fadsl never converts "
        "float dtypes behind your back.",
    ),
    kernel(
        "loop_carried_dtype",
        "A loop-carried value that changes dtype",
        "acc = acc * alpha[:, None] + fd.dot(fd.cast(p, v.dtype), vt)",
        "acc = fd.cast(acc * alpha[:, None] + fd.dot(fd.cast(p, v.dtype), vt), fd.f16)",
        "A value rebound in a loop keeps the type it enters with; cast after the loop, "
        "or start it in the type the loop produces.",
    ),
    kernel(
        "loop_carried_shape",
        "A loop-carried value that changes shape",
        "l = l * alpha + fd.row_sum(p)",
        "l = l[:, None] * alpha[:, None] + p",
        "Keep the loop-carried value's shape; reduce inside the loop "
        "(`fd.row_sum(p)`) before adding.",
    ),
    kernel(
        "unsupported_construct",
        "A Python construct the DSL does not have",
        "p = fd.exp(s - m_new[:, None])",
        "p = [fd.exp(x) for x in (s - m_new[:, None],)][0]",
        "Write it with assignments, fd ops and `for` over fd.grid / range / "
        "fd.pipelined.",
    ),
    kernel(
        "undefined_name",
        "A misspelt name",
        "p = fd.exp(s - m_new[:, None])",
        "p = fd.exp(s - mnew[:, None])",
        "Use the name the hint suggests, or define it before use.",
    ),
    kernel(
        "loop_local_used_after",
        "A value made in a loop used after it",
        "        fd.store(o[b, h, rows, :], fd.cast(acc / l[:, None], o.dtype))",
        "        fd.store(o[b, h, rows, :], fd.cast(p, o.dtype))",
        "Initialise the name before the loop, so it becomes a loop-carried value, or "
        "use a value the loop carries out.",
    ),
    kernel(
        "branch_on_tile",
        "`if` on a tile",
        "            m = m_new",
        "            if m_new > 0:\n                m = m_new",
        "`if` chooses at compile time; choose per element with "
        "`fd.where(cond, a, b)`.",
    ),
    kernel(
        "store_to_input",
        "A store into an input",
        "fd.store(o[b, h, rows, :], fd.cast(acc / l[:, None], o.dtype))",
        "fd.store(q[b, h, rows, :], fd.cast(acc / l[:, None], o.dtype))",
        "Store into an `fd.Out(...)` (or `fd.Scratch(...)`) parameter.",
    ),
    kernel(
        "index_rank",
        "Too few indices for a tensor",
        "qt = fd.load(q[b, h, rows, :], pad=0)",
        "qt = fd.load(q[b, rows, :], pad=0)",
        "Give one index or slice per dimension: `q[b, h, rows, :]`.",
    ),
    kernel(
        "python_library_call",
        "Calling a Python library inside a kernel",
        "p = fd.exp(s - m_new[:, None])",
        "p = math.exp(s - m_new[:, None])",
        "Tiles exist only on the device: use the fd op (`fd.exp`), not math/numpy.",
        first=(("import fadsl as fd\n", "import math\n\nimport fadsl as fd\n"),),
    ),
    kernel(
        "missing_annotation",
        "A parameter without an annotation",
        '    q: fd.In("B", "N", "Sq", "D"),',
        "    q,",
        "Annotate tensors with fd.In / fd.Out, scalars with fd.Scalar, and give "
        "constants a default.",
    ),
    kernel(
        "kernel_name_path",
        "A kernel name that is not a C identifier",
        "@fd.kernel(default_shape",
        '@fd.kernel(name="../attn", default_shape',
        "Name kernels with letters, digits and `_`: the name becomes C++ identifiers "
        "and file names.",
    ),
    kernel(
        "kernel_name_taken",
        "A kernel name the generated C++ already declares",
        "@fd.kernel(default_shape",
        '@fd.kernel(name="AscendC", default_shape',
        "Rename the kernel: its name is the symbol the host launches and cannot be "
        "changed for it, so it must not be a name of the Ascend C headers, the C "
        "library or the generated host program (every other C++ name is renamed on a "
        "clash, e.g. a tensor `this` becomes `this_`).",
        argv=("compile", "attn.py", "-o", "out"),
    ),
    kernel(
        "python_syntax_error",
        "A Python syntax error in the kernel file",
        "for j in fd.pipelined(fd.cdiv(Skv, block_kv)):",
        "for j in fd.pipelined(fd.cdiv(Skv, block_kv))",
        "Fix the Python; the caret points where the parser stopped.",
    ),
    Mistake(
        "no_kernel",
        "A file with no kernel",
        "Decorate a function with `@fd.kernel` (or assign `kernel = fd.attention(...)`) "
        "at module level.",
        ("ir", "helpers.py"),
        files={
            "helpers.py": "import fadsl as fd\n\n\n"
            "def attn(q, k, v):\n    return q\n"
        },
        shown="def attn(q, k, v):   # no @fd.kernel\n    return q",
    ),
    Mistake(
        "import_fails",
        "A kernel file that raises when imported",
        "Loading a kernel file runs its top-level code; fix what the message names.",
        ("ir", "broken.py"),
        files={"broken.py": "import fadsl as fd\n\nBLOCK = int('sixty-four')\n"},
        shown="BLOCK = int('sixty-four')",
    ),
    # --- the command line ---------------------------------------------------------
    Mistake(
        "shape_syntax",
        "Bad `--shape` syntax",
        "Separate NAME=VALUE items with commas.",
        ("run", "attn.py", "--shape", "B=1,N=2;Sq=64,Skv=64,D=64", "-o", "out"),
    ),
    Mistake(
        "shape_unknown_symbol",
        "A `--shape` name the kernel does not have",
        "Use the kernel's shape symbols (listed in the hint).",
        ("run", "attn.py", "--shape", "B=1,N=2,S=64,Skv=64,D=64", "-o", "out"),
    ),
    Mistake(
        "shape_missing_symbol",
        "A `--shape` that leaves out a symbol",
        "Give every shape symbol (only `Nkv` defaults, to `N`).",
        ("run", "attn.py", "--shape", "B=1,N=2,Sq=64", "-o", "out"),
    ),
    Mistake(
        "shape_not_positive",
        "A zero or negative size in `--shape`",
        "Sizes are positive integers.",
        ("run", "attn.py", "--shape", "B=0,N=2,Sq=64,Skv=64,D=64", "-o", "out"),
    ),
    Mistake(
        "set_syntax",
        "Bad `--set` syntax",
        "Write `--set NAME=VALUE`.",
        RUN + ("--set", "block_q"),
    ),
    Mistake(
        "set_unknown",
        "`--set` of a constant the kernel does not have",
        "Use one of the names in the hint.",
        RUN + ("--set", "blockq=32"),
    ),
    Mistake(
        "set_scalar_not_finite",
        "`--set` of a NaN or infinite scalar",
        "Give a finite number, or leave the scalar at its default.",
        RUN + ("--set", "scale=nan"),
        edits=(
            (
                "    block_q: int = 64,\n",
                '    scale: fd.Scalar = "D ** -0.5",\n    block_q: int = 64,\n',
            ),
        ),
        shown="fadsl run attn.py --shape B=1,N=2,Sq=64,Skv=64,D=64 -o out --set "
        'scale=nan   # attn.py has the parameter scale: fd.Scalar = "D ** -0.5"',
    ),
    Mistake(
        "block_size_zero",
        "A zero block size",
        "Block sizes are positive integers.",
        RUN + ("--set", "block_q=0"),
    ),
    Mistake(
        "block_size_negative",
        "A negative block size",
        "Block sizes are positive integers.",
        RUN + ("--set", "block_kv=-64"),
    ),
    Mistake(
        "block_size_not_fractal",
        "A block size the cube unit cannot take",
        "Use multiples of 16 for the block sizes and the head dim of `dot` operands.",
        ("check", "attn.py", "--shape", SHAPE, "--set", "block_q=24"),
    ),
    Mistake(
        "resource_overflow",
        "Buffers that do not fit the chip",
        "Take the largest block size the hint names (or fewer stages); "
        "`fadsl tune` searches all of them.",
        (
            "check",
            "attn.py",
            "--shape",
            "B=1,N=2,Sq=4096,Skv=4096,D=128",
            "--set",
            "block_q=512",
            "--set",
            "block_kv=512",
        ),
    ),
    kernel(
        "scalar_of_runtime_symbol",
        "A scalar the kernel cannot compute",
        "s = fd.dot(qt, kt, transpose_b=True) * D**-0.5",
        "s = fd.dot(qt, kt, transpose_b=True) * Sq**-0.5",
        'Make the value a scalar parameter (`c: fd.Scalar = "Sq**-0.5"`), which the '
        "host computes; powers of compile-time sizes (`D**-0.5`) are folded.",
        argv=("compile", "attn.py", "-o", "out"),
    ),
    Mistake(
        "unknown_target",
        "An unknown `--target`",
        "Use a built-in chip name (listed) or describe yours with `--target-file`.",
        ("check", "attn.py", "--shape", SHAPE, "--target", "ascend910c"),
    ),
    Mistake(
        "unknown_dtype",
        "An unknown `--dtype`",
        "Use fp16, bf16 or fp32.",
        RUN + ("--dtype", "fp64"),
    ),
    Mistake(
        "kernel_not_found",
        "`--kernel` naming a kernel the file does not define",
        "Use one of the names in the hint.",
        ("ir", "attn.py", "--kernel", "fa3"),
    ),
    Mistake(
        "missing_input_bin",
        "A missing input `.bin`",
        "Write every input parameter's `<name>.bin`, or drop `--inputs`.",
        RUN + ("--inputs", "inputs"),
        files={"inputs/q.bin": "zeros:16384", "inputs/k.bin": "zeros:16384"},
        shown="fadsl run attn.py --shape B=1,N=2,Sq=64,Skv=64,D=64 -o out "
        "--inputs inputs   # inputs/ has q.bin and k.bin, no v.bin",
    ),
    Mistake(
        "short_input_bin",
        "An input `.bin` of the wrong size",
        "Write the shape and dtype the message gives (check `--shape` and `--dtype`).",
        RUN + ("--inputs", "inputs"),
        files={
            "inputs/q.bin": "zeros:16384",
            "inputs/k.bin": "zeros:16384",
            "inputs/v.bin": "zeros:4096",
        },
        shown="fadsl run attn.py --shape B=1,N=2,Sq=64,Skv=64,D=64 -o out "
        "--inputs inputs   # inputs/v.bin holds 4096 bytes",
    ),
    Mistake(
        "inputs_dtype_mismatch",
        "`--inputs` from a run of another dtype",
        "Run the kernel in the data's dtype (`--dtype`), or give inputs of its dtype.",
        RUN + ("--inputs", "inputs"),
        files={
            "inputs/q.bin": "zeros:16384",
            "inputs/k.bin": "zeros:16384",
            "inputs/v.bin": "zeros:16384",
            "inputs/meta.json": BF16_META,
        },
        shown="fadsl run attn.py --dtype bf16 --shape B=1,N=2,Sq=64,Skv=64,D=64 -o inputs\n"
        "fadsl run attn.py --shape B=1,N=2,Sq=64,Skv=64,D=64 -o out --inputs inputs",
    ),
    Mistake(
        "cu_seqlens_invalid",
        "`cu_seqlens` that are not sequence offsets",
        "Write 0, then the running sums of the sequence lengths, ending at `Sq` "
        "(`Skv`).",
        ("run", "varlen.py", "--shape", "B=2,N=1,Sq=64,Skv=64,D=64")
        + ("--inputs", "inputs", "-o", "out"),
        files={
            "varlen.py": 'import fadsl as fd\n\nkernel = fd.attention(name="varlen", '
            'layout="TND")\n',
            "inputs/q.bin": "zeros:8192",
            "inputs/k.bin": "zeros:8192",
            "inputs/v.bin": "zeros:8192",
            "inputs/cu_seqlens_q.bin": "i32:0,100,64",
            "inputs/cu_seqlens_kv.bin": "i32:0,32,64",
        },
        shown="fadsl run varlen.py --shape B=2,N=1,Sq=64,Skv=64,D=64 --inputs inputs "
        "-o out   # inputs/cu_seqlens_q.bin holds 0, 100, 64",
    ),
    Mistake(
        "index_input_out_of_range",
        "An index input out of range",
        "Keep every index within the dimension it indexes.",
        ("run", "gather.py", "--shape", "B=1,N=4,Sq=64,Skv=64,D=64")
        + ("--inputs", "inputs", "-o", "out"),
        files={
            "gather.py": GATHER,
            "inputs/q.bin": "zeros:32768",
            "inputs/k.bin": "zeros:32768",
            "inputs/v.bin": "zeros:32768",
            "inputs/tab.bin": "zeros:16",
            "inputs/ids.bin": "i32:0,3,9,1",
        },
        shown="def bias(score, b, h, q_idx, kv_idx):\n    return score + tab[ids[h]]"
        "   # inputs/ids.bin holds 0, 3, 9, 1; tab has N = 4 elements",
    ),
    Mistake(
        "output_is_a_file",
        "`-o` naming an existing file",
        "Name a folder; fadsl writes several files into it.",
        ("run", "attn.py", "--shape", SHAPE, "-o", "notes.txt"),
        files={"notes.txt": "my notes\n"},
    ),
    Mistake(
        "output_is_current_folder",
        "`-o .`",
        "fadsl replaces its output folder as a whole; give it a folder of its own.",
        ("run", "attn.py", "--shape", SHAPE, "-o", "."),
    ),
    Mistake(
        "verify_sizes",
        "`fadsl verify` of outputs of different sizes",
        "Compare outputs of the same kernel, shape and dtype.",
        ("verify", "a.bin", "b.bin", "--dtype", "fp16"),
        files={"a.bin": "zeros:512", "b.bin": "zeros:1024"},
    ),
    Mistake(
        "verify_shapes_differ",
        "`fadsl verify` of outputs of other shapes",
        "Compare outputs of the same kernel, shape and dtype.",
        ("verify", "small", "big"),
        files={
            "small/meta.json": out_meta([1, 4, 32, 64]),
            "small/o.bin": "zeros:16384",
            "big/meta.json": out_meta([1, 2, 64, 64]),
            "big/o.bin": "zeros:16384",
        },
        shown="fadsl verify small big   # run folders of --shape ...,N=4,Sq=32,... "
        "and ...,N=2,Sq=64,...",
    ),
    Mistake(
        "verify_implausible_record",
        "`fadsl verify` against a run folder recording an implausible error",
        "Recompute the error with `--kernel-file` (the kernel's `.py` file), or run the "
        "kernel again.",
        ("verify", "actual", "expected"),
        files={
            "actual/meta.json": out_meta([1, 2, 64, 64]),
            "actual/o.bin": "zeros:16384",
            "expected/meta.json": out_meta([1, 2, 64, 64], same_error=1e9),
            "expected/o.bin": "zeros:16384",
        },
        shown="fadsl verify actual expected   # expected/meta.json records "
        '"same_precision_error": 1e9 for o',
    ),
    Mistake(
        "ir_unknown_op",
        "An unknown op in textual IR",
        "Use the op the hint names; IR op names are the snake_case IR class names.",
        ("ir", "k.fir"),
        files={"k.fir": "IR_SAMPLE"},
        shown="%mx = rowmax(%s_1) : f32[bq]",
    ),
    # --- fd.attention -------------------------------------------------------------
    Mistake(
        "gqa_heads",
        "`N` not a multiple of `Nkv` (GQA)",
        "Each KV head serves N / Nkv query heads: pick Nkv dividing N.",
        ("run", "gqa.py", "--shape", "B=1,N=6,Nkv=4,Sq=64,Skv=64,D=64", "-o", "out"),
        files={
            "gqa.py": 'import fadsl as fd\n\nkernel = fd.attention(name="gqa", '
            'layout="BSND")\n'
        },
    ),
    mod(
        "score_mod_returns_mask",
        "A score_mod that returns a mask",
        "score_mod",
        "return (q_idx - kv_idx) < 256",
        "A score_mod returns the modified scores; masks belong in mask_mod.",
    ),
    mod(
        "score_mod_calls_numpy",
        "A score_mod that calls numpy",
        "score_mod",
        "return score + np.log1p(kv_idx)",
        "Mods are traced on tiles: use fd ops (`fd.exp`, `fd.where`, ...) and Python "
        "arithmetic.",
    ),
    mod(
        "mod_math_unsupported",
        "Math a mod cannot use in a kernel",
        "score_mod",
        "return score + (-2.0) ** (kv_idx * 0.1)",
        "Use the operations docs/variants.md lists (`+ - * / // % **`, `fd.exp`, "
        "`fd.exp2`, `fd.log`, `fd.log2`, `fd.sqrt`, `fd.sin`, `fd.cos`, ...) within "
        "their domain; precompute other values into an `fd.tensor` read as "
        "`table[h]` or `table[kv_idx]`.",
    ),
    mod(
        "mask_mod_returns_score",
        "A mask_mod that returns numbers",
        "mask_mod",
        "return (q_idx - kv_idx) * 0.5",
        "A mask_mod returns a mask: compare positions, combine with `& | ~`.",
    ),
    Mistake(
        "api_field_overflow",
        "An Ascend C parameter that overflows its field",
        "Keep the value in range: the hint names the largest sizes that fit; for a row "
        "stride, a layout with contiguous rows (BNSD) takes the same shape.",
        ("check", "gqa.py", "--shape", "B=1,N=520,Nkv=8,Sq=32,Skv=32,D=128"),
        files={
            "gqa.py": 'import fadsl as fd\n\nkernel = fd.attention(name="gqa", '
            'layout="BSND")\n'
        },
    ),
    Mistake(
        "event_pool_overflow",
        "More queue buffers than the TPipe has event IDs",
        "Single-buffer a pipelined loop (`stages=1`) or load fewer blocks per "
        "iteration: each freed queue buffer holds an event ID of its position until it "
        "is allocated again, and a pool has 8.",
        ("check", "fa3.py", "--set", "stages=2"),
        files={"fa3.py": (EXAMPLES / "fa3.py").read_text()},
    ),
    Mistake(
        "extra_tensor_not_indexed",
        "An extra tensor used without an index",
        "Index it with b, h, q_idx or kv_idx (`slopes[h]`); only a 0-d "
        '`fd.tensor("s")` is used as a value.',
        ("ir", "mods.py"),
        files={
            "mods.py": 'import fadsl as fd\n\nslopes = fd.tensor("slopes", "N")\n\n\n'
            "def bias(score, b, h, q_idx, kv_idx):\n    return score * slopes\n\n\n"
            'kernel = fd.attention(name="modded", score_mod=bias)\n'
        },
        shown='slopes = fd.tensor("slopes", "N")\n\n\ndef bias(score, b, h, q_idx, '
        "kv_idx):\n    return score * slopes",
    ),
    Mistake(
        "block_dim_zero",
        "`fadsl check --block-dim 0`",
        "Ask for at least one block, or leave --block-dim out.",
        ("check", "attn.py", "--shape", SHAPE, "--block-dim", "0"),
    ),
    Mistake(
        "output_not_replaceable",
        "`-o` naming a folder that holds files fadsl did not write",
        "fadsl replaces its output folder as a whole, and only when the folder is empty "
        "or an unchanged earlier output (its `fadsl-manifest.json` lists every file). "
        "Give each run a folder of its own (`-o out/run2`), or move away what you want "
        "to keep and remove the folder yourself.",
        RUN,
        files={"out/notes.txt": "mine\n", "out/run1/o.bin": "zeros:64"},
    ),
    Mistake(
        "window_right_with_causal",
        "A window reaching right of the diagonal with `causal=True`",
        "Causal removes every key right of the diagonal: write the window's right side "
        "as 0 (or drop causal to keep keys on both sides).",
        ("ir", "sw.py"),
        files={
            "sw.py": 'import fadsl as fd\n\nkernel = fd.attention(name="sw", '
            "causal=True, window=(16, 8))\n"
        },
        shown='kernel = fd.attention(name="sw", causal=True, window=(16, 8))',
    ),
    kernel(
        "tensor_dtype_unknown",
        "A tensor annotation with an unknown `dtype=`",
        'o: fd.Out("B", "N", "Sq", "D"),',
        'o: fd.Out("B", "N", "Sq", "D", dtype="float64"),',
        "Give `dtype=` as fd.f16, fd.bf16, fd.f32 or fd.i32 (or its name, e.g. "
        "'fp32'), or leave it out for the kernel's element dtype.",
    ),
    # --- numbers and names on the command line -------------------------------------
    Mistake(
        "shape_not_ascii",
        "A `--shape` size with `_` or digits of another script",
        "Write sizes with the digits 0-9 only: `Sq=640`, not `Sq=64_0` or `Sq=٦٤٠`.",
        ("check", "attn.py", "--shape", "B=1,N=2,Sq=64_0,Skv=64,D=64"),
    ),
    Mistake(
        "target_empty",
        "An empty `--target`",
        "Name a built-in chip, or leave `--target` out for ascend910b1.",
        ("check", "attn.py", "--shape", SHAPE, "--target", ""),
        shown='fadsl check attn.py --shape B=1,N=2,Sq=64,Skv=64,D=64 --target "$SOC"'
        "   # $SOC is not set",
    ),
    Mistake(
        "timeout_not_positive",
        "A zero or negative `fadsl sim --timeout`",
        "Give the seconds the run may take, above 0, or leave `--timeout` out (600).",
        ("sim", "attn.py", "--shape", SHAPE, "--timeout", "0", "-o", "out"),
    ),
    # --- files fadsl reads (limits: see the top of this page) ---------------------
    Mistake(
        "fir_not_utf8",
        "A textual IR file that is not UTF-8",
        "Save the file as UTF-8 (`iconv -f latin1 -t utf-8`); IR names are ASCII.",
        ("ir", "k.fir"),
        files={"k.fir": "IR_SAMPLE_LATIN1"},
        shown="%m\xe9x = row_max(%s_1) : f32[bq]   # saved as Latin-1",
    ),
    Mistake(
        "target_file_device",
        "A `--target-file` that is not a regular file",
        "Give a JSON file; start from a built-in one such as "
        "`fadsl/targets/ascend910b1.json`.",
        ("check", "attn.py", "--shape", SHAPE, "--target-file", "/dev/zero"),
    ),
    Mistake(
        "meta_json_too_deep",
        "A run folder whose `meta.json` nests too deeply",
        "meta.json is written by `fadsl run` and `fadsl sim`: run again to write a "
        "fresh folder.",
        ("verify", "run1", "run2"),
        files={"run1/meta.json": "nested:100000", "run2/meta.json": "nested:100000"},
        shown="fadsl verify run1 run2   # run1/meta.json is [[[[... 100,000 deep",
    ),
    mod(
        "mask_combines_number",
        "A mask combined with a number",
        "mask_mod",
        "return (q_idx >= kv_idx) | 1",
        "`&` and `|` combine masks: comparisons of positions, conditions on `b` and "
        "`h` (`(q_idx >= kv_idx) | (h >= 2)`), `True` or `False`.",
    ),
    kernel(
        "padded_head_dim_reduction",
        "A row reduction over a head dim the cube pads",
        "acc = acc * alpha[:, None] + fd.dot(fd.cast(p, v.dtype), vt)",
        "acc = acc * alpha[:, None] + fd.dot(fd.cast(p, v.dtype), vt)"
        " + fd.row_max(fd.cast(qt, fd.f32))[:, None]",
        "A head dim that is not a multiple of 16 is padded with zeros on the compiled "
        "path; reduce over another axis, or use a head dim that is a multiple of 16.",
        ("check", "attn.py", "--shape", "B=1,N=2,Sq=64,Skv=64,D=40"),
    ),
    kernel(
        "atomic_add_not_f32",
        "`atomic_add` of a tile that is not f32",
        "fd.store(o[b, h, rows, :], fd.cast(acc / l[:, None], o.dtype))",
        "fd.atomic_add(o[b, h, rows, :], fd.cast(acc / l[:, None], o.dtype))",
        "Add the f32 tile (the result of a dot, or `fd.cast(x, fd.f32)`): the output "
        "accumulates in f32 and is rounded to its dtype once, after the grid.",
    ),
    Mistake(
        "paged_page_out_of_range",
        "A block table naming a page the cache does not have",
        "Every column a sequence uses, `block_table[b, 0 .. cdiv(seqlens_kv[b], "
        "page_size) - 1]`, holds a page number in `[0, Pages)`; the other columns "
        "are not read.",
        ("run", "decode.py", "--shape", PAGED_SHAPE)
        + ("--inputs", "inputs", "-o", "out"),
        files=dict(PAGED_FILES, **{"inputs/block_table.bin": "i32:0,1,2,9"}),
        shown=f"fadsl run decode.py --shape {PAGED_SHAPE} --inputs inputs -o out"
        "   # inputs/block_table.bin holds 0, 1, 2, 9",
    ),
    Mistake(
        "paged_length_past_table",
        "A sequence longer than its block table",
        "A sequence has at most `MaxPages * page_size` keys: give the block table "
        "more columns.",
        ("run", "decode.py", "--shape", PAGED_SHAPE)
        + ("--inputs", "inputs", "-o", "out"),
        files=dict(PAGED_FILES, **{"inputs/seqlens_kv.bin": "i32:20,40"}),
        shown=f"fadsl run decode.py --shape {PAGED_SHAPE} --inputs inputs -o out"
        "   # inputs/seqlens_kv.bin holds 20, 40",
    ),
    Mistake(
        "prefill_chunk_past_keys",
        "A prefill chunk with more query rows than its sequence has keys",
        'In chunked prefill (`paged_kv=True`, `layout="TND"`) `seqlens_kv[b]` '
        "counts the keys cached before the chunk plus the chunk's own rows: write "
        "the chunk's K and V into the cache first and pass the new length.",
        ("run", "prefill.py", "--shape", PREFILL_SHAPE)
        + ("--inputs", "inputs", "-o", "out"),
        files=PREFILL_FILES,
        shown=f"fadsl run prefill.py --shape {PREFILL_SHAPE} --inputs inputs -o out"
        "   # inputs/cu_seqlens_q.bin holds 0, 30, 40; seqlens_kv.bin 20, 30",
    ),
    Mistake(
        "prefill_pack_gqa",
        "Packed GQA heads in a chunked prefill",
        "A prefill chunk's hundreds of rows of one head fill the Q tile; packing a "
        "group's heads is decode's tiling (`layout=\"BNSD\"`). Leave `pack_gqa` "
        'out with `layout="TND"`.',
        ("ir", "prefill.py"),
        files={
            "prefill.py": "import fadsl as fd\n\nkernel = fd.attention(name="
            '"prefill", paged_kv=True, layout="TND", pack_gqa=True)\n'
        },
        shown='kernel = fd.attention(name="prefill", paged_kv=True, layout="TND", '
        "pack_gqa=True)",
    ),
    Mistake(
        "score_mod_not_differentiable",
        "A backward of a score_mod that has no derivative in the score",
        "The backward multiplies dS by d score_mod / d score: write the mod with "
        "+ - * /, exp, tanh, abs, minimum, maximum, and choose branches with "
        "`fd.where` (a comparison may pick; it cannot be a number).",
        ("ir", "bwd.py"),
        files={
            "bwd.py": "import fadsl as fd\n\n\n"
            "def stepped(score, b, h, q_idx, kv_idx):\n"
            "    return fd.floor(score)\n\n\n"
            'kernel = fd.attention_backward(name="stepped", score_mod=stepped)\n'
        },
        shown="def stepped(score, b, h, q_idx, kv_idx):\n    return fd.floor(score)\n\n"
        'kernel = fd.attention_backward(name="stepped", score_mod=stepped)',
    ),
    Mistake(
        "gather_index_unbounded",
        "A mod indexing a tensor with a value whose range fadsl cannot bound",
        "A gather (a tensor indexed with a computed tile) reads one window of the "
        "tensor into UB, so its width must be a constant: build the index from "
        "`q_idx` / `kv_idx` with + - * // % and constants (`rel[q_idx - kv_idx + "
        "fd.shape.Skv - 1]`: `block_q + block_kv - 1` elements), clamp it with "
        "`fd.minimum` / `fd.maximum`, or declare the indexed dimension with an "
        'integer (`fd.tensor("offsets", 9, dtype="i32")`) to read it whole.',
        ("ir", "gather.py"),
        files={
            "gather.py": "import fadsl as fd\n\n"
            'table = fd.tensor("table", "Skv")\n'
            'ids = fd.tensor("ids", "Sq", dtype="i32")\n\n\n'
            "def bias(score, b, h, q_idx, kv_idx):\n"
            "    return score + table[ids[q_idx]]\n\n\n"
            'kernel = fd.attention(name="gathered", score_mod=bias)\n'
        },
        shown='table = fd.tensor("table", "Skv")\nids = fd.tensor("ids", "Sq", '
        'dtype="i32")\n\n\ndef bias(score, b, h, q_idx, kv_idx):\n'
        "    return score + table[ids[q_idx]]",
    ),
    Mistake(
        "gather_index_out_of_range",
        "A mod reading a tensor outside its shape through a computed index",
        "Size the tensor for every index the mod computes at valid positions "
        "(`q_idx < Sq`, `kv_idx < Skv`): a relative-position table "
        "`rel[q_idx - kv_idx + Skv - 1]` has `Sq + Skv - 1` entries. The "
        "interpreter checks the index range of each tile (or each index read from a "
        "tensor); the generated kernel calls `Trap()` where the range is not proven.",
        ("run", "gather.py", "--shape", SHAPE, "-o", "out"),
        files={
            "gather.py": "import fadsl as fd\n\n"
            'rel = fd.tensor("rel", "Skv")\n\n\n'
            "def bias(score, b, h, q_idx, kv_idx):\n"
            "    return score + rel[q_idx - kv_idx + fd.shape.Skv - 1]\n\n\n"
            'kernel = fd.attention(name="gathered", score_mod=bias)\n'
        },
        shown='rel = fd.tensor("rel", "Skv")\n\n\ndef bias(score, b, h, q_idx, '
        "kv_idx):\n    return score + rel[q_idx - kv_idx + fd.shape.Skv - 1]",
    ),
    # --- the Python API (docs/api.md) ----------------------------------------------
    api(
        "api_unknown_input",
        "An API call with a keyword that is no input of the kernel",
        "out = fd.interpret(attn, query=q, k=q, v=q)",
        "Inputs go by the kernel's parameter names (the hint lists them); tile "
        "constants and scalars go in `consts={...}`.",
    ),
    api(
        "api_input_shape",
        "An API input whose sizes disagree with the others",
        "out = fd.interpret(attn, q=q, k=q, v=q[:, :, :32])",
        "Shape symbols are read from the first array that holds them (here Skv from "
        "`k`): give arrays of matching sizes, or the symbols in `shape={...}`.",
    ),
    api(
        "api_input_dtype",
        "An API input in another dtype than the kernel takes",
        "out = fd.interpret(attn, q=q, k=q, v=q.astype(np.float32))",
        "Give every input in its parameter's dtype (`.astype(np.float16)`), or run the "
        "kernel in the data's dtype with `dtype='fp32'`.",
    ),
    api(
        "api_not_an_array",
        "An API input that is not an array",
        "out = fd.interpret(attn, q=q.tolist(), k=q, v=q)",
        "Give a numpy array or a tensor numpy reads (`__array__` / `__dlpack__`), "
        "in the parameter's dtype.",
    ),
    api(
        "api_missing_symbol",
        "An API call that gives no value for a shape symbol",
        "out = fd.interpret(attn, q=q)",
        "Give the inputs that hold the symbol (here `k` and `v`, of size Skv), or the "
        "symbol itself in `shape={...}`; inputs you leave out are then seeded.",
    ),
    Mistake(
        "ir_ring_impossible",
        "A `ring` the loop cannot have (textual IR)",
        "`ring = r` runs the cube r - 1 iterations ahead of the vector cores through "
        "workspace rings (docs/backend.md); only a loop whose dots exchange tiles with "
        "the vector cores can: remove the attribute, or write `ring = 1`.",
        ("check", "k.fir", "--shape", "M=64,K=64"),
        files={"k.fir": RING_FIR},
        shown="for j in 0 .. cdiv(K, 16) serial(ring = 2) {   # in k.fir",
    ),
    kernel(
        "model_runtime_bound",
        "`fadsl tune` or `timeline` of a loop whose length is read at run time",
        "for j in fd.pipelined(fd.cdiv(Skv, block_kv)):",
        "for j in fd.pipelined(fd.cdiv(fd.load_scalar(lens[b]), block_kv)):",
        "The performance model has no inputs, so it cannot know a loop length read "
        "from one; `check`, `run` and `sim` need no model. `fd.attention` kernels give "
        'the model their sequence lengths (docs/cost-model.md, "Values read at run '
        'time"); for your own kernel, loop over a shape symbol to model the longest '
        "case.",
        ("timeline", "attn.py", "--shape", SHAPE),
        first=(
            (
                '    o: fd.Out("B", "N", "Sq", "D"),\n',
                '    o: fd.Out("B", "N", "Sq", "D"),\n    lens: fd.In("B", dtype="i32"),\n',
            ),
        ),
    ),
)

CATALOGUE += (
    torch_api(
        "torch_input_dtype",
        "A fadsl.torch operator called with a tensor of another dtype",
        'fa = ft.op(fd.attention(name="fa_dtype"))\no = fa(q, q, q.float())',
        "Give every tensor in the dtype the kernel was registered for "
        "(`.to(torch.float16)`), or register the kernel for your data's dtype: "
        "`fadsl.torch.op(kernel, dtype='fp32')` (docs/pytorch.md).",
    ),
    torch_api(
        "torch_input_shape",
        "A fadsl.torch operator called with tensors whose dims disagree",
        'fa = ft.op(fd.attention(name="fa_shape"))\no = fa(q, q[:, :, :, :32], q)',
        "Each shape symbol must have one value across the inputs (the note lists "
        "what each input is declared as): give tensors of matching sizes.",
    ),
    torch_api(
        "torch_devices",
        "A fadsl.torch operator called with tensors on different devices",
        'fa = ft.op(fd.attention(name="fa_device"))\no = fa(q, q, q.to("meta"))',
        "Put every input on one device: CPU tensors run fadsl's interpreter, meta "
        "tensors only give the output shapes, NPU tensors the CANN operator.",
    ),
    torch_api(
        "torch_arguments",
        "A fadsl.torch operator called with a keyword that is no scalar of it",
        'fa = ft.op(fd.attention(name="fa_keyword"))\no = fa(q, q, q, block_kv=64)',
        "Runtime scalars are keywords of each call; tile constants are fixed when the "
        "operator is registered: `fadsl.torch.op(kernel, consts={'block_kv': 64})`.",
    ),
    torch_api(
        "torch_backward_mismatch",
        "A backward kernel that does not fit the forward kernel",
        'op = ft.op(fd.attention(name="f"), fd.attention_backward(name="b"))',
        "The backward kernel reads the forward kernel's inputs and outputs by name "
        "(`lse` here, which the forward returns only with `return_lse=True`): "
        "build both with the same options.",
    ),
    torch_api(
        "torch_register_consts",
        "A fadsl.torch operator registered with a constant the kernel lacks",
        'fa = ft.op(fd.attention(name="fa_consts"), consts={"blok_kv": 64})',
        "`consts` fixes the kernel's tile constants (and scalars) by name, as "
        "`--set` does: use a name from the hint.",
    ),
)

ROWS_AND_COLUMNS = """\
import fadsl as fd


@fd.kernel(default_shape=dict(B=1, N=2, Sq=64, Skv=64, D=64))
def grads(
    q: fd.In("B", "N", "Sq", "D"),
    k: fd.In("B", "N", "Skv", "D"),
    dk: fd.Out("B", "N", "Skv", "D"),
    block_q: int = 64,
    block_kv: int = 64,
):
    B, N, Sq, D = q.shape
    Skv = k.shape[2]
    for b, h, j in fd.grid(B, N, fd.cdiv(Skv, block_kv)):
        cols = fd.ds(j * block_kv, block_kv)
        kt = fd.load(k[b, h, cols, :], pad=0)
        kv_idx = fd.arange(j * block_kv, block_kv)
        acc = fd.zeros((block_kv, D), fd.f32)
        for i in range(fd.cdiv(Sq, block_q)):
            qt = fd.load(q[b, h, fd.ds(i * block_q, block_q), :], pad=0)
            s = fd.dot(qt, kt, transpose_b=True)
            s = fd.where(kv_idx[None, :] < Skv, s, 0.0)
            acc = acc + fd.dot(fd.cast(s, q.dtype), qt, transpose_a=True)
        acc = fd.where(kv_idx[:, None] < Skv, acc, 0.0)
        fd.store(dk[b, h, cols, :], fd.cast(acc, dk.dtype))
"""
"""A dK-like kernel whose kv_idx is both a column (x[None, :]) and rows (x[:, None])."""

CATALOGUE += (
    Mistake(
        "vector_rows_and_columns",
        "A vector of a row block used both as rows and as columns",
        "On 910B/A3 the two vector cores each own half the rows of every tile whose "
        "first dimension is a row block (here `block_kv`: the dK accumulator), but "
        "both hold all of a vector used as columns (`kv_idx[None, :]`). Make the row "
        "and the column vectors separately: a second `fd.arange(j * block_kv, "
        "block_kv)` for `[:, None]`.",
        ("check", "grads.py"),
        files={"grads.py": ROWS_AND_COLUMNS},
        shown="s = fd.where(kv_idx[None, :] < Skv, s, 0.0)\n...\n"
        "acc = fd.where(kv_idx[:, None] < Skv, acc, 0.0)",
    ),
)

IR_SAMPLE_EDIT = ("%mx = row_max(%s_1) : f32[bq]", "%mx = rowmax(%s_1) : f32[bq]")
"""The edit of tests/ir_samples/varlen.fir that ``ir_unknown_op`` uses."""

TWELVE_DOTS = (
    "import fadsl as fd\n\n\n@fd.kernel\ndef twelve(\n"
    '    a: fd.In("M", "K"),\n    w: fd.In("K", "D"),\n    y: fd.Out("M", "D"),\n'
    "    block_m: int = 32,\n):\n"
    "    for i in fd.grid(fd.cdiv(M, block_m)):\n"
    "        at = fd.load(a[fd.ds(i * block_m, block_m), :], pad=0)\n"
    "        wt = fd.load(w[:, :])\n"
    "        s = fd.dot(at, wt)\n"
    + "        s = s + fd.dot(at, wt)\n" * 11
    + "        fd.atomic_add(y[fd.ds(i * block_m, block_m), :], s)\n"
)
"""A kernel whose 12 dot results reach the vector cores and that adds atomically
(``atomic_sync_flags``)."""

CATALOGUE += (
    Mistake(
        "atomic_sync_flags",
        "`atomic_add` in a kernel with more than 11 cube/vector exchanges",
        "`atomic_add` makes the kernel call `SyncAll`, which on A2/A3 uses cross-core "
        "flag IDs 11-14 itself, so the kernel's own exchanges (one flag each) must fit "
        "IDs 0-10: add dot results on the cube side (one dot over a longer K), or "
        "split the kernel in two.",
        ("compile", "k.py", "--shape", "M=64,K=64,D=64"),
        files={"k.py": TWELVE_DOTS},
        shown="s = s + fd.dot(at, wt)   # 11 times, then fd.atomic_add(y[...], s)",
    ),
    Mistake(
        "ir_defer_impossible",
        "A `defer_update` the loop cannot have (textual IR)",
        "`defer_update = true` runs the vector steps on P @ V one iteration late "
        "(docs/backend.md); only a loop with a workspace ring whose output update "
        "follows the hand-over of P can: remove the attribute, or write "
        "`defer_update = false`.",
        ("check", "k.fir", "--shape", "M=64,K=64"),
        files={"k.fir": DEFER_FIR},
        shown="for j in 0 .. cdiv(K, 16) serial(defer_update = true) {   # in k.fir",
    ),
)

LAST_LINE = """        fd.store(o[b, h, rows, :], fd.cast(acc / l[:, None], o.dtype))
"""
POST_GRID = LAST_LINE + """    for b, h in fd.grid(B, N):  # the post phase
"""

CATALOGUE += (
    kernel(
        "post_grid_dot",
        "A dot in the post phase (a second fd.grid loop)",
        LAST_LINE,
        POST_GRID
        + "        x = fd.load(q[b, h, fd.ds(0, 64), :], pad=0)\n"
        + "        y = fd.dot(fd.cast(fd.zeros((64, 64), fd.f32), x.dtype), x)\n"
        + "        fd.store(part[b, h, fd.ds(0, 64), :], y)\n",
        "A second `fd.grid` loop runs after every core has finished the first "
        "(`SyncAll` in the generated kernel) on the vector cores alone, so it cannot "
        "hold a dot: compute the dot in the first grid, store it in an `fd.Scratch` "
        "tensor, and read that in the post phase (docs/decode.md, split-KV).",
        first=(
            (
                '    o: fd.Out("B", "N", "Sq", "D"),\n',
                '    o: fd.Out("B", "N", "Sq", "D"),\n'
                '    part: fd.Scratch("B", "N", "Sq", "D", dtype=fd.f32),\n',
            ),
        ),
    ),
    kernel(
        "third_grid",
        "A third fd.grid loop",
        LAST_LINE,
        POST_GRID
        + "        fd.store(o[b, h, fd.ds(0, 64), :], fd.zeros((64, D), o.dtype))\n"
        + "    for b, h in fd.grid(B, N):\n"
        + "        fd.store(o[b, h, fd.ds(0, 64), :], fd.zeros((64, D), o.dtype))\n",
        "A kernel has one grid, and at most one post-phase grid after it (run once "
        "every core has finished the first). Fold the work of the third into the "
        "second, or make it a second kernel.",
    ),
)

FA2_HEAD = "pipelined(ring = 3, defer_update = true, row_chunk = 32"
FA2_FIR = (EXAMPLES.parent / "generated" / "fa2" / "fa2.fir").read_text()
assert FA2_HEAD in FA2_FIR, "generated/fa2/fa2.fir's KV loop changed: update FA2_HEAD"
"""fa2's textual IR as ``compile`` writes it (its KV loop has the ring and the
deferred update), for the row_chunk mistakes."""
CHUNK_FIR = RING_FIR.replace("serial(ring = 2)", "serial(row_chunk = 16)")
"""A .fir whose loop asks for row chunks but reads no dot result (``ir_row_chunk_impossible``)."""

CATALOGUE += (
    Mistake(
        "ir_row_chunk_value",
        "A `row_chunk` that does not divide the rows (textual IR)",
        "`row_chunk = n` runs the row-wise vector work of the loop body over n rows "
        "of each vector core's tiles at a time (docs/backend.md, long KV rounds): n "
        "must be a multiple of 8 that divides the rows each vector core holds "
        "(block_q / 2 on 910B and A3, block_q on 910A and 310P). Pick one the hint "
        "lists, or write 0 and let the planner choose.",
        (
            "check",
            "k.fir",
            "--target",
            "ascend910b2",
            "--shape",
            "B=1,N=2,Sq=64,Skv=64,D=128",
        ),
        files={"k.fir": FA2_FIR.replace(FA2_HEAD, FA2_HEAD.replace("32", "12"))},
        shown="for j in ... pipelined(ring = 2, defer_update = true, "
        "row_chunk = 12) ...   # in k.fir",
    ),
    Mistake(
        "ir_row_chunk_impossible",
        "A `row_chunk` the loop cannot have (textual IR)",
        "Row chunks split the work between the arrival of a dot result from the cube "
        "and the hand-over of what the vector core makes from it; only a loop whose "
        "vector work in between maps rows to rows (elementwise ops, row reductions, "
        "row broadcasts) can have them: remove the attribute, or write "
        "`row_chunk = 0`.",
        ("check", "k.fir", "--shape", "M=64,K=64"),
        files={"k.fir": CHUNK_FIR},
        shown="for j in 0 .. cdiv(K, 16) serial(row_chunk = 16) {   # in k.fir",
    ),
)

CATALOGUE += (
    kernel(
        "view_size",
        "A tensor view whose size differs from the tensor's",
        "        qt = fd.load(q[b, h, rows, :], pad=0)\n",
        "        qt = fd.load(q.view(B, N * Sq, 2 * D)[b, rows, :], pad=0)\n",
        "`x.view(...)` lets a load or store see the same elements (row-major) with "
        "another shape, e.g. q `[B, N, Sq, D]` as `[B, N * Sq, D]`, so one block of "
        "rows spans several heads (docs/decode.md, GQA packing). Its dims must "
        "multiply to the tensor's size: merge adjacent dims, do not resize them.",
    ),
)

SUB_DOT_FIR = """\
kernel wide(
    in x: f16[M, K],
    in w: f16[K, N],
    out y: f32[M, N],
) consts(bm = 64) {
  grid (i) in (cdiv(M, bm)) {
    %xt = load() {src = x, index = [bm*i +: bm, 0 +: K], pad = 0} : f16[bm, K]
    %wt = load() {src = w, index = [0 +: K, 0 +: N], pad = 0} : f16[K, N]
    %y = dot(%xt, %wt) {l0_tile = [64, 48, 64]} : f32[bm, N]
    store(%y) {dst = y, index = [bm*i +: bm, 0 +: N]}
  }
}
"""
"""A .fir whose dot asks for sub-dots that do not divide it (``ir_l0_tile_split``)."""

CATALOGUE += (
    Mistake(
        "ir_l0_tile_split",
        "A dot's `l0_tile` that does not divide it (textual IR)",
        "`l0_tile = [m, n, k]` runs a dot as sub-dots of m x n x k on the cube "
        '(docs/backend.md, "Long KV rounds"): each size must divide the dot\'s M, N '
        "or K and be a multiple of 16. Pick such sizes, or remove the attribute and "
        "let the planner split what does not fit L0.",
        ("check", "k.fir", "--shape", "M=64,K=64,N=128"),
        files={"k.fir": SUB_DOT_FIR},
        shown="%y = dot(%xt, %wt) {l0_tile = [64, 48, 64]} : f32[bm, N]   # in k.fir",
    ),
)

PAGED_HAND = """\
import fadsl as fd


@fd.kernel(default_shape=dict(B=2, N=2, Sq=16, D=64, Pages=8, MaxPages=4))
def paged(
    q: fd.In("B", "N", "Sq", "D"),
    k_cache: fd.In("Pages", 64, "N", "D"),
    block_table: fd.In("B", "MaxPages", dtype=fd.i32),
    o: fd.Out("B", "N", "Sq", "MaxPages", dtype=fd.f32),
    block_kv: int = 96,
):
    for b, h in fd.grid(B, N):
        qt = fd.load(q[b, h, fd.ds(0, 16), :], pad=0)
        for j in fd.pipelined(fd.cdiv(MaxPages * 64, block_kv)):
            pages = fd.pages(block_table[b, j * block_kv // 64])
            keys = fd.ds(0, block_kv, MaxPages * 64 - j * block_kv)
            kt = fd.load(k_cache[pages, keys, h, :], pad=0)
            s = fd.dot(qt, kt, transpose_b=True)
            fd.store(o[b, h, fd.ds(0, 16), fd.ds(j, 1)], fd.row_max(s)[:, None])
"""
"""A hand-written kernel that loads KV blocks of several pages (``fd.pages``)."""

CATALOGUE += (
    Mistake(
        "paged_block_not_whole_pages",
        "A paged kernel's `block_kv` that is not a whole number of pages",
        "Each KV iteration of a paged kernel loads `block_kv / page_size` pages, one "
        "copy per page: give `block_kv` as a multiple of the page size (`fadsl tune` "
        "tries only those), or leave it out for one page per block "
        "(docs/decode.md).",
        ("check", "decode.py", "--shape", PAGED_SHAPE, "--set", "block_kv=24"),
        files={"decode.py": PAGED_FILES["decode.py"]},
        shown=f"fadsl check decode.py --shape {PAGED_SHAPE} --set block_kv=24"
        "   # decode.py: fd.attention(..., paged_kv=True, page_size=16)",
    ),
    Mistake(
        "paged_load_not_whole_pages",
        "A load through `fd.pages` whose rows are not whole pages",
        "A load whose first subscript is `fd.pages(table[b, c])` reads whole pages "
        "one after another: the size of its second subscript must be a multiple of "
        "the page's rows (the tensor's second dimension). Rows past the sequence are "
        "bounded with `fd.ds(0, rows, valid)`, not by a smaller block.",
        ("check", "hand.py", "--target", "ascend910b2"),
        files={"hand.py": PAGED_HAND},
        shown="    block_kv: int = 96,   # pages of 64 rows\n"
        "...\n"
        "            kt = fd.load(k_cache[pages, keys, h, :], pad=0)",
    ),
)


def _only_sends_fir(dots: int) -> str:
    """A loop whose cube sends ``dots`` results to the vector cores and gets nothing
    back: each needs a "slot free" flag (plan/sync/slot_free.py), two flag IDs per dot.
    """
    body = "".join(
        f"      %s{n} = dot(%qt, %kt) {{transpose_b = true}} : f32[bq, bkv]\n"
        f"      %r{n} = row_max(%s{n}) : f32[bq]\n"
        f"      %a{n} = maximum(%a{n - 1}, %r{n}) : f32[bq]\n"
        for n in range(1, dots + 1)
    )
    return f"""\
kernel many(
    in q: f16[Sq, D],
    in k: f16[Skv, D],
    out m: f32[Sq],
) consts(bkv = 64, bq = 64) {{
  grid (i) in (cdiv(Sq, bq)) {{
    %qt = load() {{src = q, index = [bq*i +: bq, 0 +: D], pad = 0}} : f16[bq, D]
    %mx = full() {{shape = [bq], value = -inf, dtype = f32}} : f32[bq]
    %mx_1 = for j in 0 .. cdiv(Skv, bkv) iter(%a0 = %mx) {{
      %kt = load() {{src = k, index = [bkv*j +: bkv, 0 +: D], pad = 0}} : f16[bkv, D]
{body}      yield %a{dots}
    }}
    %t = mul(%mx_1, 1.0) : f32[bq]
    store(%t) {{dst = m, index = [bq*i +: bq]}}
  }}
}}
"""


CATALOGUE += (
    Mistake(
        "ir_slot_free_flags",
        "Too many dot results sent to the vector cores in a loop that sends nothing back",
        "In a loop where the vector cores send no dot operand back to the cube, the cube "
        "must wait before it overwrites a workspace the vector cores have not read yet: "
        'each dot result they read takes a second cross-core flag, a "slot free" flag '
        '(docs/backend.md, "workspace rings"), and a kernel has 16 flag IDs (11 with '
        "atomic_add or a second fd.grid). Compute fewer dot results for the vector cores "
        "in that loop (e.g. one wider dot instead of several), or split the kernel.",
        ("check", "k.fir", "--shape", "Sq=128,Skv=256,D=64"),
        files={"k.fir": _only_sends_fir(9)},
        shown="%s1 = dot(%qt, %kt) ... %s9 = dot(%qt, %kt)   # in one loop of k.fir",
    ),
)


CATALOGUE += (
    Mistake(
        "explain_unknown_code",
        "`fadsl explain` of a code that does not exist",
        "Give the code as the message's headline prints it (`usage error[E21]` is "
        "`fadsl explain E21`); `fadsl explain` alone lists every code and its title.",
        ("explain", "E999"),
    ),
)

CATALOGUE += (
    torch_api(
        "torch_no_backward",
        "`.backward()` through a fadsl.torch operator registered without a backward",
        'fa = ft.op(fd.attention(name="fa_no_backward"))\n'
        "o = fa(q.requires_grad_(), q, q)\n"
        "o.sum().backward()",
        "Register the forward kernel with its backward kernel, built with the same "
        "options: `fadsl.torch.op(kernel, backward=fd.attention_backward(...))` "
        "(docs/pytorch.md); or call the operator on tensors that do not require grad.",
    ),
)

CATALOGUE += (
    kernel(
        "output_never_written",
        "An output the kernel never stores",
        '    o: fd.Out("B", "N", "Sq", "D"),\n',
        '    o: fd.Out("B", "N", "Sq", "D"),\n    m_out: fd.Out("B", "N", "Sq"),  # never stored\n',
        "Store a tile into every output (`fd.store(m_out[b, h, rows], m)`), or remove "
        "the parameter. An output nothing writes would hold whatever the device memory "
        "held.",
        RUN,
    ),
)


SEVERAL = """\
import fadsl as fd

causal = fd.attention(name="causal", causal=True, return_lse=True)
causal_bwd = fd.attention_backward(name="causal_bwd", causal=True)
local = fd.attention(name="local", window=(128, 0))
"""
"""Two forward kernels and a backward in one file, for ``several_kernels``."""

CATALOGUE += (
    Mistake(
        "several_kernels",
        "A file of several forward kernels, run without `--kernel`",
        "Name the kernel with `--kernel` (the hint lists them). A file holding one "
        "forward kernel and its backward kernels (`fd.attention_backward`, or a tile "
        "program named `<forward>_bwd`) needs no `--kernel`: the forward runs.",
        ("run", "variants.py", "-o", "out"),
        files={"variants.py": SEVERAL},
        shown="fadsl run variants.py -o out   # variants.py defines causal, "
        "causal_bwd and local",
    ),
)

CATALOGUE += (
    Mistake(
        "device_memory",
        "A shape whose tensors do not fit the device's memory",
        "Every input, output and scratch tensor of a launch lives in the device's "
        "memory (the target's `hbm_bytes`, docs/targets.md). Give a shape that fits "
        "one device: split the batch or the sequence over several launches or devices. "
        "`fadsl tune` refuses such a shape before it plans anything.",
        ("tune", "attn.py", "--shape", "B=1,N=4096,Sq=1000000000,Skv=1000000000,D=64"),
    ),
)

CATALOGUE += (
    Mistake(
        "backward_keyword",
        "A keyword `fd.attention_backward` does not take",
        "`fd.attention_backward` takes the keywords of `fd.attention` that shape the "
        "gradient (docs/backward.md). `return_lse` is not one: the backward reads the "
        "forward's `lse` as an input, so build the forward with `return_lse=True` and "
        "leave the keyword out here; a paged KV cache has no backward.",
        (),
        script="import fadsl as fd\n\n"
        'fwd = fd.attention(name="fwd", return_lse=True)\n'
        'bwd = fd.attention_backward(name="bwd", return_lse=True)\n',
    ),
)


CATALOGUE += (
    kernel(
        "debug_print_holes",
        "`fd.debug_print` with more arguments than `{}`",
        "            m = m_new\n",
        '            m = m_new\n            fd.debug_print("m =", m)\n',
        'Write one `{}` where each argument goes: `fd.debug_print("m = {}", m)`. '
        "The text takes `{}` only, no format specs.",
    ),
    kernel(
        "debug_print_args",
        "`fd.debug_print` without its text",
        "            m = m_new\n",
        "            m = m_new\n            fd.debug_print(m)\n",
        "The first argument is the text, with one `{}` per value: "
        '`fd.debug_print("m = {}", m)`.',
    ),
    kernel(
        "device_assert_not_a_mask",
        "`fd.device_assert` of a tile that is not a mask",
        "        fd.store(o[b, h, rows, :], fd.cast(acc / l[:, None], o.dtype))\n",
        '        fd.device_assert(l, "l is positive")\n'
        "        fd.store(o[b, h, rows, :], fd.cast(acc / l[:, None], o.dtype))\n",
        'Assert a comparison, which is a mask: `fd.device_assert(l > 0, "...")`.',
    ),
    kernel(
        "device_assert_failed",
        "A `fd.device_assert` that fails while the kernel runs",
        "        fd.store(o[b, h, rows, :], fd.cast(acc / l[:, None], o.dtype))\n",
        '        fd.device_assert(l < 20, "the row sums stay below 20")\n'
        "        fd.store(o[b, h, rows, :], fd.cast(acc / l[:, None], o.dtype))\n",
        "The note names the first task (and loop iteration) where an element of the "
        "mask was false; `fd.debug_print` the values the condition reads there to see "
        "why. Compiled code leaves `fd.device_assert` out unless built with `--debug` "
        "(then `ascendc_assert` checks it on the device).",
        RUN,
    ),
    kernel(
        "debug_operand_not_printable",
        "A `--debug` build printing a value the vector cores cannot read",
        "            m = m_new\n",
        "            m = m_new\n" '            fd.debug_print("k = {}", kt)\n',
        "With `--debug`, `fd.debug_print` and `fd.device_assert` become "
        "`AscendC::printf` / `ascendc_assert` on the vector cores, which read each "
        "element from UB. A loaded tile that a dot reads stays in the cube core's L1 and "
        "L0, and a mask is a bit mask in UB: print a value the vector cores compute (a "
        "dot's result, a row statistic, the values a mask compares). `fadsl run` prints "
        "anything.",
        argv=("compile", "attn.py", "--debug", "-o", "out"),
    ),
    Mistake(
        "configs_syntax",
        "A `--configs` entry that is not a list of NAME=VALUE",
        "Write the configurations of one op package as `;`-separated entries of "
        '`NAME=VALUE` items: `--configs "dtype=fp16,D=64;dtype=bf16,D=128"` (`dtype`, '
        "shape symbols, tile constants); entry N is tiling key N.",
        ("compile", "attn.py", "--configs", "dtype=fp16;dtype", "-o", "out"),
    ),
)


BLOCK_MASK_CALL = """\
import numpy as np

import fadsl as fd


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


kernel = fd.attention(name="causal_mod", mask_mod=causal)
q = np.zeros((1, 2, {sq}, 64), np.float16)
{call}
"""
"""A golden test's BlockMask given to a kernel whose block sizes are 128 x 128."""

CATALOGUE += (
    Mistake(
        "block_mask_block_size",
        "A BlockMask made for other block sizes than the kernel's",
        "Make the BlockMask with the kernel's `block_q` and `block_kv` "
        "(`fd.create_block_mask(..., block_q=128, block_kv=128)`), or run the kernel "
        "with the BlockMask's (`consts=dict(block_q=64, block_kv=64)`, `--set`); "
        "`fd.attention(..., block_mask=bm)` takes its block sizes from the BlockMask.",
        (),
        script=BLOCK_MASK_CALL.format(
            sq=256,
            call="bm = fd.create_block_mask(causal, None, None, 256, 256, block_q=64, "
            "block_kv=64)\nout = fd.interpret(kernel, block_mask=bm, q=q, k=q, v=q)",
        ),
    ),
    Mistake(
        "block_mask_unfit",
        "A block mask that does not fit the kernel",
        "Make the BlockMask for the shape of the call: its Sq and Skv are the "
        "sequence lengths of q and k; B and H are the batch and the query heads, or "
        "None for one mask shared by every batch or head. The same code refuses a "
        "block mask given to a kernel without a mask_mod, and lists (a BlockMask's "
        "or `kv_indices.bin` files) that skip a block the kernel's masks keep or call "
        "a block full that they cut: make it from the kernel's own masks.",
        (),
        script=BLOCK_MASK_CALL.format(
            sq=200,
            call="bm = fd.create_block_mask(causal, None, None, 256, 256)\n"
            "out = fd.interpret(kernel, block_mask=bm, q=q, k=q, v=q)",
        ),
    ),
)

MLA_FILE = (
    'import fadsl as fd\n\nkernel = fd.attention(name="mla", paged_kv=True, '
    "page_size=64, v_from_k=True)\n"
)
CATALOGUE += (
    Mistake(
        "v_from_k_needs_paged",
        "`v_from_k=True` without a paged cache",
        "`v_from_k` reads V as the first `Dv` columns of the paged cache `k_cache` "
        "(MLA decode, docs/decode.md): add `paged_kv=True`, or give a dense kernel "
        "its own `v`.",
        ("check", "mla.py"),
        files={
            "mla.py": 'import fadsl as fd\n\nkernel = fd.attention(name="mla", '
            "v_from_k=True)\n"
        },
    ),
    Mistake(
        "v_from_k_value_dim",
        "`v_from_k=True` with a value head dim wider than the key's",
        "V is the first `Dv` of `k_cache`'s `D` columns, so `Dv <= D` (DeepSeek MLA: "
        "`D=576`, `Dv=512`).",
        (
            "check",
            "mla.py",
            "--shape",
            "B=1,N=16,Nkv=1,Sq=1,D=64,Dv=128,Pages=8," "MaxPages=4",
        ),
        files={"mla.py": MLA_FILE},
    ),
    Mistake(
        "v_from_k_no_value_dim",
        "`v_from_k=True` with a shape that does not give `Dv`",
        "No input holds `Dv` and its default (`D`) would make V the whole latent row, "
        "rotary columns too: give `Dv` (DeepSeek MLA: `D=576,Dv=512`; `Dv=D` written "
        "out stays legal).",
        (
            "check",
            "mla.py",
            "--shape",
            "B=1,N=16,Nkv=1,Sq=1,D=576,Pages=8,MaxPages=4",
        ),
        files={"mla.py": MLA_FILE},
    ),
)

CATALOGUE += (
    Mistake(
        "kv_quant_keywords",
        "An int8 KV cache without its scale granularity (or int8 keywords that do not fit)",
        'An int8 cache needs `paged_kv=True`, `kv_dtype="int8"` and `kv_scale="channel"` '
        '(fp32 `k_scale` [Nkv, D], `v_scale` [Nkv, Dv]) or `kv_scale="token"` '
        "(`[Pages, page_size, Nkv]`); `kv_offset=True` adds `k_offset` / `v_offset` of "
        "the same shapes. Dequantised = `(x + offset) * scale` (docs/decode.md).",
        (),
        script='import fadsl as fd\n\nkernel = fd.attention(name="q8", paged_kv=True, '
        'kv_dtype="int8")\n',
    ),
    Mistake(
        "int8_cache_not_compiled",
        "Compiling an int8 KV cache whose rows the vector cores cannot tile",
        "The vector cores load an int8 cache's pages (and per-token scales) in rows of "
        "whole 32-byte blocks: D and Dv multiples of 32, and with "
        '`kv_scale="token"` (scales [Pages, P, Nkv] f32) Nkv a multiple of 8. Use '
        '`kv_scale="channel"` for such a head count, or run it in the interpreter '
        "(`fadsl run`, `fd.interpret`, `fadsl.torch` ops).",
        (
            "compile",
            "q8.py",
            "--shape",
            "B=2,N=16,Nkv=4,Sq=1,D=64,Pages=16,MaxPages=5",
            "-o",
            "out",
        ),
        files={
            "q8.py": 'import fadsl as fd\n\nkernel = fd.attention(name="q8", '
            'paged_kv=True, page_size=64, kv_dtype="int8", kv_scale="token")\n'
        },
    ),
)

APPEND_CALL = """\
import numpy as np

import fadsl as fd

kernel = fd.attention(name="append", paged_kv=True, page_size=16, append_kv=True)
{call}
"""
"""A golden test's append_kv kernel (docs/decode.md) and one call of it."""

CATALOGUE += (
    Mistake(
        "inplace_alias",
        "An in-place output that does not alias an input of its shape",
        '`fd.Out(..., alias="x")` updates the input `x` in place: the output starts '
        "as `x`'s data and on a device is its memory. Name an `fd.In` parameter with "
        "the output's dims and dtype.",
        edits=(
            (
                'o: fd.Out("B", "N", "Sq", "D")',
                'o: fd.Out("B", "N", "Sq", "D", alias="qq")',
            ),
        ),
    ),
    Mistake(
        "append_unsupported",
        "A keyword that append_kv does not take",
        "`append_kv=True` takes causal, scale, layout BNSD or BSND, dtype, page_size, "
        '`rotary` ("interleaved", "half" or None) and `leftpad`, with '
        "`paged_kv=True`; drop the other keyword, or attend without appending.",
        (),
        script='import fadsl as fd\n\nkernel = fd.attention(name="append", '
        "paged_kv=True, append_kv=True, softcap=30.0)\n",
    ),
    Mistake(
        "append_inputs",
        "An append that does not fit its sequence's pages",
        "Sequence b appends its Sq new tokens at positions seqlens_kv[b] .. "
        "seqlens_kv[b] + Sq - 1: that end must fit its block table row (MaxPages * "
        "page_size), the columns it uses must hold pages of the cache, the pages it "
        "writes must be its own, leftpad[b] <= seqlens_kv[b], and with rotary the "
        "cos / sin tables must reach its last position.",
        (),
        script=APPEND_CALL.format(
            call="z = np.zeros\n"
            "out = fd.interpret(kernel, q=z((1, 2, 1, 64), np.float16), "
            "k_cache=z((4, 16, 2, 64), np.float16), v_cache=z((4, 16, 2, 64), "
            "np.float16), block_table=np.array([[0, 1]], np.int32), "
            "seqlens_kv=np.array([32], np.int32), k_new=z((1, 2, 1, 64), np.float16), "
            "v_new=z((1, 2, 1, 64), np.float16))"
        ),
    ),
    Mistake(
        "take_columns_unaligned",
        "Rotary tables whose rows are not whole 32-byte blocks, compiled",
        "The compiled kernel rotates by picking columns of a tile with the vector "
        "unit's `Gather`, one row at a time, and a row of a vector operand must start "
        "on a 32-byte block of UB: give `rotary_cos` / `rotary_sin` a multiple of 8 "
        "columns (`rotary_dim` a multiple of 16, as FlashAttention requires). The "
        "interpreter takes any width.",
        (
            "compile",
            "k.py",
            "--shape",
            "B=2,N=8,Sq=1,D=128,Pages=64,Nkv=2,Dv=128,MaxPages=8,MaxPos=128,"
            "RotaryHalf=4",
            "-o",
            "out",
        ),
        files={
            "k.py": "import fadsl as fd\n\n"
            'kernel = fd.attention(name="rope_append", paged_kv=True, page_size=16,\n'
            '                      append_kv=True, causal=True, rotary="half")\n'
        },
        shown="fadsl compile k.py --shape ...,RotaryHalf=4   # rotary_dim = 8",
    ),
)

REL_GRAD_FILE = (
    "import fadsl as fd\n\n"
    'rel = fd.tensor("rel", "Sq + Skv - 1", requires_grad=True)\n\n\n'
    "def rel_bias(score, b, h, q_idx, kv_idx):\n"
    "    return score + {use}\n\n\n"
    'kernel = fd.attention_backward(name="rel_bwd", score_mod=rel_bias)\n'
)

SCATTER_FIR = (EXAMPLES.parent / "tests" / "ir_samples" / "scatter_add.fir").read_text(
    encoding="utf-8"
)
"""A hand-written scatter_add by an index tile, without base and width."""

CATALOGUE += (
    Mistake(
        "tensor_grad_not_float",
        "`requires_grad=True` on an integer tensor",
        "Only a float tensor (a bias table, per-head slopes or scales) has a gradient; "
        "document ids and offsets are indices: drop `requires_grad=True`, or declare "
        'the learnable tensor with a float dtype (`dtype="fp32"`).',
        ("ir", "ids.py"),
        files={
            "ids.py": "import fadsl as fd\n\n"
            'document_id = fd.tensor("document_id", "Sq", dtype="i32", '
            "requires_grad=True)\n"
        },
    ),
    Mistake(
        "tensor_grad_not_on_ascendc",
        "A windowless `scatter_add` compiled (textual IR)",
        "The backward of a score_mod sums every read's gradient with `atomic_add` or a "
        "`scatter_add` that carries the window its indices lie in (`base`, `width`), "
        "which the Ascend C backend lowers (docs/backward.md); a hand-written "
        "`scatter_add` by index tiles without one runs in the interpreter only: give "
        "it `base` and `width`, or run it with `fadsl run`.",
        ("check", "k.fir", "--shape", "N=2,T=64"),
        files={"k.fir": SCATTER_FIR},
        shown="scatter_add(%xt, [%q]) {dst = drel, index = [h, 0], axes = [1]}",
    ),
    Mistake(
        "tensor_grad_not_differentiable",
        "A learnable tensor read through an op without a derivative",
        "The backward multiplies dS by d score_mod / d (the value read): keep the "
        "tensor's values out of `fd.floor`, `//`, `%`, integer casts and comparisons "
        "used as numbers (a comparison may choose with `fd.where`), or declare it "
        "without `requires_grad=True`.",
        ("ir", "rel.py"),
        files={
            "rel.py": REL_GRAD_FILE.format(
                use="fd.floor(rel[q_idx - kv_idx + fd.shape.Skv - 1])"
            )
        },
    ),
)
