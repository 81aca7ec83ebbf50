"""Programs with hostile names, compiled to Ascend C and type-checked with g++ (issue 12).

Two program shapes whose every name is drawn: an ``@fd.kernel`` FlashAttention loop
(kernel, tensors, scalar, tile constants, shape symbols, grid and loop variables and a
dozen locals, one of them a twin that reads like another's SSA name) and an
``fd.attention`` variant with an ``fd.tensor`` extra input. Names come from C++
keywords, identifiers the generated code, its headers and Ascend C use, system macros,
spellings that collide once turned into C++ (``s_1``/``s1``, ``_x``/``x``,
``block_q``/``blockQ``/``BLOCK_Q``) and plain random identifiers.

The property: ``fadsl compile`` succeeds and both translation units pass
``g++ -fsyntax-only -Werror=shadow`` against the CPU runtime; or the kernel name is
refused with the clean ``kernel name ...`` error (it is the one name that cannot be
renamed), or an extra tensor named like something the attention program reads is.
``STATS`` counts programs, names, compiled, type-checked and refusals.
"""

from __future__ import annotations

import keyword
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cxxcheck import compile_kernel, have_gxx, typecheck
from fuzzkit import FuzzFailure, problem
from hypothesis import strategies as st

STATS: Counter[str] = Counter()

CXX_WORDS = (
    "this new delete int float double char auto template typename namespace union "
    "struct public private protected virtual volatile static const extern register "
    "signed unsigned short long bool void goto switch case default do explicit friend "
    "inline mutable operator sizeof typedef using catch throw enum export constexpr "
    "decltype nullptr noexcept alignas alignof thread_local true false xor bitand "
    "bitor compl not_eq and_eq or_eq xor_eq concept requires co_await final override"
).split()
RUNTIME_WORDS = (
    "AscendC TPipe TQue TBuf GlobalTensor LocalTensor GM_ADDR half bfloat16_t main t "
    "op workspace tiling ffts tasks task group row0 ROWS rows pipe_ tiling_ mask dup "
    "work bcast tmp tmp2 mask2 validRows rowValue r aL0 bL0 cL0 aL0Tile inQue outQue "
    "mBuf tmp0Buf WORKSPACE_BYTES_PER_CORE FLAG_DOT dir stream argc argv blockDim "
    "deviceId reserved fadsl fadsl_rt std linux unix errno stdin EOF NULL index exp "
    "printf size_t int32_t uint8_t PIPE_V EVENT_ID0 ReadFile ReadShape CHECK_ACL "
    "DataCopy Init Process qGm ktQ dotWs dotWsGm DOT_WS_OFFSET FLAG_S block_q BLOCK_Q "
    "blockQ g_coreType Fa2Tiling KernCube aclInit ACL_SUCCESS ASCEND_IS_AIV"
).split()
FORBIDDEN = frozenset(keyword.kwlist) | frozenset(
    "fd dict range len print None True False".split()
)
"""Python keywords and names the templates read (shadowing them changes the program)."""


def _twins(base: str) -> list[str]:
    """Spellings that read like ``base`` once turned into C++ or into an SSA name."""
    return [base + "1", base + "_1", "_" + base, base + "_", base.upper(), base + "2"]


@st.composite
def hostile_name(draw: Callable) -> str:  # type: ignore[type-arg]
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.sampled_from(CXX_WORDS))
    if kind == 1:
        return draw(st.sampled_from(RUNTIME_WORDS))
    if kind == 2:
        base = draw(st.sampled_from(("s", "m", "acc", "p", "kv_idx", "x", "q_gm")))
        return draw(st.sampled_from([base] + _twins(base)))
    return draw(st.from_regex(r"\A_?[a-zA-Z][a-zA-Z0-9_]{0,6}\Z"))


def _names(draw: Callable, roles: list[str]) -> dict[str, str]:  # type: ignore[type-arg]
    """A distinct name per role: the role's own name or a hostile one (so the smallest
    example is the plain program)."""
    out: dict[str, str] = {}
    for role in roles:
        name = draw(st.one_of(st.just(role), hostile_name()))
        while name in out.values() or name in FORBIDDEN or not name.isidentifier():
            name = role if role not in out.values() else name + "x"
        out[role] = name
    return out


KERNEL = """\
import fadsl as fd


@fd.kernel(name={K!r}, default_shape=dict({B}=1, {N}=2, {Sq}=40, {Skv}=24, {D}=16))
def kern(
    {q}: fd.In("{B}", "{N}", "{Sq}", "{D}"),
    {k}: fd.In("{B}", "{N}", "{Skv}", "{D}"),
    {v}: fd.In("{B}", "{N}", "{Skv}", "{D}"),
    {o}: fd.Out("{B}", "{N}", "{Sq}", "{D}"),
    {scale}: fd.Scalar = 0.25,
    {bq}: int = 16,
    {bkv}: int = 16,
):
    {B}, {N}, {Sq}, {D} = {q}.shape
    {Skv} = {k}.shape[2]
    for {b}, {h}, {i} in fd.grid({B}, {N}, fd.cdiv({Sq}, {bq})):
        {rows} = fd.ds({i} * {bq}, {bq})
        {qt} = fd.load({q}[{b}, {h}, {rows}, :], pad=0)
        {m} = fd.full(({bq},), -fd.inf, fd.f32)
        {l} = fd.zeros(({bq},), fd.f32)
        {acc} = fd.zeros(({bq}, {D}), fd.f32)
        for {j} in fd.pipelined(fd.cdiv({Skv}, {bkv})):
            {cols} = fd.ds({j} * {bkv}, {bkv})
            {kt} = fd.load({k}[{b}, {h}, {cols}, :], pad=0)
            {vt} = fd.load({v}[{b}, {h}, {cols}, :], pad=0)
            {s} = fd.dot({qt}, {kt}, transpose_b=True) * {scale}
            {s2} = {s} * 2.0
            {idx} = fd.arange({j} * {bkv}, {bkv})
            {s} = fd.where({idx}[None, :] < {Skv}, {s2}, -fd.inf)
            {m_new} = fd.maximum({m}, fd.row_max({s}))
            {p} = fd.exp({s} - {m_new}[:, None])
            {alpha} = fd.exp({m} - {m_new})
            {l} = {l} * {alpha} + fd.row_sum({p})
            {acc} = {acc} * {alpha}[:, None] + fd.dot(fd.cast({p}, {v}.dtype), {vt})
            {m} = {m_new}
        fd.store({o}[{b}, {h}, {rows}, :], fd.cast({acc} / {l}[:, None], {o}.dtype))
"""
ROLES = (
    "B N Sq Skv D q k v o scale bq bkv b h i j rows qt m l acc cols kt vt s s2 idx "
    "m_new p alpha"
).split()

VARIANT = """\
import fadsl as fd

extra = fd.tensor({tname!r}, "N", dtype="fp32")


def bias(score, b, h, q_idx, kv_idx):
    return score + extra[h] * 0.5


kernel = fd.attention(name={K!r}, score_mod=bias)
"""
VARIANT_TAKEN = frozenset("q k v o lse seed offset extra".split())


@dataclass(frozen=True)
class NamedProgram:
    source: str
    kernel: str
    shape: str
    names: int
    """how many names were drawn"""


@st.composite
def named_programs(draw: Callable) -> NamedProgram:  # type: ignore[type-arg]
    kernel = draw(st.one_of(st.just("kern"), hostile_name()))
    if draw(st.booleans()):
        tname = draw(st.one_of(st.just("bias_t"), hostile_name()))
        tname = "bias_t" if tname in VARIANT_TAKEN else tname
        src = VARIANT.format(tname=tname, K=kernel)
        return NamedProgram(src, kernel, "B=1,N=2,Sq=40,Skv=24,D=16", 2)
    names = _names(draw, ROLES)
    if draw(st.booleans()):  # the twin reads like `s` turned into an SSA name
        twin = draw(st.sampled_from(_twins(names["s"])))
        if twin not in names.values() and twin not in FORBIDDEN:
            names["s2"] = twin
    src = KERNEL.format(K=kernel, **names)
    shape = ",".join(
        f"{names[r]}={n}"
        for r, n in zip(("B", "N", "Sq", "Skv", "D"), (1, 2, 40, 24, 16))
    )
    return NamedProgram(src, kernel, shape, len(ROLES) + 1)


def hostile_names_typecheck(ws: object, prog: NamedProgram) -> None:
    """The property (see the module docstring); ``ws`` is a fuzz_properties.Workspace."""
    if not have_gxx():
        STATS["skipped (no g++)"] += 1
        return
    STATS["programs"] += 1
    STATS["names"] += prog.names
    src = Path(ws.write(prog.source, ".py"))  # type: ignore[attr-defined]
    out = src.with_suffix(".out")
    try:
        outcome = compile_kernel(src, out, prog.shape)
        why = problem(outcome)
        if why is not None:
            raise FuzzFailure(f"{why}\n--- the file:\n{prog.source}")
        if outcome.code != 0:
            if "kernel name" in outcome.stderr and repr(prog.kernel) in outcome.stderr:
                STATS["refused (kernel name)"] += 1
                return
            if "fd.tensor(" in outcome.stderr and "has the name of" in outcome.stderr:
                STATS["refused (fd.tensor name)"] += 1  # a parameter of the library
                return
            raise FuzzFailure(
                f"refused:\n{outcome.stderr}\n--- the file:\n{prog.source}"
            )
        STATS["compiled"] += 1
        errors = typecheck(out)
        if errors is not None:
            raise FuzzFailure(
                f"g++ rejects the C++:\n{errors}\n--- the file:\n{prog.source}"
            )
        STATS["type-checked"] += 1
    finally:
        shutil.rmtree(out, ignore_errors=True)
