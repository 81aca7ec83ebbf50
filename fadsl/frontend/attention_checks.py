"""Checks of the index inputs of ``fd.attention`` kernels, before any work is done.

``cu_seqlens_q`` / ``cu_seqlens_kv`` (TND) must start at 0, not decrease and end at the
packed total; a block mask (``kv_num_blocks`` / ``kv_indices`` and the ``full_``
pair) must hold counts and block indices in range, no block twice, and agree with the
mask it was made from: a block with kept positions that neither list names would be
skipped, and a block listed as full would be computed unmasked. Each error names the
input, the element and what was expected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fadsl.errors import Loc, UsageError

_TOTALS = (("cu_seqlens_q", "Sq", "q"), ("cu_seqlens_kv", "Skv", "k and v"))


def check_inputs(
    spec: Any,
    loc: Loc,
    shape: Mapping[str, int],
    consts: Mapping[str, Any],
    inputs: Mapping[str, np.ndarray],
) -> None:
    """Refuse invalid cu_seqlens and block masks among ``inputs`` (those present)."""
    if spec.varlen:
        for name, total, packed in _TOTALS:
            if name in inputs:
                _offsets(name, inputs[name], total, shape[total], packed, loc)
    if spec.paged_kv and "seqlens_kv" in inputs:
        from fadsl.frontend.paged_checks import check_paged

        check_paged(spec.page_size, loc, shape, inputs)
        if spec.varlen:  # chunked prefill: each chunk's keys are in the cache
            from fadsl.frontend.prefill_inputs import check_prefill

            check_prefill(loc, inputs, shape)
    if spec.block_sparse and any(n in inputs for n in _PAIRS):
        _block_mask(spec, loc, shape, consts, inputs)


def _element(name: str, where: Any) -> str:
    return f"{name}[{', '.join(str(int(i)) for i in np.atleast_1d(where))}]"


def _offsets(
    name: str, cu: np.ndarray, total: str, size: int, packed: str, loc: Loc
) -> None:
    c = cu.astype(np.int64)
    problem = None
    if c[0] != 0:
        problem = 0, f"{name}[0] = {c[0]}, but the first sequence starts at 0"
    for i in range(1, len(c)):
        if problem is not None:
            break
        if c[i] < c[i - 1]:
            problem = i, (
                f"{name}[{i}] = {c[i]} is less than {name}[{i - 1}] = {c[i - 1]} "
                "(offsets never decrease)"
            )
        elif c[i] > size:
            problem = i, (
                f"{name}[{i}] = {c[i]} is past the end of the packed {packed} "
                f"({total} = {size})"
            )
    if problem is None and c[-1] != size:
        problem = len(c) - 1, (
            f"{name}[{len(c) - 1}] = {c[-1]}, but the last sequence ends at "
            f"{total} = {size}"
        )
    if problem is None:
        return
    raise UsageError(
        f"input `{name}` is not a list of sequence offsets: {problem[1]}",
        loc,
        notes=(f"{name} = {_shown(c)}",),
        hint=f"{name}[b] is where sequence b starts in the packed {packed}: 0, then "
        f"running sums of the lengths, ending at {total} = {size} (as "
        "FlashAttention's cu_seqlens)",
        code="cu_seqlens_invalid",
    )


def _shown(a: np.ndarray, limit: int = 12) -> str:
    items = [str(int(x)) for x in a.reshape(-1)[:limit]]
    return "[" + ", ".join(items) + (", ..." if a.size > limit else "") + "]"


_PAIRS = {
    "kv_num_blocks": "kv_indices",
    "full_kv_num_blocks": "full_kv_indices",
}
_PAIRS.update({v: k for k, v in list(_PAIRS.items())})


def _block_mask(
    spec: Any,
    loc: Loc,
    shape: Mapping[str, int],
    consts: Mapping[str, Any],
    inputs: Mapping[str, np.ndarray],
) -> None:
    from fadsl.frontend.attention_inputs import derived_inputs

    made = derived_inputs(spec, dict(shape), dict(consts), inputs)
    given = {n: inputs.get(n, made[n]) for n in made}
    nk = made["kv_indices"].shape[-1]
    part = _listed(given, "kv_num_blocks", "kv_indices", nk, loc)
    full = _listed(given, "full_kv_num_blocks", "full_kv_indices", nk, loc)
    kept = _listed(made, "kv_num_blocks", "kv_indices", nk, loc) | _listed(
        made, "full_kv_num_blocks", "full_kv_indices", nk, loc
    )
    truly_full = _listed(made, "full_kv_num_blocks", "full_kv_indices", nk, loc)
    _block_problem(part & full, "is in both kv_indices and full_kv_indices", loc)
    _block_problem(
        kept & ~(part | full),
        "has positions the masks keep, but neither kv_indices nor full_kv_indices "
        "lists it (it would be skipped)",
        loc,
    )
    _block_problem(
        full & ~truly_full,
        "is listed in full_kv_indices, but the masks drop some of its positions "
        "(it would be computed unmasked)",
        loc,
    )


def _listed(
    blocks: Mapping[str, np.ndarray], num_name: str, idx_name: str, nk: int, loc: Loc
) -> np.ndarray:
    """[B, N, nq, nk] bool map of the blocks a (count, indices) pair lists."""
    num = blocks[num_name].astype(np.int64)
    idx = blocks[idx_name].astype(np.int64)
    bad = np.argwhere((num < 0) | (num > nk))
    if bad.size:
        where = tuple(bad[0])
        _refuse(
            num_name,
            f"{_element(num_name, where)} = {num[where]}, but a row has "
            f"cdiv(Skv, block_kv) = {nk} KV blocks: counts are in [0, {nk}]",
            loc,
        )
    used = np.arange(nk) < num[..., None]
    bad = np.argwhere(used & ((idx < 0) | (idx >= nk)))
    if bad.size:
        where = tuple(bad[0])
        _refuse(
            idx_name,
            f"{_element(idx_name, where)} = {idx[where]}, but there are "
            f"cdiv(Skv, block_kv) = {nk} KV blocks: indices are in [0, {nk})",
            loc,
        )
    out = np.zeros(num.shape + (nk,), bool)
    counts = np.zeros(num.shape + (nk,), np.int64)
    rows = np.nonzero(used)
    np.add.at(counts, rows[:-1] + (idx[used],), 1)
    twice = np.argwhere(counts > 1)
    if twice.size:
        where = tuple(twice[0])
        _refuse(
            idx_name,
            f"{_element(idx_name, where[:-1])[:-1]}, :] lists KV block {where[-1]} "
            f"{counts[where]} times (each block at most once)",
            loc,
        )
    out[counts > 0] = True
    return out


def _block_problem(blocks: np.ndarray, what: str, loc: Loc) -> None:
    bad = np.argwhere(blocks)
    if not bad.size:
        return
    b, h, i, j = (int(x) for x in bad[0])
    _refuse(
        "kv_indices" if "both" in what or "neither" in what else "full_kv_indices",
        f"KV block {j} of Q block {i} (batch {b}, head {h}) {what}",
        loc,
        notes=(f"blocks with this problem: {len(bad)}",),
    )


def _refuse(name: str, problem: str, loc: Loc, notes: tuple[str, ...] = ()) -> None:
    raise UsageError(
        f"input `{name}` is not a valid block mask: {problem}",
        loc,
        notes=notes,
        hint="leave the four block-mask files out of --inputs (or block_mask= out) "
        "and fadsl computes them from the masks; a BlockMask must come from "
        "fd.create_block_mask of the kernel's own masks (causal and window included)",
        code="block_mask_unfit",
    )
